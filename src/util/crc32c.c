/*
 * crc32c.c - CRC32C over a buffer, through ISA-L's crc32_iscsi(), which uses
 * the SSE4.2 crc32 instruction (or PCLMUL folding) where the CPU has it.
 * ISA-L's function takes and returns the raw register (no final inversion),
 * so the usual ~seed / ~result dance is done here, making util_crc32c()
 * chainable: util_crc32c(util_crc32c(0, a, n), b, m) == crc of a||b.
 */
#include <isa-l/crc.h>

#include "pony/util.h"

uint32_t util_crc32c(uint32_t seed, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t crc = ~seed;

	/* ISA-L takes an int length and a non-const pointer it only reads. */
	while (len > 0) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = crc32_iscsi((unsigned char *)(uintptr_t)p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return ~crc;
}
