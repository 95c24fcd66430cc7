/*
 * devdb_lookup.c - in-process lookup latency of the devdb index for
 * bench/devdb: fills a database with N synthetic devices (LABEL, UUID, TYPE
 * tags; kept between runs), then times random devdb_find_tag() calls and
 * prints p50/p99 in microseconds. The stat check is off (the synthetic
 * paths do not exist): this measures the index, as the issue asks.
 *
 *   devdb_lookup DB N LOOKUPS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/devdb.h"
#include "pony/util.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct devdb *db;
	struct devdb_dev *d;
	uint64_t n, lookups, *lat, rng = 0x9E3779B97F4A7C15ull, t0;
	char label[32];
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: devdb_lookup DB N LOOKUPS\n");
		return 2;
	}
	n = strtoull(argv[2], NULL, 10);
	lookups = strtoull(argv[3], NULL, 10);
	r = devdb_open(argv[1], DEVDB_OPEN_NOVERIFY, &db);
	if (r < 0) {
		fprintf(stderr, "devdb_lookup: %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	snprintf(label, sizeof(label), "syn%llu", (unsigned long long)(n - 1));
	if (devdb_find_tag(db, "LABEL", label, &d) == 0) {
		devdb_dev_free(d);
	} else {
		t0 = util_now_ns();
		r = devdb_add_synthetic(db, "/synthetic/dev", n);
		if (r < 0) {
			fprintf(stderr, "devdb_lookup: filling: %s\n", strerror(-r));
			return 1;
		}
		fprintf(stderr, "filled %llu entries in %.1f s\n", (unsigned long long)n,
			(double)(util_now_ns() - t0) / 1e9);
	}
	lat = calloc(lookups, sizeof(*lat));
	if (!lat)
		return 1;
	for (uint64_t i = 0; i < lookups; i++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		snprintf(label, sizeof(label), "syn%llu", (unsigned long long)(rng % n));
		t0 = util_now_ns();
		r = devdb_find_tag(db, "LABEL", label, &d);
		lat[i] = util_now_ns() - t0;
		if (r < 0) {
			fprintf(stderr, "devdb_lookup: %s not found: %s\n", label, strerror(-r));
			return 1;
		}
		devdb_dev_free(d);
	}
	qsort(lat, lookups, sizeof(*lat), cmp_u64);
	printf("p50_us %.2f\np99_us %.2f\n", (double)lat[lookups / 2] / 1000,
	       (double)lat[lookups * 99 / 100] / 1000);
	free(lat);
	devdb_close(db);
	return 0;
}
