/*
 * volume_randread.c - bench/volume-nbd's random read row: a pony volume
 * assembled read-only from the devices named (paths or NBD URIs, through
 * bdev_open as every pony command opens them), then 4 KiB reads at random
 * 4 KiB-aligned offsets with DEPTH reads in flight (one thread each: a
 * volume read is synchronous) for SECONDS. Prints the reads per second.
 * Usage: volume-randread SECONDS DEPTH DEV...
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pony/bdev.h"
#include "pony/util.h"
#include "pony/volume.h"

#define BLOCK 4096u

static struct volume *vol;
static double deadline;
static atomic_uint_fast64_t reads;
static atomic_int failed;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *reader(void *arg)
{
	uint64_t blocks = volume_size(vol) / BLOCK, seed = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	uint8_t *buf = util_aligned_alloc(BLOCK);

	while (buf && now() < deadline) {
		for (int i = 0; i < 16; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			if (volume_read(vol, buf, BLOCK, (seed % blocks) * BLOCK) < 0) {
				atomic_store(&failed, 1);
				free(buf);
				return NULL;
			}
		}
		atomic_fetch_add(&reads, 16);
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	struct bdev *devs[VOLUME_MAX_MEMBERS];
	struct volume_set *set;
	pthread_t t[256];
	double secs, t0;
	int depth, n = argc - 3, r;

	if (argc < 4 || (secs = atof(argv[1])) <= 0 || (depth = atoi(argv[2])) < 1 || depth > 256 ||
	    n > VOLUME_MAX_MEMBERS) {
		fprintf(stderr, "usage: volume-randread SECONDS DEPTH DEV...\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		struct bdev_open_params p = { .flags = O_RDONLY };

		r = bdev_open(argv[3 + i], &p, &devs[i]);
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", argv[3 + i], strerror(-r));
			return 1;
		}
	}
	r = volume_set_assemble(devs, (unsigned)n, VOLUME_SET_RDONLY, &set, NULL);
	if (r < 0) {
		fprintf(stderr, "assemble: %s\n", strerror(-r));
		return 1;
	}
	vol = volume_set_volume(set);
	t0 = now();
	deadline = t0 + secs;
	for (int i = 0; i < depth; i++)
		pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < depth; i++)
		pthread_join(t[i], NULL);
	secs = now() - t0;
	volume_set_close(set);
	if (atomic_load(&failed)) {
		fprintf(stderr, "a read failed\n");
		return 1;
	}
	printf("%.0f\n", (double)atomic_load(&reads) / secs);
	return 0;
}
