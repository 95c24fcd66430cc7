/*
 * volume_bench.c - the in-memory half of bench/volume: RAID6 with 8 data +
 * 2 parity members in memory, 256 KiB chunks, one thread. Measures ISA-L's
 * raw pq_gen (the ceiling), then full-stripe writes, reads with two members
 * lost, and a rebuild through the volume, each as a ratio to the ceiling,
 * and 4 KiB random writes (read-modify-write) in IOPS. Medians of --reps.
 * Members are faulted in before any timed pass (steady state: every timed
 * write lands on memory already written once).
 */
#include <isa-l.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "pony/util.h"
#include "pony/volume.h"

#define NDATA 8
#define NDEV (NDATA + 2)
#define CHUNK (256u << 10)
#define STRIPE ((uint64_t)NDATA * CHUNK)

/*
 * Time is this thread's CPU time, not the wall clock: every measured step
 * (memory members, the parity engine, pq_gen itself) runs on the calling
 * thread, and on a 2-core machine shared with compilers the wall clock
 * mostly measures who else was running. Both sides of each ratio are
 * measured the same way.
 */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Data bytes per second pq_gen turns into P and Q. */
static double bench_pq_gen(double seconds)
{
	void *v[NDEV];
	uint64_t bytes = 0, t0 = now_ns(), t;

	for (int i = 0; i < NDEV; i++) {
		v[i] = util_aligned_alloc(CHUNK);
		memset(v[i], i * 7 + 1, CHUNK);
	}
	do {
		for (int k = 0; k < 16; k++)
			pq_gen(NDEV, CHUNK, v);
		bytes += 16 * STRIPE;
		t = now_ns();
	} while (t - t0 < seconds * 1e9);
	for (int i = 0; i < NDEV; i++)
		free(v[i]);
	return bytes / ((t - t0) / 1e9);
}

/*
 * pq_gen over the stripes of ten member-sized buffers: the same parity
 * work on the same number of bytes in memory as a whole-volume pass, so
 * bounded by memory bandwidth like the volume is (the stripe-sized ceiling
 * above stays in cache). Reported beside the goal's ratio, not instead.
 */
static double bench_pq_gen_member_sized(uint64_t member)
{
	uint8_t *m[NDEV];
	void *v[NDEV];
	uint64_t t0;
	double s;

	for (int i = 0; i < NDEV; i++) {
		m[i] = util_aligned_alloc(member);
		memset(m[i], i * 7 + 1, member);
	}
	t0 = now_ns();
	for (uint64_t off = 0; off < member; off += CHUNK) {
		for (int i = 0; i < NDEV; i++)
			v[i] = m[i] + off;
		pq_gen(NDEV, CHUNK, v);
	}
	s = (now_ns() - t0) / 1e9;
	for (int i = 0; i < NDEV; i++)
		free(m[i]);
	return member * NDATA / s;
}

/*
 * The floor under any write to memory members: storing a stripe's data and
 * parity into ten memory bdevs of this size, already faulted in (the
 * member writes of a full-stripe write, with no parity work).
 */
static double bench_copy_bound(uint64_t member, const uint8_t *buf)
{
	struct bdev *m[NDEV];
	uint64_t t0;
	double s;

	for (int i = 0; i < NDEV; i++) {
		if (bdev_mem_new(member, &m[i]) < 0)
			exit(1);
		for (uint64_t off = 0; off < member; off += CHUNK)
			bdev_pwrite(m[i], buf, CHUNK, off);
	}
	t0 = now_ns();
	for (uint64_t off = 0; off < member; off += CHUNK)
		for (int i = 0; i < NDEV; i++)
			bdev_pwrite(m[i], buf + (i % NDATA) * CHUNK, CHUNK, off);
	s = (now_ns() - t0) / 1e9;
	for (int i = 0; i < NDEV; i++)
		bdev_free(m[i]);
	return member * NDATA / s;
}

static struct volume *make_volume(uint64_t member)
{
	struct bdev *devs[NDEV];
	struct volume_target_spec spec = { .type = VOLUME_RAID6, .layout = 2, .chunk = CHUNK,
					   .ndevs = NDEV, .devs = devs };
	struct volume *v;

	for (int i = 0; i < NDEV; i++)
		if (bdev_mem_new(member, &devs[i]) < 0)
			exit(1);
	if (volume_new(&v) < 0 || volume_add_segment(v, 0, member * NDATA, &spec) < 0)
		exit(1);
	return v;
}

