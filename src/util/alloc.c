/*
 * alloc.c - page-aligned allocation (O_DIRECT needs buffers aligned to the
 * logical block size; 4096 covers every device pony meets), a page-aligned
 * buffer kept per thread, and the one home of growing an array by doubling.
 */
#include <pthread.h>
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

/* One thread's buffer of a util_thread_buf: grown as needed, freed when the thread ends. */
struct thread_buf {
	uint8_t *mem;
	size_t len;
};

static void thread_buf_free(void *arg)
{
	struct thread_buf *b = arg;

	free(b->mem);
	free(b);
}

static pthread_mutex_t thread_buf_keys = PTHREAD_MUTEX_INITIALIZER;

uint8_t *util_thread_buf(struct util_thread_buf *tb, size_t len)
{
	struct thread_buf *b;

	if (!__atomic_load_n(&tb->ready, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&thread_buf_keys);
		if (!tb->ready && pthread_key_create(&tb->key, thread_buf_free) == 0)
			__atomic_store_n(&tb->ready, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&thread_buf_keys);
		if (!tb->ready)
			return NULL;
	}
	b = pthread_getspecific(tb->key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(tb->key, b)) {
			free(b);
			return NULL;
		}
	}
	if (b->len < len) {
		free(b->mem);
		b->mem = util_aligned_alloc(len);
		b->len = b->mem ? len : 0;
	}
	return b->mem;
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
