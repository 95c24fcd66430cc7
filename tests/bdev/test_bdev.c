/*
 * test_bdev.c - the bdev backends do what they promise: memory and files
 * round-trip data and refuse ranges past the end; fault bdevs fail exactly
 * where and when asked; a record log replays to the disk as it was after
 * any prefix of its writes; direct writes to a file pass the host's page
 * cache by and stay coherent with buffered I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include <pthread.h>

#include "pony/acall.h"
#include "pony/bdev.h"

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 31 + seed);
}

static void test_mem_bdev_round_trips_and_checks_ranges(void **state)
{
	struct bdev *m;
	uint8_t w[4096], r[4096];

	assert_int_equal(bdev_mem_new(1 << 20, &m), 0);
	fill(w, sizeof(w), 1);
	assert_int_equal(bdev_pwrite(m, w, sizeof(w), 8192), 0);
	assert_int_equal(bdev_pread(m, r, sizeof(r), 8192), 0);
	assert_memory_equal(w, r, sizeof(w));
	assert_int_equal(bdev_pread(m, r, 4096, (1 << 20) - 2048), -EINVAL);
	assert_int_equal(bdev_pwrite(m, w, 1, UINT64_MAX), -EINVAL);
	assert_int_equal(bdev_discard(m, 8192, 4096), 0);
	assert_int_equal(bdev_pread(m, r, 16, 8192), 0);
	assert_int_equal(r[0] | r[15], 0);
	assert_int_equal(bdev_size(m), 1 << 20);
	bdev_free(m);
}

/*
 * A memory bdev lends its storage: stores through the pointer are what later
 * reads return, and reads see earlier writes. Backends that must see each
 * I/O (fault, record) and files do not lend, so their I/O keeps its meaning.
 */
static void test_only_memory_bdevs_lend_their_storage(void **state)
{
	struct bdev *m, *f, *rec, *log, *m2;
	uint8_t w[4096], r[4096];
	void *p;
	char path[] = "/tmp/pony-bdev-map-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(bdev_mem_new(3 << 20, &m), 0);         /* an mmap'ed one */
	fill(w, sizeof(w), 5);
	assert_int_equal(bdev_pwrite(m, w, sizeof(w), 65536), 0);
	assert_int_equal(bdev_map(m, 65536, sizeof(w), &p), 0);
	assert_memory_equal(p, w, sizeof(w));
	memset(p, 0xa5, 512);
	assert_int_equal(bdev_pread(m, r, 512, 65536), 0);
	assert_int_equal(r[0] & r[511], 0xa5);
	assert_int_equal(bdev_map(m, (3 << 20) - 512, 1024, &p), -EINVAL);
	assert_int_equal(bdev_mem_new(4096, &m2), 0);            /* a calloc'ed one */
	assert_int_equal(bdev_map(m2, 0, 4096, &p), 0);
	bdev_free(m2);

	assert_int_equal(bdev_fault_new(m, &f), 0);
	assert_int_equal(bdev_map(f, 0, 512, &p), -EOPNOTSUPP);
	bdev_free(f);                                            /* frees m */
	assert_int_equal(bdev_mem_new(1 << 16, &m), 0);
	assert_int_equal(bdev_mem_new(1 << 16, &log), 0);
	assert_int_equal(bdev_record_new(m, log, &rec), 0);
	assert_int_equal(bdev_map(rec, 0, 512, &p), -EOPNOTSUPP);
	bdev_free(rec);
	assert_int_equal(ftruncate(fd, 1 << 16), 0);
	assert_int_equal(bdev_file_open(path, O_RDWR, &f), 0);
	assert_int_equal(bdev_map(f, 0, 512, &p), -EOPNOTSUPP);
	bdev_free(f);
	close(fd);
	unlink(path);
}

static void test_file_bdev_round_trips_through_the_file(void **state)
{
	char path[] = "/tmp/pony-bdev-XXXXXX";
	int fd = mkstemp(path);
	struct bdev *f;
	uint8_t w[8192], r[8192];
	struct bdev_io io = { .op = BDEV_READ, .buf = r, .len = 512, .off = 4096 };

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	assert_int_equal(bdev_file_open(path, O_RDWR, &f), 0);
	assert_int_equal(bdev_size(f), 1 << 20);
	fill(w, sizeof(w), 7);
	assert_int_equal(bdev_pwrite(f, w, sizeof(w), 4096), 0);
	assert_int_equal(bdev_flush(f), 0);
	assert_int_equal(pread(fd, r, sizeof(r), 4096), (ssize_t)sizeof(r));
	assert_memory_equal(w, r, sizeof(w));
	memset(r, 0, sizeof(r));
	bdev_submit(f, &io);
	assert_int_equal(io.result, 0);
	assert_memory_equal(w, r, 512);
	bdev_free(f);
	assert_int_equal(bdev_file_open("/nonexistent/pony", O_RDONLY, &f), -ENOENT);
	close(fd);
	unlink(path);
}

