/*
 * alloc.c - page-aligned allocation. O_DIRECT needs buffers aligned to the
 * logical block size; 4096 covers every device pony meets.
 */
#include <stdlib.h>

#include "pony/util.h"

void *util_aligned_alloc(size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, size ? size : 1) != 0)
		return NULL;
	return p;
}
