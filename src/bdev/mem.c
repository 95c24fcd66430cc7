/*
 * mem.c - a bdev in memory, for tests and benchmarks: members of a RAID that
 * can be failed, inspected and compared byte for byte without touching disk.
 *
 * Large devices are anonymous mappings asking for transparent huge pages (a
 * RAID member of 64 MiB in 4 KiB pages costs a TLB miss every 4 KiB of a
 * stripe write, and under a hypervisor a miss walks two page tables). Large
 * writes use non-temporal stores: a member's bytes are not read back soon,
 * and streaming them skips the read-for-ownership of every destination
 * cache line, which doubles the copy rate into memory on this kind of CPU.
 * The storage can be lent out (bdev_map), so a RAID engine can compute
 * parity while it stores into it, in one pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __x86_64__
#include <emmintrin.h>
#endif

#include "pony/bdev.h"

#define MEM_MAP_MIN (2u << 20)          /* mmap (and huge pages) from this size */
#define MEM_STREAM_MIN (64u << 10)      /* non-temporal stores from this length */

struct bdev_mem {
	struct bdev b;
	uint8_t *data;
	bool mapped;                    /* data is an mmap, not calloc */
};

/* memcpy for large destinations that will not be read soon. */
static void mem_copy_out(uint8_t *dst, const uint8_t *src, size_t len)
{
#ifdef __x86_64__
	if (len >= MEM_STREAM_MIN && (uintptr_t)dst % 16 == 0) {
		size_t n = len & ~(size_t)63;

		for (size_t i = 0; i < n; i += 64) {
			__m128i a = _mm_loadu_si128((const __m128i *)(src + i));
			__m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
			__m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
			__m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));

			_mm_stream_si128((__m128i *)(dst + i), a);
			_mm_stream_si128((__m128i *)(dst + i + 16), b);
			_mm_stream_si128((__m128i *)(dst + i + 32), c);
			_mm_stream_si128((__m128i *)(dst + i + 48), d);
		}
		_mm_sfence();   /* order the streamed stores before later accesses */
		memcpy(dst + n, src + n, len - n);
		return;
	}
#endif
	memcpy(dst, src, len);
}

static int mem_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	memcpy(buf, ((struct bdev_mem *)b)->data + off, len);
	return 0;
}

static int mem_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	mem_copy_out(((struct bdev_mem *)b)->data + off, buf, len);
	return 0;
}

static int mem_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	memset(((struct bdev_mem *)b)->data + off, 0, len);
	return 0;
}

/* The storage is memory: lend it (the volume's fused RAID6 paths use this). */
static int mem_map(struct bdev *b, uint64_t off, size_t len, void **ret_ptr)
{
	(void)len;
	*ret_ptr = ((struct bdev_mem *)b)->data + off;
	return 0;
}

static void mem_free(struct bdev *b)
{
	struct bdev_mem *m = (struct bdev_mem *)b;

	if (m->mapped)
		munmap(m->data, b->size);
	else
		free(m->data);
	free(b);
}

static const struct bdev_ops mem_ops = {
	.name = "mem",
	.pread = mem_pread,
	.pwrite = mem_pwrite,
	.discard = mem_discard,
	.free = mem_free,
	.map = mem_map,
};

int bdev_mem_new(uint64_t size, struct bdev **ret)
{
	struct bdev_mem *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	if (size >= MEM_MAP_MIN) {
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED) {
			(void)madvise(p, size, MADV_HUGEPAGE);  /* a hint: fine if refused */
			m->data = p;
			m->mapped = true;
		}
	} else {
		m->data = calloc(1, size ? size : 1);
	}
	if (!m->data) {
		free(m);
		return -ENOMEM;
	}
	m->b.ops = &mem_ops;
	m->b.size = size;
	m->b.block_size = 512;
	snprintf(m->b.name, sizeof(m->b.name), "mem");
	*ret = &m->b;
	return 0;
}