/* Pages of fd's [off, off+len) in the host's page cache. */
static size_t cached_pages(int fd, size_t off, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char vec[1024];
	size_t n = 0;
	void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);

	assert_true(m != MAP_FAILED);
	assert_true(len / (size_t)pg <= sizeof(vec));
	assert_int_equal(mincore(m, len, vec), 0);
	for (size_t i = 0; i < len / (size_t)pg; i++)
		n += vec[i] & 1;
	munmap(m, len);
	return n;
}

static void test_direct_writes_pass_the_page_cache_by_coherently(void **state)
{
	char path[] = "/var/tmp/pony-bdev-direct-XXXXXX";
	int fd = mkstemp(path), probe;
	const size_t mib = 1 << 20;
	uint8_t *w = aligned_alloc(BDEV_DIRECT_ALIGN, mib), *r = aligned_alloc(BDEV_DIRECT_ALIGN, mib);
	struct bdev *f, *s, *mem;

	assert_true(fd >= 0 && w && r);
	assert_int_equal(ftruncate(fd, 4 * mib), 0);
	probe = open(path, O_RDWR | O_DIRECT);
	if (probe < 0) {        /* /var/tmp on a file system without O_DIRECT */
		close(fd);
		unlink(path);
		free(w);
		free(r);
		skip();
	}
	close(probe);
	assert_int_equal(bdev_file_open(path, O_RDWR, &f), 0);
	assert_int_equal(bdev_slice_new(f, mib, 2 * mib, true, NULL, &s), 0);
	/* Through a slice, aligned: on the file, none of it in the page cache. */
	fill(w, mib, 3);
	assert_int_equal(bdev_pwrite_direct(s, w, mib, 0), 0);
	assert_int_equal(cached_pages(fd, mib, mib), 0);
	assert_int_equal(pread(fd, r, mib, (off_t)mib), (ssize_t)mib);
	assert_memory_equal(w, r, mib);
	/* A direct write over a buffered one still dirty in the cache wins. */
	fill(w, mib, 4);
	assert_int_equal(bdev_pwrite(s, w, mib, mib), 0);
	fill(w, mib, 6);
	assert_int_equal(bdev_pwrite_direct(s, w, mib, mib), 0);
	assert_int_equal(fdatasync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	assert_int_equal(pread(fd, r, mib, (off_t)(2 * mib)), (ssize_t)mib);
	assert_memory_equal(w, r, mib);
	/* Unaligned buffer or range: written all the same, through the cache. */
	fill(w, mib, 5);
	assert_int_equal(bdev_pwrite_direct(s, w + 512, 8192, 4096), 0);
	assert_int_equal(bdev_pread(s, r + 512, 8192, 4096), 0);
	assert_memory_equal(w + 512, r + 512, 8192);
	assert_int_equal(bdev_pwrite_direct(s, w, 4096, 2 * mib - 4096), 0);
	assert_int_equal(bdev_pwrite_direct(s, w, 4096, 2 * mib - 2048), -EINVAL);
	bdev_free(s);
	/* A backend without the op takes it as a plain write. */
	assert_int_equal(bdev_mem_new(mib, &mem), 0);
	assert_int_equal(bdev_pwrite_direct(mem, w, 8192, 4096), 0);
	assert_int_equal(bdev_pread(mem, r, 8192, 4096), 0);
	assert_memory_equal(w, r, 8192);
	bdev_free(mem);
	close(fd);
	unlink(path);
	free(w);
	free(r);
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int pending;
};

static void io_done(struct bdev_io *io)
{
	struct waiter *w = io->data;

	pthread_mutex_lock(&w->lock);
	if (--w->pending == 0)
		pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void test_file_bdev_through_acall_completes_sync_and_async_io(void **state)
{
	char path[] = "/tmp/pony-bdev-ring-XXXXXX";
	int fd = mkstemp(path);
	struct acall_ring *ring;
	struct bdev *f;
	static uint8_t w[16][4096], r[16][4096];
	struct bdev_io ios[16];
	struct waiter wt = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 16 };

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	assert_int_equal(acall_ring_new(NULL, &ring), 0);
	assert_int_equal(bdev_file_open_ring(path, O_RDWR, ring, &f), 0);
	for (int i = 0; i < 16; i++) {
		fill(w[i], sizeof(w[i]), (unsigned)i);
		ios[i] = (struct bdev_io){ .op = BDEV_WRITE, .buf = w[i], .len = 4096,
					   .off = (uint64_t)i * 8192, .done = io_done, .data = &wt };
	}
	for (int i = 0; i < 16; i++)
		bdev_submit(f, &ios[i]);
	pthread_mutex_lock(&wt.lock);
	while (wt.pending)
		pthread_cond_wait(&wt.cond, &wt.lock);
	pthread_mutex_unlock(&wt.lock);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(ios[i].result, 0);
		assert_int_equal(bdev_pread(f, r[i], 4096, (uint64_t)i * 8192), 0);
		assert_memory_equal(w[i], r[i], 4096);
	}
	assert_int_equal(bdev_flush(f), 0);
	ios[0] = (struct bdev_io){ .op = BDEV_READ, .buf = r[0], .len = 4096, .off = 1 << 20 };
	bdev_submit(f, &ios[0]);                /* past the end: refused before the ring */
	assert_int_equal(ios[0].result, -EINVAL);
	bdev_free(f);
	acall_ring_free(ring);
	close(fd);
	unlink(path);
}

