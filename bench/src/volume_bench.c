/*
 * volume_bench.c - the in-memory half of bench/volume: RAID6 with 8 data +
 * 2 parity members in memory, 256 KiB chunks, one thread. Measures ISA-L's
 * raw pq_gen (the ceiling), then full-stripe writes, reads with two members
 * lost, and a rebuild through the volume, each as a ratio to the ceiling,
 * and 4 KiB random writes (read-modify-write) in IOPS. Each ratio is the
 * median over repetitions of the figure against its own repetition's
 * ceiling. Memory members lend their storage (bdev_map), so whole stripes
 * take the engine's fused path (src/volume/raid6_fused.c); the same volume
 * on fault-wrapped memory members (which lend nothing) shows the member
 * I/O path beside it. The member copy and read bounds (that path's member
 * I/O alone, with no parity work) show what it could at best reach.
 * Members are faulted in before any timed pass (steady state: every timed
 * write lands on memory already written once).
 */
#include <isa-l.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __x86_64__
#include <immintrin.h>
#endif

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

/*
 * Data bytes per second pq_gen turns into P and Q: one 8 x 256 KiB stripe a
 * call, the call a full-stripe write of the volume makes, on buffers that
 * stay in cache as the write's source buffer does.
 */
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
 * The floors under the member I/O path's passes: the member I/O alone
 * (bdev_pwrite/bdev_pread, no parity), on ten memory bdevs of this size
 * already faulted in. The fused path does not go through them. Writing: a stripe's ten chunks
 * stored (a full-stripe write's member writes, no parity work). Reading:
 * the eight chunks that survive members 1 and 6, read into a stripe buffer
 * (a 2-member-degraded read's member reads, no decoding).
 */
static double bench_member_io(uint64_t member, uint8_t *buf, bool read)
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
		for (int i = 0, j = 0; i < NDEV; i++) {
			if (!read)
				bdev_pwrite(m[i], buf + (i % NDATA) * CHUNK, CHUNK, off);
			else if (i != 1 && i != 6)
				bdev_pread(m[i], buf + j++ * CHUNK, CHUNK, off);
		}
	s = (now_ns() - t0) / 1e9;
	for (int i = 0; i < NDEV; i++)
		bdev_free(m[i]);
	return member * NDATA / s;
}

#ifdef __x86_64__
/* Q's Horner step in GF(2^8), poly 0x11d: q * 2, 64 bytes at a time. */
__attribute__((target("avx512f,avx512bw"))) static inline __m512i probe_mul2(__m512i q)
{
	__mmask64 hi = _mm512_movepi8_mask(q);

	q = _mm512_add_epi8(q, q);
	return _mm512_xor_si512(q, _mm512_maskz_mov_epi8(hi, _mm512_set1_epi8(0x1d)));
}

/*
 * A reference outside pony: P and Q computed inside a 30-line loop that
 * streams the data and parity into ten member buffers. It showed that a
 * fused write could reach the goal before the engine had one; kept beside
 * the engine's fused write (which does the same through the volume, for any
 * layout and length) as a check that the engine loses nothing to it.
 */
__attribute__((target("avx512f,avx512bw"))) static void probe_fused(const uint8_t *src,
								   uint8_t **dst, size_t off)
{
	/* Two lines a step: two independent Horner chains keep the core busy. */
	for (size_t i = 0; i < CHUNK; i += 128) {
		__m512i p0 = _mm512_setzero_si512(), q0 = p0, p1 = p0, q1 = p0;

		for (int d = NDATA - 1; d >= 0; d--) {
			__m512i x0 = _mm512_load_si512(src + d * CHUNK + i);
			__m512i x1 = _mm512_load_si512(src + d * CHUNK + i + 64);

			_mm512_stream_si512((void *)(dst[d] + off + i), x0);
			_mm512_stream_si512((void *)(dst[d] + off + i + 64), x1);
			p0 = _mm512_xor_si512(p0, x0);
			p1 = _mm512_xor_si512(p1, x1);
			q0 = _mm512_xor_si512(probe_mul2(q0), x0);
			q1 = _mm512_xor_si512(probe_mul2(q1), x1);
		}
		_mm512_stream_si512((void *)(dst[NDATA] + off + i), p0);
		_mm512_stream_si512((void *)(dst[NDATA] + off + i + 64), p1);
		_mm512_stream_si512((void *)(dst[NDATA + 1] + off + i), q0);
		_mm512_stream_si512((void *)(dst[NDATA + 1] + off + i + 64), q1);
	}
	_mm_sfence();
}

/* Data bytes per second of probe_fused over member-sized buffers; 0 if the CPU lacks AVX-512BW. */
static double bench_fused_probe(uint64_t member, const uint8_t *buf)
{
	uint8_t *m[NDEV], *pq = util_aligned_alloc(2 * CHUNK);
	void *v[NDEV];
	uint64_t t0;
	double s = 0;

	if (!__builtin_cpu_supports("avx512bw") || !pq) {
		free(pq);
		return 0;
	}
	for (int i = 0; i < NDEV; i++) {
		m[i] = mmap(NULL, member, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m[i] == MAP_FAILED)
			exit(1);
		(void)madvise(m[i], member, MADV_HUGEPAGE);
		memset(m[i], 1, member);
	}
	t0 = now_ns();
	for (uint64_t off = 0; off < member; off += CHUNK)
		probe_fused(buf, m, off);
	s = (now_ns() - t0) / 1e9;
	/* It must compute what pq_gen does, or its figure means nothing. */
	for (int i = 0; i < NDATA; i++)
		v[i] = (void *)(buf + i * CHUNK);
	v[NDATA] = pq;
	v[NDATA + 1] = pq + CHUNK;
	pq_gen(NDEV, CHUNK, v);
	if (memcmp(pq, m[NDATA], CHUNK) || memcmp(pq + CHUNK, m[NDATA + 1], CHUNK) ||
	    memcmp(buf, m[0], CHUNK)) {
		fprintf(stderr, "volume-bench: the fused probe disagrees with pq_gen\n");
		exit(1);
	}
	for (int i = 0; i < NDEV; i++)
		munmap(m[i], member);
	free(pq);
	return member * NDATA / s;
}
#else
static double bench_fused_probe(uint64_t member, const uint8_t *buf)
{
	return 0;
}
#endif

/* wrapped: each member a fault bdev (no faults set) over memory, so no member lends memory. */
static struct volume *make_volume(uint64_t member, bool wrapped)
{
	struct bdev *devs[NDEV];
	struct volume_target_spec spec = { .type = VOLUME_RAID6, .layout = 2, .chunk = CHUNK,
					   .ndevs = NDEV, .devs = devs };
	struct volume *v;

	for (int i = 0; i < NDEV; i++) {
		struct bdev *m;

		if (bdev_mem_new(member, &m) < 0 || (wrapped && bdev_fault_new(m, &m) < 0))
			exit(1);
		devs[i] = m;
	}
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
	double ceil[8], ceilm[8], wr[8], rd[8], rb[8], iops[8], copy[8], rdb[8];
	double wr_r[8], rd_r[8], rb_r[8], wr_cm[8], rd_cm[8], wr_copy[8], rd_rdb[8], fz[8], fz_r[8];
	double wio_r[8], rio_r[8];
	uint8_t *buf = util_aligned_alloc(STRIPE);

	for (uint64_t i = 0; i < STRIPE; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);     /* not one byte: parity is not trivial */
	for (int i = 0; i < reps; i++) {
		struct volume *v = make_volume(member, false), *vio = make_volume(member, true);
		struct bdev *fresh;
		uint64_t t0;

		ceil[i] = bench_pq_gen(quick ? 0.3 : 1.0);
		ceilm[i] = bench_pq_gen_member_sized(member);
		copy[i] = bench_member_io(member, buf, false);
		rdb[i] = bench_member_io(member, buf, true);
		fz[i] = bench_fused_probe(member, buf);
		pass(vio, buf, true);
		wio_r[i] = pass(vio, buf, true) / ceil[i];
		volume_fail_member(vio, 0, 1);
		volume_fail_member(vio, 0, 6);
		rio_r[i] = pass(vio, buf, false) / ceil[i];
		volume_free(vio);
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
		/* Each ratio against its own repetition's ceiling; medians below. */
		wr_r[i] = wr[i] / ceil[i];
		rd_r[i] = rd[i] / ceil[i];
		rb_r[i] = rb[i] / ceil[i];
		wr_cm[i] = wr[i] / ceilm[i];
		rd_cm[i] = rd[i] / ceilm[i];
		wr_copy[i] = wr[i] / copy[i];
		rd_rdb[i] = rd[i] / rdb[i];
		fz_r[i] = fz[i] / ceil[i];
	}
	double c = median(ceil, reps), w = median(wr, reps), r = median(rd, reps);
	double b = median(rb, reps), cm = median(ceilm, reps);

	printf("RESULT pq_gen_ceiling %.2f GB/s\n", c / 1e9);
	printf("RESULT fullstripe_write %.2f GB/s\n", w / 1e9);
	printf("RESULT degraded_read %.2f GB/s\n", r / 1e9);
	printf("RESULT rebuild %.2f GB/s\n", b / 1e9);
	printf("RESULT rmw_4k_iops %.0f IOPS\n", median(iops, reps));
	printf("RESULT member_copy_bound %.2f GB/s\n", median(copy, reps) / 1e9);
	printf("RESULT member_read_bound %.2f GB/s\n", median(rdb, reps) / 1e9);
	printf("RESULT pq_gen_member_sized %.2f GB/s\n", cm / 1e9);
	printf("RATIO member_copy_bound_vs_pq_gen %.3f\n", median(copy, reps) / c);
	printf("RATIO member_read_bound_vs_pq_gen %.3f\n", median(rdb, reps) / c);
	if (median(fz, reps) > 0) {
		printf("RESULT fused_store_probe %.2f GB/s\n", median(fz, reps) / 1e9);
		printf("RATIO fused_store_probe_vs_pq_gen %.3f\n", median(fz_r, reps));
	}
	printf("RATIO fullstripe_write_member_io_vs_pq_gen %.3f\n", median(wio_r, reps));
	printf("RATIO degraded_read_member_io_vs_pq_gen %.3f\n", median(rio_r, reps));
	printf("RATIO fullstripe_write_vs_pq_gen_member_sized %.3f\n", median(wr_cm, reps));
	printf("RATIO degraded_read_vs_pq_gen_member_sized %.3f\n", median(rd_cm, reps));
	printf("RATIO fullstripe_write_vs_copy_bound %.3f\n", median(wr_copy, reps));
	printf("RATIO degraded_read_vs_read_bound %.3f\n", median(rd_rdb, reps));
	printf("RATIO fullstripe_write_vs_pq_gen %.3f\n", median(wr_r, reps));
	printf("RATIO degraded_read_vs_pq_gen %.3f\n", median(rd_r, reps));
	printf("RATIO rebuild_vs_pq_gen %.3f\n", median(rb_r, reps));
	free(buf);
	return 0;
}
