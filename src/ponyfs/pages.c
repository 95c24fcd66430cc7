/*
 * pages.c - the 4 KiB pages of ponyfs's cache of dirty file data, carved
 * from 2 MiB slabs. malloc() of one page at a time cost more than the
 * copy into it: a FUSE worker's malloc arena grows by mprotect() and
 * faults each page in, a third of the daemon's time while caching a
 * sequential write.
 *
 * A slab is 2 MiB aligned and asks for a transparent huge page, so it
 * faults in once, not 512 times: with 4 KiB pages the faults (each an
 * exception, a zeroed page, and on this VM an interrupt window) were 60%
 * of the daemon's CPU while it cached a sequential write. And slabs stay
 * mapped while the cache empties and fills again (a streaming file is
 * written back every 32 MiB): the timer gives them back once the cache
 * has stayed empty for a tick (ponyfs_pages_trim), keeping one. Under
 * AddressSanitizer pages come from malloc(), so tests still catch a page
 * used after it was freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"

#define SLAB_BYTES PONYFS_SLAB_BYTES

#if defined(__SANITIZE_ADDRESS__)
#define PAGES_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PAGES_MALLOC 1
#endif
#endif

/* Also the encrypted writeback's bounce buffers (crypt_data.c) and the
 * read streams' buffers (stream.c), two 1 MiB buffers to a slab: a
 * buffer in one huge page reaches the disk as one segment, where 256
 * scattered 4 KiB pages were split into two requests on the way (the
 * virtio disk takes 254 segments) and wrote at half a slab's rate. */
void *ponyfs_slab_map(void)
{
	uint8_t *m = mmap(NULL, 2 * SLAB_BYTES, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *slab;
	size_t head;

	if (m == MAP_FAILED)
		return NULL;
	slab = (uint8_t *)(((uintptr_t)m + SLAB_BYTES - 1) & ~((uintptr_t)SLAB_BYTES - 1));
	head = (size_t)(slab - m);
	if (head)
		munmap(m, head);
	munmap(slab + SLAB_BYTES, SLAB_BYTES - head);
	/* Advice only: without huge pages the slab faults in page by page. */
	madvise(slab, SLAB_BYTES, MADV_HUGEPAGE);
	return slab;
}

void ponyfs_slab_unmap(void *slab)
{
	if (slab)
		munmap(slab, SLAB_BYTES);
}

#ifdef PAGES_MALLOC
uint8_t *ponyfs_page_alloc(struct ponyfs *fs)
{
	return malloc(BS);
}

void ponyfs_page_free(struct ponyfs *fs, uint8_t *page)
{
	free(page);
}

void ponyfs_pages_trim(struct ponyfs *fs)
{
}
#else
/* Puts every page of slab on the free list, lowest address first out. */
static void slab_carve(struct ponyfs *fs, uint8_t *slab)
{
	for (size_t i = SLAB_BYTES / BS; i-- > 0;) {
		void **p = (void **)(slab + i * BS);

		*p = fs->free_pages;
		fs->free_pages = p;
	}
}

static int slab_add(struct ponyfs *fs)
{
	void *grown = util_array_grow(fs->slabs, &fs->cap_slabs, fs->nslabs, sizeof(*fs->slabs), 16);
	void *slab;

	if (!grown)
		return -ENOMEM;
	fs->slabs = grown;
	slab = ponyfs_slab_map();
	if (!slab)
		return -ENOMEM;
	fs->slabs[fs->nslabs++] = slab;
	slab_carve(fs, slab);
	return 0;
}

uint8_t *ponyfs_page_alloc(struct ponyfs *fs)
{
	void **p;

	if (!fs->free_pages && slab_add(fs) < 0)
		return NULL;
	p = fs->free_pages;
	fs->free_pages = *p;
	fs->pages_used++;
	return (uint8_t *)p;
}

void ponyfs_page_free(struct ponyfs *fs, uint8_t *page)
{
	void **p = (void **)page;

	if (!page)
		return;
	*p = fs->free_pages;
	fs->free_pages = p;
	fs->pages_used--;
}

void ponyfs_pages_trim(struct ponyfs *fs)
{
	if (fs->pages_used || fs->nslabs <= 1)
		return;
	/* Nothing cached: keep one slab for the next small write. */
	for (size_t i = 1; i < fs->nslabs; i++)
		ponyfs_slab_unmap(fs->slabs[i]);
	fs->nslabs = 1;
	fs->free_pages = NULL;
	slab_carve(fs, fs->slabs[0]);
}
#endif

uint64_t ponyfs_pages_mapped(const struct ponyfs *fs)
{
	return (uint64_t)fs->nslabs * SLAB_BYTES;
}

void ponyfs_pages_done(struct ponyfs *fs)
{
	for (size_t i = 0; i < fs->nslabs; i++)
		ponyfs_slab_unmap(fs->slabs[i]);
	free(fs->slabs);
	fs->slabs = NULL;
	fs->nslabs = fs->cap_slabs = 0;
	fs->free_pages = NULL;
	fs->pages_used = 0;
}