static void test_fault_bdev_fails_where_and_when_asked(void **state)
{
	struct bdev *m, *f;
	uint8_t b[4096] = { 0 };

	assert_int_equal(bdev_mem_new(1 << 20, &m), 0);
	assert_int_equal(bdev_fault_new(m, &f), 0);
	assert_int_equal(bdev_fault_add_bad(f, 10240, 512, BDEV_FAULT_READ), 0);
	assert_int_equal(bdev_pread(f, b, 512, 9216), 0);
	assert_int_equal(bdev_pread(f, b, 4096, 8192), -EIO);     /* overlaps */
	assert_int_equal(bdev_pwrite(f, b, 4096, 8192), 0);       /* reads only */
	bdev_fault_fail_after(f, 2);
	assert_int_equal(bdev_pread(f, b, 512, 0), 0);
	assert_int_equal(bdev_pread(f, b, 512, 0), 0);
	assert_int_equal(bdev_pread(f, b, 512, 0), -EIO);
	bdev_fault_clear(f);
	assert_int_equal(bdev_pread(f, b, 4096, 8192), 0);
	bdev_fault_vanish(f);
	assert_int_equal(bdev_pwrite(f, b, 512, 0), -ENODEV);
	assert_int_equal(bdev_flush(f), -ENODEV);
	bdev_fault_clear(f);
	assert_true(bdev_fault_io_count(f) >= 9);
	bdev_free(f);
}

static void test_torn_write_keeps_a_prefix_and_cuts_power(void **state)
{
	struct bdev *m, *f;
	uint8_t w[4096], r[4096];

	assert_int_equal(bdev_mem_new(1 << 16, &m), 0);
	assert_int_equal(bdev_fault_new(m, &f), 0);
	fill(w, sizeof(w), 3);
	bdev_fault_tear_next_write(f, 1500);    /* rounds down to 1024 */
	assert_int_equal(bdev_pwrite(f, w, sizeof(w), 0), -EIO);
	assert_int_equal(bdev_pread(f, r, 512, 0), -ENODEV);
	assert_int_equal(bdev_pread(m, r, sizeof(r), 0), 0);
	assert_memory_equal(r, w, 1024);
	assert_int_equal(r[1024] | r[4095], 0);
	bdev_free(f);
}

/* A slice is its range of the parent: offsets shifted, its own bounds
 * checked, memory lent, redundancy asked of the parent (a memory bdev has
 * none: a plain checked read, no repair); with own, the parent goes with it. */
static void test_slice_is_its_range_of_the_parent(void **state)
{
	uint8_t in[4096], out[4096];
	struct bdev *mem, *s, *inner;
	void *p;

	assert_int_equal(bdev_mem_new(1 << 20, &mem), 0);
	assert_int_equal(bdev_slice_new(mem, 1 << 20, 512, false, NULL, &s), -EINVAL);
	assert_int_equal(bdev_slice_new(mem, 4096, 1 << 20, false, NULL, &s), -EINVAL);
	assert_int_equal(bdev_slice_new(mem, 100, 4096, false, NULL, &s), -EINVAL);
	assert_int_equal(bdev_slice_new(mem, 65536, 65536, true, "part", &s), 0);
	assert_int_equal(bdev_size(s), 65536);
	assert_string_equal(s->name, "part");
	memset(in, 0xa5, sizeof(in));
	assert_int_equal(bdev_pwrite(s, in, sizeof(in), 8192), 0);
	assert_int_equal(bdev_pread(mem, out, sizeof(out), 65536 + 8192), 0);
	assert_memory_equal(in, out, sizeof(in));
	assert_int_equal(bdev_pwrite(s, in, sizeof(in), 65536 - 2048), -EINVAL);
	assert_int_equal(bdev_map(s, 8192, 4096, &p), 0);
	assert_memory_equal(p, in, sizeof(in));
	/* A slice of a slice adds both offsets. */
	assert_int_equal(bdev_slice_new(s, 4096, 8192, false, NULL, &inner), 0);
	memset(out, 0, sizeof(out));
	assert_int_equal(bdev_read_checked(inner, out, sizeof(out), 4096), 0);
	assert_memory_equal(in, out, sizeof(in));
	assert_int_equal(bdev_repair(inner, out, sizeof(out), 4096, 0), -EOPNOTSUPP);
	bdev_free(inner);
	bdev_free(s);           /* and mem with it: a leak shows under ASan */
}

