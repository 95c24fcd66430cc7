/*
 * layout_race.c - direct readers against a file that keeps changing: one
 * thread overwrites FILE in place (copy-on-write frees the old blocks),
 * truncates and regrows it, a second churns other files so freed blocks
 * are reused at once, and the main thread reads FILE through
 * libpony-layout over and over. Every 4 KiB block of FILE holds its own
 * index, the generation that wrote it and a fill derived from both, so a
 * block read from a place reused for other data (another file, another
 * block, a later truncation) cannot pass: each block read must be FILE's
 * block at that index, of a generation the file could hold at the
 * layout's moment: not older than the last one fsynced before the layout
 * was got (a stale block is as wrong as a foreign one), not newer than
 * one started by the end of the read; zeros only where a truncation may
 * have cut the file meanwhile. Usage: layout_race MNT SECONDS; exits 0
 * after SECONDS and at least 20 reads (a slow machine, or a sanitizer
 * build, races on for up to four times SECONDS to make them) with every
 * read right, 1 at the first wrong block or with fewer reads.
 * `layout_race MNT SECONDS READY` also makes the file READY once three
 * reads are done: a script fails a member then, mid-race, however long
 * the start took. It says how many reads overlapped a member of the
 * volume being failed or rebuilt (PONYFUSE_IOC_LAYOUT_MEMBER's state,
 * asked before and after each read) and how many blocks the reads rebuilt
 * from redundancy. `layout_race MNT SECONDS READY MET` also makes MET once
 * three reads met such a member and rebuilt blocks, and races on (up to
 * the cap) until they have: layout_race_rebuild.sh holds the spare's
 * rebuild back until then, so its race always meets the rebuild.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "pony/fuse.h"
#include "pony/layout.h"

#define BLK 4096u
#define NBLK 256u                       /* FILE: 1 MiB */
#define MIN_READS 20u                   /* reads a race must make to count */
#define MET_READS 3u                    /* reads that met a failed or rebuilt member, for MET */

static const char *mnt;
static atomic_uint_fast64_t gen_done = 1;       /* every block of this generation is fsynced */
static atomic_uint_fast64_t gen_started = 1;    /* the writer may be writing this one */
static atomic_bool stop;

static void block_fill(uint8_t *b, uint64_t gen, uint64_t idx)
{
	uint64_t x = gen * 0x9e3779b97f4a7c15ull ^ idx * 0xc2b2ae3d27d4eb4full;

	memcpy(b, &gen, 8);
	memcpy(b + 8, &idx, 8);
	for (unsigned i = 16; i < BLK; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b + i, &x, 8);
	}
}

/* Whether a generation in (min_gen, max_gen] cut the file short first (see writer()). */
static bool cut_between(uint64_t min_gen, uint64_t max_gen)
{
	return max_gen / 4 > min_gen / 4;
}

/*
 * Whether b is FILE's block idx of a generation in [min_gen, max_gen], or
 * zeros where a truncation in that window may have cut the file: while it
 * regrows after a cut, the daemon, whose view a layout is, has a hole
 * there. No block of another file or index is ever all zeros.
 */
static bool block_ok(const uint8_t *b, uint64_t idx, uint64_t min_gen, uint64_t max_gen,
		     uint64_t *ret_gen)
{
	static _Thread_local uint8_t want[BLK];
	uint64_t gen, got_idx;

	if (b[0] == 0 && !memcmp(b, b + 1, BLK - 1)) {
		*ret_gen = 0;
		return cut_between(min_gen, max_gen);
	}
	memcpy(&gen, b, 8);
	memcpy(&got_idx, b + 8, 8);
	*ret_gen = gen;
	if (got_idx != idx || gen < min_gen || gen > max_gen)
		return false;
	block_fill(want, gen, idx);
	return !memcmp(want, b, BLK);
}

static int write_gen(int fd, uint64_t gen, unsigned nblk)
{
	static uint8_t buf[NBLK * BLK] __attribute__((aligned(4096)));

	for (unsigned i = 0; i < nblk; i++)
		block_fill(buf + (size_t)i * BLK, gen, i);
	return pwrite(fd, buf, (size_t)nblk * BLK, 0) == (ssize_t)(nblk * BLK) ? fsync(fd) : -1;
}

static void *writer(void *arg)
{
	char path[4096];
	int fd;

	/*
	 * O_DIRECT: each write goes to the daemon as it is made. A write into
	 * the kernel's page cache could be read half done through the mount
	 * (Linux does not make a read and a write of one page atomic), a torn
	 * block that is no fault of the layout's.
	 */
	snprintf(path, sizeof(path), "%s/file", mnt);
	fd = open(path, O_WRONLY | O_DIRECT);
	for (uint64_t gen = 2; fd >= 0 && !atomic_load(&stop); gen++) {
		atomic_store(&gen_started, gen);
		/* Every fourth generation cuts the file short first: the blocks past the cut are freed. */
		if (gen % 4 == 0 && (ftruncate(fd, (off_t)(rand() % NBLK) * BLK) < 0 || fsync(fd) < 0))
			break;
		if (write_gen(fd, gen, NBLK) < 0)
			break;
		atomic_store(&gen_done, gen);
	}
	if (fd >= 0)
		close(fd);
	return arg;
}

