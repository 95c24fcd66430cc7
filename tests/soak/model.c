/*
 * model.c - the soak's oracle. Every version of every file has a content
 * that follows from (writer, slot, version) alone: a 32-byte header naming
 * them and its length, then a pseudo-random stream seeded by the three. So
 * one read of a file after a crash says which version it holds, whether all
 * of it is there (never short, never mixed with another version), and
 * whether that version is one the model allows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pony/util.h"
#include "soak.h"

#define HDR 32u
#define MAGIC 0x4b414f53594e4f50ull     /* "PONYSOAK" */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t seed_of(unsigned writer, unsigned slot, uint64_t version)
{
	return mix((uint64_t)writer << 56 ^ (uint64_t)slot << 40 ^ version);
}

/* Mostly small files (an untar's), some of a few blocks, a few large. */
size_t soak_version_len(unsigned writer, unsigned slot, uint64_t version)
{
	uint64_t r = seed_of(writer, slot, version);
	unsigned pick = (unsigned)(r % 100);

	if (pick < 60)
		return HDR + (size_t)(r >> 8) % 4000;
	if (pick < 95)
		return HDR + (size_t)(r >> 8) % (64u << 10);
	return HDR + (size_t)(r >> 8) % (SOAK_MAX_LEN - HDR);
}

void soak_version_fill(unsigned writer, unsigned slot, uint64_t version, uint8_t *buf, size_t len)
{
	uint64_t x = seed_of(writer, slot, version) | 1;
	uint8_t hdr[HDR] = { 0 };

	memcpy(hdr, &(uint64_t){ htole64(MAGIC) }, 8);
	memcpy(hdr + 8, &(uint64_t){ htole64((uint64_t)writer << 32 | slot) }, 8);
	memcpy(hdr + 16, &(uint64_t){ htole64(version) }, 8);
	memcpy(hdr + 24, &(uint64_t){ htole64(len) }, 8);
	memcpy(buf, hdr, MIN(len, (size_t)HDR));
	for (size_t i = HDR; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

void soak_slot_name(unsigned writer, unsigned slot, char *buf, size_t size)
{
	snprintf(buf, size, "f%02u", slot);
	(void)writer;
}

/* The version a slot may hold, or GONE, at v; 0 when the ring no longer knows. */
static unsigned kind_at(const struct soak_slot *s, uint64_t v)
{
	return s->started - v < SOAK_RING ? s->kind[v % SOAK_RING] : 0;
}

static bool absence_allowed(const struct soak_slot *s)
{
	if (s->durable == 0)
		return true;
	for (uint64_t v = s->durable; v <= s->started; v++)
		if (kind_at(s, v) == SOAK_KIND_GONE)
			return true;
	return false;
}

int soak_check_file(const struct soak_slot *s, unsigned writer, unsigned slot, bool exists,
		    const uint8_t *data, size_t len, uint64_t *ret_version, char *why, size_t why_size)
{
	uint8_t want[SOAK_MAX_LEN];
	uint64_t magic, ws, v, hlen;

	if (!exists) {
		if (absence_allowed(s)) {
			*ret_version = 0;
			return 0;
		}
		snprintf(why, why_size, "absent, but version %" PRIu64 " was durable", s->durable);
		return -1;
	}
	if (len == 0) {
		for (uint64_t k = s->durable; k <= s->started; k++) {
			if (kind_at(s, k) == SOAK_KIND_NEW || kind_at(s, k) == SOAK_KIND_TORN) {
				*ret_version = k;
				return 0;
			}
		}
	}
	if (len < HDR) {
		snprintf(why, why_size, "%zu bytes: shorter than any version (empty or cut)", len);
		return -1;
	}
	magic = le64toh(*(const uint64_t *)data);
	ws = le64toh(*(const uint64_t *)(data + 8));
	v = le64toh(*(const uint64_t *)(data + 16));
	hlen = le64toh(*(const uint64_t *)(data + 24));
	if (magic != MAGIC || ws != ((uint64_t)writer << 32 | slot)) {
		snprintf(why, why_size, "%zu bytes: no version header of this file", len);
		return -1;
	}
	if (v < s->durable || v > s->started || kind_at(s, v) == SOAK_KIND_GONE || !kind_at(s, v)) {
		snprintf(why, why_size, "holds version %" PRIu64 ", allowed %" PRIu64 "..%" PRIu64,
			 v, s->durable, s->started);
		return -1;
	}
	if (kind_at(s, v) == SOAK_KIND_TORN && len < hlen)
		;       /* a prefix: checked below */
	else if (hlen != len || len != soak_version_len(writer, slot, v)) {
		snprintf(why, why_size, "version %" PRIu64 " is %zu bytes, should be %zu", v, len,
			 soak_version_len(writer, slot, v));
		return -1;
	}
	soak_version_fill(writer, slot, v, want, soak_version_len(writer, slot, v));
	for (size_t i = 0; i < len; i++) {
		if (data[i] != want[i]) {
			snprintf(why, why_size, "version %" PRIu64 " differs at byte %zu (block %zu)", v, i,
				 i / 4096);
			return -1;
		}
	}
	*ret_version = v;
	return 0;
}