static void test_record_log_replays_every_prefix(void **state)
{
	struct bdev *disk, *log, *rec, *target;
	uint8_t w[3][2048], r[8192], expect[8192] = { 0 };
	uint64_t n;

	assert_int_equal(bdev_mem_new(8192, &disk), 0);
	assert_int_equal(bdev_mem_new(1 << 16, &log), 0);
	assert_int_equal(bdev_record_new(disk, log, &rec), 0);
	for (int i = 0; i < 3; i++) {
		fill(w[i], sizeof(w[i]), (unsigned)i + 10);
		assert_int_equal(bdev_pwrite(rec, w[i], sizeof(w[i]), (uint64_t)i * 1024), 0);
		if (i == 1) {
			assert_int_equal(bdev_flush(rec), 0);
			assert_int_equal(bdev_record_mark(rec, "middle"), 0);
		}
	}
	assert_int_equal(bdev_pwrite(rec, w[0], 100, 0), -EINVAL);  /* not whole sectors */
	assert_int_equal(bdev_record_count(log, &n), 0);
	assert_int_equal(n, 5);         /* write, write, flush, mark, write */
	for (uint64_t k = 0; k <= n; k++) {
		assert_int_equal(bdev_mem_new(8192, &target), 0);
		assert_int_equal(bdev_record_replay(log, target, k), 0);
		assert_int_equal(bdev_pread(target, r, sizeof(r), 0), 0);
		memset(expect, 0, sizeof(expect));
		for (int i = 0; i < 3; i++)
			if (k > (uint64_t)(i < 2 ? i : 4))
				memcpy(expect + i * 1024, w[i], sizeof(w[i]));
		assert_memory_equal(r, expect, sizeof(r));
		bdev_free(target);
	}
	assert_int_equal(bdev_pread(disk, r, sizeof(r), 0), 0);
	assert_memory_equal(r, expect, sizeof(r));
	assert_int_equal(bdev_record_count(disk, &n), -EBADMSG);
	bdev_free(rec);
}

static void note_done(struct bdev_io *io)
{
	*(int *)io->data += 1;
}

/*
 * A read the page cache holds whole completes in the submitter's thread,
 * before bdev_submit() returns: through the ring's reaper each piece of a
 * RAID batch read cost a wake-up and a context switch (file.c).
 */
static void test_file_bdev_cached_read_completes_in_the_submitter(void **state)
{
	char path[] = "/tmp/pony-bdev-cached-XXXXXX";
	int fd = mkstemp(path), calls = 0;
	struct acall_ring *ring;
	struct bdev *f;
	static uint8_t w[65536], r[65536];
	struct bdev_io io = { .op = BDEV_READ, .buf = r, .len = sizeof(r), .off = 4096,
			      .done = note_done, .data = &calls };

	assert_true(fd >= 0);
	fill(w, sizeof(w), 7);
	assert_int_equal(pwrite(fd, w, sizeof(w), 4096), (ssize_t)sizeof(w));    /* now cached */
	assert_int_equal(acall_ring_new(NULL, &ring), 0);
	assert_int_equal(bdev_file_open_ring(path, O_RDWR, ring, &f), 0);
	io.result = -1;
	bdev_submit(f, &io);
	assert_int_equal(calls, 1);             /* done already, not later from the reaper */
	assert_int_equal(io.result, 0);
	assert_memory_equal(w, r, sizeof(r));
	bdev_free(f);
	acall_ring_free(ring);
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_bdev_round_trips_and_checks_ranges),
		cmocka_unit_test(test_only_memory_bdevs_lend_their_storage),
		cmocka_unit_test(test_file_bdev_round_trips_through_the_file),
		cmocka_unit_test(test_file_bdev_through_acall_completes_sync_and_async_io),
		cmocka_unit_test(test_file_bdev_cached_read_completes_in_the_submitter),
		cmocka_unit_test(test_fault_bdev_fails_where_and_when_asked),
		cmocka_unit_test(test_torn_write_keeps_a_prefix_and_cuts_power),
		cmocka_unit_test(test_record_log_replays_every_prefix),
		cmocka_unit_test(test_slice_is_its_range_of_the_parent),
		cmocka_unit_test(test_direct_writes_pass_the_page_cache_by_coherently),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