static void *churner(void *arg)
{
	static uint8_t junk[64 * BLK];
	char path[4096];

	memset(junk, 0xc5, sizeof(junk));
	for (unsigned i = 0; !atomic_load(&stop); i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/churn%u", mnt, i % 8);
		fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
		if (fd < 0)
			break;
		if (write(fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk) || fsync(fd) < 0) {
			close(fd);
			break;
		}
		close(fd);
		if (i % 3 == 0)
			unlink(path);
	}
	return arg;
}

static void touch(const char *path)
{
	close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
}

/*
 * Whether to read again: until SECONDS have passed, then while too few
 * reads were made or (need_met) too few met a member failed or rebuilding,
 * but never past the cap.
 */
static bool race_on(time_t until, time_t cap, unsigned reads, bool need_met)
{
	time_t now = time(NULL);

	return now < cap && (now < until || reads < MIN_READS || need_met);
}

/* Whether a member of the volume under fd's mount is failed or being rebuilt now. */
static bool member_changing(int fd)
{
	struct ponyfuse_layout_member_arg a;

	for (uint32_t i = 0;; i++) {
		a = (struct ponyfuse_layout_member_arg){ .version = PONYFUSE_LAYOUT_VERSION, .index = i };
		if (ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &a) < 0)
			return false;           /* past the last, or not on a volume */
		if (a.state != 0)
			return true;
		if (i + 1 >= a.nmembers)
			return false;
	}
}

int main(int argc, char **argv)
{
	static uint8_t buf[NBLK * BLK];
	pthread_t w, c;
	char path[4096];
	unsigned reads = 0, bad = 0, changing_reads = 0, met_reads = 0;
	const char *met_file = argc == 5 ? argv[4] : NULL;
	uint64_t rebuilt = 0;
	time_t until, cap;
	int fd;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: layout_race MNT SECONDS [READY [MET]]\n");
		return 2;
	}
	mnt = argv[1];
	until = time(NULL) + atoi(argv[2]);
	cap = time(NULL) + 4 * atoi(argv[2]);
	snprintf(path, sizeof(path), "%s/file", mnt);
	fd = open(path, O_CREAT | O_RDWR, 0644);
	if (fd < 0 || write_gen(fd, 1, NBLK) < 0) {
		perror(path);
		return 2;
	}
	pthread_create(&w, NULL, writer, NULL);
	pthread_create(&c, NULL, churner, NULL);
	while (race_on(until, cap, reads, met_file && met_reads < MET_READS) && !bad) {
		bool changing = member_changing(fd);
		/* Fsynced before the layout: the file holds this generation or a later one. */
		uint64_t min_gen = atomic_load(&gen_done), max_gen;
		struct pony_layout_stats st;
		struct pony_layout *l;
		ssize_t n;
		int r = pony_layout_get(fd, 0, UINT64_MAX, &l);

		if (r < 0) {
			fprintf(stderr, "pony_layout_get: %s\n", strerror(-r));
			bad = 1;
			break;
		}
		n = pony_layout_read(l, buf, 0, sizeof(buf));
		/* Read after the layout: a generation started by now is fair. */
		max_gen = atomic_load(&gen_started);
		if (n < 0) {
			fprintf(stderr, "pony_layout_read: %s\n", strerror((int)-n));
			bad = 1;
		}
		for (ssize_t i = 0; i < n / (ssize_t)BLK && !bad; i++) {
			uint64_t gen;

			if (!block_ok(buf + i * BLK, (uint64_t)i, min_gen, max_gen, &gen)) {
				fprintf(stderr, "read %u: block %zd is not the file's (it says generation "
					"%llu; the file held generations %llu to %llu)\n", reads, i,
					(unsigned long long)gen, (unsigned long long)min_gen,
					(unsigned long long)max_gen);
				bad = 1;
			}
		}
		pony_layout_stats(l, &st);
		rebuilt += st.rebuilt;
		changing = changing || member_changing(fd);
		changing_reads += changing;
		pony_layout_return(l);
		if (++reads == 3 && argc >= 4)
			touch(argv[3]);
		if (changing && st.rebuilt && ++met_reads == MET_READS && met_file)
			touch(met_file);
	}
	atomic_store(&stop, true);
	pthread_join(w, NULL);
	pthread_join(c, NULL);
	close(fd);
	printf("%u direct reads, %llu generations written%s\n", reads,
	       (unsigned long long)atomic_load(&gen_done), bad ? ", a wrong block read" : "");
	printf("%u reads while a member was failed or rebuilt, %llu blocks rebuilt\n",
	       changing_reads, (unsigned long long)rebuilt);
	return bad || reads < MIN_READS ? 1 : 0;
}
