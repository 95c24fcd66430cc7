/*
 * test_stress.c - 1,000,000 mixed ops from two submitting threads on one
 * ring, every result checked: one thread submits batches of 64 and reaps
 * ring-wide, the other runs ops one at a time as a FUSE thread does. Data
 * read back must be what was written. The full count runs under ASan too
 * (about 10 s a path there); PONY_STRESS_OPS overrides it.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

#define BLOCK 512
#define BLOCKS 1024     /* per thread */
#define BATCH 64

struct stress {
	struct acall_ring *ring;
	int fd;
	long ops;               /* per thread */
	atomic_long errors;
};

static void fill(uint32_t *buf, unsigned thread, unsigned block, unsigned gen)
{
	uint32_t x = thread * 2654435761u ^ block * 40503u ^ gen * 69069u;

	for (unsigned i = 0; i < BLOCK / 4; i++) {
		x = x * 1664525u + 1013904223u;
		buf[i] = x;
	}
}

static bool matches(const uint32_t *buf, unsigned thread, unsigned block, unsigned gen)
{
	uint32_t want[BLOCK / 4];

	fill(want, thread, block, gen);
	return !memcmp(buf, want, BLOCK);
}

static int64_t echo(void *arg)
{
	return (int64_t)(intptr_t)arg;
}

/* What an op of the batch thread must complete with. */
struct check {
	unsigned kind, block, gen;
	int64_t want;
	uint32_t buf[BLOCK / 4];
	struct statx stx;
};

static void check_done(struct stress *s, struct acall_op *op)
{
	struct check *c = acall_op_data(op);
	bool ok = acall_op_result(op) == c->want;

	if (ok && c->kind == 1)
		ok = matches(c->buf, 0, c->block, c->gen);
	if (ok && c->kind == 2)
		ok = c->stx.stx_size >= (uint64_t)BLOCKS * BLOCK;
	if (!ok)
		atomic_fetch_add(&s->errors, 1);
}

/* Batch k: 16 writes (gen k), 16 reads of batch k-1's blocks, 16 statx,
 * 8 calls, 8 nops. */
static void *batch_thread(void *arg)
{
	struct stress *s = arg;
	static struct check checks[BATCH];
	struct acall_op *done[BATCH];

	for (long k = 0; k * BATCH < s->ops; k++) {
		for (unsigned j = 0; j < BATCH; j++) {
			struct acall_op *op = acall_get_op(s->ring);
			struct check *c = &checks[j];

			c->kind = j < 16 ? 0 : j < 32 ? (k ? 1 : 3) : j < 48 ? 2 : j < 56 ? 4 : 3;
			c->block = (unsigned)((k - (c->kind == 1)) * 16 + j % 16) % BLOCKS;
			c->gen = (unsigned)(k - (c->kind == 1));
			c->want = c->kind <= 1 ? BLOCK : c->kind == 4 ? k * BATCH + j : 0;
			switch (c->kind) {
			case 0:
				fill(c->buf, 0, c->block, c->gen);
				acall_prep_write(op, s->fd, c->buf, BLOCK, (uint64_t)c->block * BLOCK);
				break;
			case 1:
				memset(c->buf, 0, BLOCK);
				acall_prep_read(op, s->fd, c->buf, BLOCK, (uint64_t)c->block * BLOCK);
				break;
			case 2:
				acall_prep_statx(op, s->fd, "", AT_EMPTY_PATH, STATX_SIZE, &c->stx);
				break;
			case 3:
				acall_prep_nop(op);
				break;
			case 4:
				acall_prep_call(op, echo, (void *)(intptr_t)c->want);
				break;
			}
			acall_op_set_data(op, c);
		}
		if (acall_submit(s->ring) != BATCH)
			atomic_fetch_add(&s->errors, 1);
		for (unsigned got = 0; got < BATCH;) {
			int n = acall_wait_batch(s->ring, done, BATCH, 1);

			if (n < 0) {
				atomic_fetch_add(&s->errors, 1);
				return NULL;
			}
			for (int i = 0; i < n; i++) {
				check_done(s, done[i]);
				acall_op_done(s->ring, done[i]);
			}
			got += (unsigned)n;
		}
	}
	return NULL;
}

