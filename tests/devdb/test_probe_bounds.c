/*
 * test_probe_bounds.c - the probe engine on hostile input: for every
 * prober's every magic, random devices of random sizes with that magic
 * planted where the prober looks, read through a reader that fails the test
 * on any read outside the device. Run under ASan by `make check`, this is
 * the fuzzers' property (no crash, no out-of-device read) on every build.
 * Also: reads are refused past the end, ambivalence is reported, and the
 * crash inputs the fuzzer once found (fuzz/crashes/) stay fixed.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/devdb/probe.h"

struct rnd_dev {
	uint8_t *head, *tail;   /* random bytes at the start and the end; zeros between */
	size_t hlen;
	uint64_t size;
	unsigned reads_outside;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t xrand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t rnd_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct rnd_dev *d = ctx;
	uint8_t *b = buf;

	if (off > d->size || len > d->size - off) {
		d->reads_outside++;
		return -EIO;
	}
	for (size_t i = 0; i < len; i++) {
		uint64_t o = off + i;

		if (o < d->hlen)
			b[i] = d->head[o];
		else if (o >= d->size - d->hlen)
			b[i] = d->tail[o - (d->size - d->hlen)];
		else
			b[i] = 0;
	}
	return (int64_t)len;
}

static const struct devdb_prober *const all_probers[] = {
	&devdb_ext2_prober, &devdb_ext3_prober, &devdb_ext4_prober, &devdb_ext4dev_prober,
	&devdb_jbd_prober, &devdb_xfs_prober, &devdb_btrfs_prober, &devdb_vfat_prober,
	&devdb_exfat_prober, &devdb_ntfs_prober, &devdb_swap_prober, &devdb_luks_prober,
	&devdb_mdraid_prober, &devdb_lvm2_prober, &devdb_iso9660_prober, &devdb_udf_prober,
	&devdb_squashfs_prober, &devdb_squashfs3_prober, &devdb_erofs_prober, &devdb_f2fs_prober,
	&devdb_bcache_prober, &devdb_zfs_prober, &devdb_bitlocker_prober, &devdb_ponyvol_prober,
};

static void probe_random(struct rnd_dev *d)
{
	struct devdb_reader rd = { .size = d->size, .ctx = d, .read = rnd_read };
	struct devdb_probe_result *res = NULL;
	int r = devdb_probe_reader(&rd, NULL, &res);

	assert_int_equal(d->reads_outside, 0);
	assert_int_equal(r, 0);
	for (size_t i = 0; i < res->tags.n; i++)
		assert_non_null(res->tags.v[i].value);
	devdb_probe_result_free(res);
}

static void test_no_prober_reads_outside_random_devices_with_planted_magics(void **state)
{
	static const uint64_t sizes[] = { 1025, 4096, 65536, 1 << 20, 3 << 20, 64ull << 20, 1ull << 30 };
	size_t hlen = 256 * 1024;
	struct rnd_dev d = { .head = malloc(hlen), .tail = malloc(hlen) };
	unsigned runs = 0;

	assert_non_null(d.head);
	assert_non_null(d.tail);
	for (size_t p = 0; p < ARRAY_SIZE(all_probers); p++) {
		for (const struct devdb_magic *m = all_probers[p]->magics; ; m++) {
			for (int iter = 0; iter < 12; iter++) {
				d.size = sizes[xrand() % ARRAY_SIZE(sizes)];
				d.hlen = d.size / 2 < hlen ? (size_t)d.size / 2 : hlen;
				for (size_t i = 0; i < d.hlen; i++) {
					/* mostly small values, so lengths and counts look plausible */
					uint64_t x = xrand();

					d.head[i] = (x & 3) ? (uint8_t)(x >> 8) & 0x0f : (uint8_t)(x >> 16);
					d.tail[i] = (uint8_t)(x >> 24);
				}
				if (m->len) {
					uint64_t off = m->kboff >= 0 ? ((uint64_t)m->kboff << 10) + m->sboff
								    : 0;

					if (off + m->len <= d.hlen)
						memcpy(d.head + off, m->bytes, m->len);
				}
				probe_random(&d);
				runs++;
			}
			if (!m->len)
				break;
		}
	}
	print_message("%u random devices probed\n", runs);
	free(d.head);
	free(d.tail);
}

