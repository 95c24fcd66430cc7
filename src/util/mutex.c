/*
 * mutex.c - the one way pony makes a hot lock: held for a few operations
 * at a time by several threads, it spins a moment before it sleeps (glibc's
 * adaptive mutex), as a futex sleep and wakeup cost far more than the wait.
 */
#include <pthread.h>

#include "pony/util.h"

void util_mutex_init_adaptive(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}