/* One op at a time: write a block, read it back, statx, call. */
static void *sync_thread(void *arg)
{
	struct stress *s = arg;
	uint32_t buf[BLOCK / 4], back[BLOCK / 4];
	struct statx stx;

	for (long i = 0; i < s->ops; i += 4) {
		unsigned block = BLOCKS + (unsigned)(i / 4) % BLOCKS, gen = (unsigned)(i / 4);
		uint64_t off = (uint64_t)block * BLOCK;
		struct acall_op *op = acall_get_op(s->ring);
		bool ok;

		fill(buf, 1, block, gen);
		acall_prep_write(op, s->fd, buf, BLOCK, off);
		ok = acall_run(s->ring, op) == BLOCK;
		op = acall_get_op(s->ring);
		acall_prep_read(op, s->fd, back, BLOCK, off);
		ok = acall_run(s->ring, op) == BLOCK && ok && matches(back, 1, block, gen);
		op = acall_get_op(s->ring);
		acall_prep_statx(op, s->fd, "", AT_EMPTY_PATH, STATX_SIZE, &stx);
		ok = acall_run(s->ring, op) == 0 && ok;
		op = acall_get_op(s->ring);
		acall_prep_call(op, echo, (void *)(intptr_t)i);
		ok = acall_run(s->ring, op) == i && ok;
		if (!ok)
			atomic_fetch_add(&s->errors, 1);
	}
	return NULL;
}

static void test_million_mixed_ops_from_two_threads_all_check_out(void **state)
{
	struct fixture *f = *state;
	const char *env = getenv("PONY_STRESS_OPS");
	long total = env ? atol(env) : 1000000;
	struct stress s = { .ring = f->ring, .ops = total / 2 };
	pthread_t a, b;
	uint64_t t0 = 0;

	s.fd = openat(f->dfd, "stress", O_RDWR | O_CREAT, 0600);
	assert_true(s.fd >= 0);
	assert_int_equal(ftruncate(s.fd, 2 * BLOCKS * BLOCK), 0);
	t0 = (uint64_t)time(NULL);
	assert_int_equal(pthread_create(&a, NULL, batch_thread, &s), 0);
	assert_int_equal(pthread_create(&b, NULL, sync_thread, &s), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("%ld ops (%s path) in %llus, %ld bad\n", total,
	       f->path == ACALL_PATH_WORKERS ? "workers" : "auto", (unsigned long long)(time(NULL) - t0),
	       atomic_load(&s.errors));
	assert_int_equal(atomic_load(&s.errors), 0);
	close(s.fd);
}

/* Eight threads calling the ring synchronously at once, as FUSE threads and
 * the block layer do: reads and writes (io_uring on the auto path, so the
 * threads take turns leading its CQ), statx (run on the caller's thread)
 * and calls (workers). */
struct sync_arg {
	struct stress *s;
	unsigned id;
};

static void *many_sync_thread(void *arg)
{
	struct sync_arg *a = arg;
	struct stress *s = a->s;
	uint32_t buf[BLOCK / 4], back[BLOCK / 4];
	struct statx stx;

	for (unsigned i = 0; i < 5000; i++) {
		unsigned block = a->id * 64 + i % 64;
		struct acall_op *op = acall_get_op(s->ring);
		bool ok;

		fill(buf, a->id, block, i);
		acall_prep_write(op, s->fd, buf, BLOCK, (uint64_t)block * BLOCK);
		ok = acall_run(s->ring, op) == BLOCK;
		op = acall_get_op(s->ring);
		acall_prep_read(op, s->fd, back, BLOCK, (uint64_t)block * BLOCK);
		ok = acall_run(s->ring, op) == BLOCK && ok && matches(back, a->id, block, i);
		op = acall_get_op(s->ring);
		acall_prep_statx(op, s->fd, "", AT_EMPTY_PATH, STATX_SIZE, &stx);
		ok = acall_run(s->ring, op) == 0 && ok;
		if (i % 16 == 0) {
			op = acall_get_op(s->ring);
			acall_prep_call(op, echo, (void *)(intptr_t)i);
			ok = acall_run(s->ring, op) == i && ok;
		}
		if (!ok)
			atomic_fetch_add(&s->errors, 1);
	}
	return NULL;
}

static void test_eight_synchronous_threads_share_one_ring(void **state)
{
	struct fixture *f = *state;
	struct stress s = { .ring = f->ring };
	struct sync_arg args[8];
	pthread_t t[8];
	time_t t0 = time(NULL);

	s.fd = openat(f->dfd, "sync8", O_RDWR | O_CREAT, 0600);
	assert_true(s.fd >= 0);
	for (unsigned i = 0; i < 8; i++) {
		args[i] = (struct sync_arg){ .s = &s, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, many_sync_thread, &args[i]), 0);
	}
	for (unsigned i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&s.errors), 0);
	/* 125,000 calls: a lost wake-up (each costs a 20 ms timeout) shows. */
	assert_true(time(NULL) - t0 < 60);
	close(s.fd);
}

static int setup_auto(void **state) { return fixture_setup(state, ACALL_PATH_AUTO); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_million_mixed_ops_from_two_threads_all_check_out,
						setup_auto, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_million_mixed_ops_from_two_threads_all_check_out,
						setup_workers, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_eight_synchronous_threads_share_one_ring,
						setup_auto, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_eight_synchronous_threads_share_one_ring,
						setup_uring, fixture_teardown),
	};

	require_uring_or_skip();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
