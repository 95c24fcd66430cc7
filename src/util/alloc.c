/*
 * alloc.c - page-aligned allocation (O_DIRECT needs buffers aligned to the
 * logical block size; 4096 covers every device pony meets), and the one
 * home of growing an array by doubling.
 */
#include <stdint.h>
#include <stdlib.h>

#include "pony/util.h"

void *util_aligned_alloc(size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, size ? size : 1) != 0)
		return NULL;
	return p;
}

void *util_array_grow(void *arr, size_t *cap, size_t n, size_t elem_size, size_t first)
{
	size_t want;
	void *p;

	if (n < *cap)
		return arr;
	want = *cap ? *cap * 2 : first;
	if (want > SIZE_MAX / elem_size)
		return NULL;
	p = realloc(arr, want * elem_size);
	if (p)
		*cap = want;
	return p;
}
