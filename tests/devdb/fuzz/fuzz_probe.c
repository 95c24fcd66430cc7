/*
 * fuzz_probe.c - libFuzzer target for every prober and partition-table
 * parser, through the same engine `pony dev probe` uses. The input's first
 * byte picks a device size (64 KiB to 2 GiB, so probers that look at 64 KiB,
 * at the end or need 64 MiB are reached) and whether the data is mirrored
 * at the end (MD 0.90/1.0, ZFS's back labels, GPT's backup); everything
 * else reads as zeros. The reader aborts on any read outside the device, so
 * the fuzzer proves the bound as well as the absence of memory errors.
 * Built by scripts/fuzz.sh (clang -fsanitize=fuzzer,address).
 */
#include <stdlib.h>
#include <string.h>

#include "pony/devdb.h"

struct fuzz_dev {
	const uint8_t *data;
	size_t len;
	uint64_t size;
	bool mirror;
};

static void copy_region(uint8_t *dst, uint64_t off, size_t len, const uint8_t *src, uint64_t at,
			size_t slen)
{
	uint64_t s = off > at ? off : at;
	uint64_t e = off + len < at + slen ? off + len : at + slen;

	if (s < e)
		memcpy(dst + (s - off), src + (s - at), e - s);
}

static int64_t fuzz_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct fuzz_dev *d = ctx;

	if (off > d->size || len > d->size - off)
		abort();        /* the engine promised never to do this */
	memset(buf, 0, len);
	copy_region(buf, off, len, d->data, 0, d->len);
	if (d->mirror && d->len <= d->size)
		copy_region(buf, off, len, d->data, d->size - d->len, d->len);
	return (int64_t)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_dev d;
	struct devdb_reader rd = { .ctx = &d, .read = fuzz_read };
	struct devdb_probe_opts opts = { 0 };
	struct devdb_probe_result *res = NULL;

	if (size < 2)
		return 0;
	d.size = (64ull << 10) << (data[0] & 15);
	d.mirror = data[0] & 0x10;
	if (data[0] & 0x20)
		opts.session_offset = (uint64_t)(data[1] & 0x7f) * 2048;
	d.data = data + 2;
	d.len = size - 2;
	if (d.len > d.size)
		d.len = (size_t)d.size;
	rd.size = d.size;
	if (devdb_probe_reader(&rd, &opts, &res) == 0) {
		/* touch every string, so a bad terminator shows under ASan */
		for (size_t i = 0; i < res->tags.n; i++)
			if (!strlen(res->tags.v[i].name) || !res->tags.v[i].value)
				abort();
		for (size_t p = 0; p < res->nparts; p++)
			for (size_t i = 0; i < res->parts[p].tags.n; i++)
				(void)strlen(res->parts[p].tags.v[i].value);
		devdb_probe_result_free(res);
	}
	return 0;
}