static void test_get_refuses_ranges_past_the_end(void **state)
{
	uint8_t buf[4096] = { 0 };
	struct rnd_dev d = { .head = buf, .tail = buf, .hlen = 2048, .size = 4096 };
	struct devdb_reader rd = { .size = 4096, .ctx = &d, .read = rnd_read };
	struct devdb_probe pr = { .rd = &rd, .size = 4096 };

	assert_non_null(devdb_probe_get(&pr, 0, 4096));
	assert_non_null(devdb_probe_get(&pr, 4095, 1));
	assert_null(devdb_probe_get(&pr, 4095, 2));
	assert_null(devdb_probe_get(&pr, 4097, 1));
	assert_null(devdb_probe_get(&pr, UINT64_MAX, 2));
	assert_null(devdb_probe_get(&pr, 0, 0));
	assert_int_equal(pr.io_error, 0);
	assert_int_equal(d.reads_outside, 0);
	devdb_probe_release(&pr);
}

/* A squashfs superblock at 0 and a btrfs one at 64 KiB: neither may win. */
static void test_two_filesystems_are_ambivalent(void **state)
{
	size_t size = 2 << 20;
	uint8_t *img = calloc(1, size);
	struct devdb_probe_result *res;
	uint8_t *sb = img + 65536;

	assert_non_null(img);
	memcpy(img, "hsqs", 4);
	img[12] = 0x00, img[13] = 0x00, img[14] = 0x02;        /* block size 128K */
	img[28] = 4;                                            /* version 4.0 */
	memcpy(sb + 0x40, "_BHRfS_M", 8);
	sb[0x91] = 0x10;                                        /* sectorsize 4096 */
	sb[0x12b] = 'x';
	sb[0xc4] = 0xff;                                        /* unverified csum type */
	assert_int_equal(devdb_probe_buffer(img, size, NULL, &res), 0);
	assert_int_equal(res->status, DEVDB_PROBE_AMBIVALENT);
	assert_non_null(strstr(res->ambivalent, "squashfs"));
	assert_non_null(strstr(res->ambivalent, "btrfs"));
	assert_null(devdb_tags_get(&res->tags, "TYPE"));
	devdb_probe_result_free(res);
	free(img);
}

/* Inputs that once crashed or misread (found by scripts/fuzz.sh). */
static void test_fuzzer_crash_inputs_stay_fixed(void **state)
{
	const char *dir = getenv("PONY_SRCDIR");
	char path[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/tests/devdb/fuzz/crashes", dir ? dir : ".");
	d = opendir(path);
	if (!d)
		skip();
	while ((e = readdir(d))) {
		char f[8192];
		FILE *fp;
		uint8_t *buf = malloc(1 << 20);
		size_t n;
		struct rnd_dev dev;

		if (e->d_name[0] == '.') {
			free(buf);
			continue;
		}
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		fp = fopen(f, "rb");
		assert_non_null(fp);
		n = fread(buf, 1, 1 << 20, fp);
		fclose(fp);
		if (n < 2) {
			free(buf);
			continue;
		}
		/* the fuzz target's encoding: size class byte, session byte, data */
		dev = (struct rnd_dev){ .head = buf + 2, .tail = buf + 2, .size = (64ull << 10) << (buf[0] & 15) };
		dev.hlen = MIN(n - 2, (size_t)dev.size / 2);
		probe_random(&dev);
		free(buf);
	}
	closedir(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_refuses_ranges_past_the_end),
		cmocka_unit_test(test_two_filesystems_are_ambivalent),
		cmocka_unit_test(test_no_prober_reads_outside_random_devices_with_planted_magics),
		cmocka_unit_test(test_fuzzer_crash_inputs_stay_fixed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
