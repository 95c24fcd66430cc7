/*
 * helper.c - a second thread for the data path of encrypted files, so
 * that the cipher runs beside the I/O instead of in line with it: a
 * writeback encrypts the next megabyte while the helper writes the last
 * one (crypt_data.c), and a large read has the helper read, check and
 * decrypt one half of its blocks while its own thread does the other
 * (read.c). On this two-core machine the cipher (AES-256-XTS at ~6.8 GB/s
 * on one core) ran 3-10x faster than the data moved, yet cost a fifth of
 * the sequential rates, all of it on the thread that moved the data.
 *
 * One helper per mount, started at the first open of an encrypted file
 * (under the filesystem's lock), stopped at unmount, taking one job at a
 * time. A job that finds it busy (another reader has it) is run by its
 * owner at ponyfs_job_wait(): never queued behind another's, so a job's
 * cost never exceeds doing it in line. The job's arguments stay the
 * caller's until ponyfs_job_wait() returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct ponyfs_helper {
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	struct ponyfs_job *job;         /* taken by the helper; NULL: idle */
	bool claimed;                   /* a job owns the helper until its wait */
	bool stop;
	pthread_t thread;
};

static void *helper_main(void *arg)
{
	struct ponyfs_helper *h = arg;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (!h->job && !h->stop)
			pthread_cond_wait(&h->wake, &h->lock);
		if (!h->job)
			break;
		struct ponyfs_job *j = h->job;

		pthread_mutex_unlock(&h->lock);
		j->r = j->fn(j->arg);
		pthread_mutex_lock(&h->lock);
		h->job = NULL;
		j->ran = true;
		pthread_cond_broadcast(&h->done);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

void ponyfs_helper_start_locked(struct ponyfs *fs)
{
	struct ponyfs_helper *h;

	if (fs->helper || fs->helper_failed)
		return;
	/* On one CPU a helper could only take turns with its caller. */
	h = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? calloc(1, sizeof(*h)) : NULL;
	if (h) {
		pthread_mutex_init(&h->lock, NULL);
		pthread_cond_init(&h->wake, NULL);
		pthread_cond_init(&h->done, NULL);
		if (pthread_create(&h->thread, NULL, helper_main, h)) {
			pthread_cond_destroy(&h->done);
			pthread_cond_destroy(&h->wake);
			pthread_mutex_destroy(&h->lock);
			free(h);
			h = NULL;
		}
	}
	fs->helper_failed = !h;     /* all in line from then on: slower, not wrong */
	/* Readers load it without the lock (ponyfs_job_start). */
	__atomic_store_n(&fs->helper, h, __ATOMIC_RELEASE);
}

void ponyfs_job_start(struct ponyfs *fs, struct ponyfs_job *j)
{
	struct ponyfs_helper *h = __atomic_load_n(&fs->helper, __ATOMIC_ACQUIRE);

	j->ran = false;
	j->on_helper = false;
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	if (!h->claimed && !h->stop) {
		h->claimed = true;
		h->job = j;
		j->on_helper = true;
		pthread_cond_signal(&h->wake);
	}
	pthread_mutex_unlock(&h->lock);
}

int ponyfs_job_wait(struct ponyfs *fs, struct ponyfs_job *j)
{
	struct ponyfs_helper *h = __atomic_load_n(&fs->helper, __ATOMIC_ACQUIRE);

	if (!j->on_helper) {            /* the helper was busy: in line, now */
		j->r = j->fn(j->arg);
		return j->r;
	}
	pthread_mutex_lock(&h->lock);
	while (!j->ran)
		pthread_cond_wait(&h->done, &h->lock);
	h->claimed = false;
	pthread_mutex_unlock(&h->lock);
	j->on_helper = false;
	return j->r;
}

void ponyfs_helper_stop(struct ponyfs *fs)
{
	struct ponyfs_helper *h = fs->helper;

	if (!h)
		return;
	/* No job is in flight: every starter waits before it returns. */
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	pthread_cond_destroy(&h->done);
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h);
	fs->helper = NULL;
}