/* Bytes per second of whole-volume passes (write or read) in stripe-sized calls. */
static double pass(struct volume *v, uint8_t *buf, bool write)
{
	uint64_t size = volume_size(v), t0 = now_ns();

	for (uint64_t off = 0; off < size; off += STRIPE) {
		int r = write ? volume_write(v, buf, STRIPE, off) : volume_read(v, buf, STRIPE, off);

		if (r < 0) {
			fprintf(stderr, "volume-bench: I/O failed: %d\n", r);
			exit(1);
		}
	}
	return size / ((now_ns() - t0) / 1e9);
}

static double rmw_iops(struct volume *v, uint8_t *buf, double seconds)
{
	uint64_t n = 0, t0 = now_ns(), t, blocks = volume_size(v) / 4096;

	srand(5);
	do {
		for (int k = 0; k < 64; k++)
			volume_write(v, buf, 4096, ((uint64_t)rand() % blocks) * 4096);
		n += 64;
		t = now_ns();
	} while (t - t0 < seconds * 1e9);
	return n / ((t - t0) / 1e9);
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	int reps = quick ? 3 : 5;
	uint64_t member = getenv("VOLUME_BENCH_MEMBER") ? strtoull(getenv("VOLUME_BENCH_MEMBER"), NULL, 0)
			  : quick ? (16u << 20) : (64u << 20);
	double ceil[8], ceilm[8], wr[8], rd[8], rb[8], iops[8], copy[8];
	uint8_t *buf = util_aligned_alloc(STRIPE);

	memset(buf, 0x5a, STRIPE);
	for (int i = 0; i < reps; i++) {
		struct volume *v = make_volume(member);
		struct bdev *fresh;
		uint64_t t0;

		ceil[i] = bench_pq_gen(quick ? 0.3 : 1.0);
		ceilm[i] = bench_pq_gen_member_sized(member);
		copy[i] = bench_copy_bound(member, buf);
		pass(v, buf, true);     /* fault the members' memory in: not the volume's cost */
		wr[i] = pass(v, buf, true);
		volume_fail_member(v, 0, 1);
		volume_fail_member(v, 0, 6);
		rd[i] = pass(v, buf, false);
		if (bdev_mem_new(member, &fresh) < 0)
			return 1;
		for (uint64_t off = 0; off < member; off += STRIPE)
			bdev_pwrite(fresh, buf, STRIPE, off);
		if (volume_replace_member(v, 0, 1, fresh) < 0)
			return 1;
		t0 = now_ns();
		if (volume_rebuild(v, 0, 0, 0, NULL, NULL) < 0)
			return 1;
		rb[i] = volume_size(v) / ((now_ns() - t0) / 1e9);
		iops[i] = rmw_iops(v, buf, quick ? 0.5 : 2.0);
		volume_free(v);
	}
	double c = median(ceil, reps), w = median(wr, reps), r = median(rd, reps);
	double b = median(rb, reps), cm = median(ceilm, reps);

	printf("RESULT pq_gen_ceiling %.2f GB/s\n", c / 1e9);
	printf("RESULT fullstripe_write %.2f GB/s\n", w / 1e9);
	printf("RESULT degraded_read %.2f GB/s\n", r / 1e9);
	printf("RESULT rebuild %.2f GB/s\n", b / 1e9);
	printf("RESULT rmw_4k_iops %.0f IOPS\n", median(iops, reps));
	printf("RESULT member_copy_bound %.2f GB/s\n", median(copy, reps) / 1e9);
	printf("RESULT pq_gen_member_sized %.2f GB/s\n", cm / 1e9);
	printf("RATIO fullstripe_write_vs_pq_gen_member_sized %.3f\n", w / cm);
	printf("RATIO degraded_read_vs_pq_gen_member_sized %.3f\n", r / cm);
	printf("RATIO fullstripe_write_vs_copy_bound %.3f\n", w / median(copy, reps));
	printf("RATIO fullstripe_write_vs_pq_gen %.3f\n", w / c);
	printf("RATIO degraded_read_vs_pq_gen %.3f\n", r / c);
	printf("RATIO rebuild_vs_pq_gen %.3f\n", b / c);
	free(buf);
	return 0;
}
