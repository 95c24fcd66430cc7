/*
 * helper.c - a second thread for the data path of encrypted files, so
 * that the cipher runs beside the I/O instead of in line with it: a
 * writeback encrypts the next megabyte while the helper writes the last
 * one (crypt_data.c), and a large read has the helper read, check and
 * decrypt pieces of its blocks while its own thread takes the others
 * (read.c). On this two-core machine the cipher (AES-256-XTS at ~6.8 GB/s
 * on one core) ran 3-10x faster than the data moved, yet cost a fifth of
 * the sequential rates, all of it on the thread that moved the data.
 *
 * There are HELPERS such threads, each the one worker of an acall ring
 * (its CALL op runs any function on a worker), made at the first open of
 * an encrypted file (under the filesystem's lock) and freed at unmount:
 * a writeback's write of one run holds one while its encryption of the
 * next shares the cipher with another (crypt_data.c), and two READs in
 * parallel (the front end's read helpers) may each share theirs. This
 * file keeps only the helpers' own rule: one job at a time each. A job
 * that finds them all busy is run by its owner at ponyfs_job_wait(),
 * never queued behind another's, so a job's cost never exceeds doing it
 * in line. The job's arguments stay the caller's until ponyfs_job_wait()
 * returns.
 *
 * A share (ponyfs_share_run()) is the one way the cipher's work is split:
 * the caller and a helper, each with a cipher of its own, take the next
 * piece in turn until none is left, so when the helper gets no CPU of its
 * own the caller simply takes every piece (a fixed half each made it wait
 * for the helper's half: read.c's trace). A large read's decryption and a
 * writeback run's encryption (crypt_data.c) are shares.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "pony/acall.h"

#define HELPERS 2

struct ponyfs_helper_slot {
	struct acall_ring *ring;        /* one worker, no io_uring */
	_Atomic bool claimed;           /* a job owns the worker until its wait */
};

struct ponyfs_helper {
	struct ponyfs_helper_slot slot[HELPERS];
};

static void helper_free(struct ponyfs_helper *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < HELPERS; i++)
		acall_ring_free(h->slot[i].ring);
	free(h);
}

static int64_t job_call(void *arg)
{
	struct ponyfs_job *j = arg;

	return j->fn(j->arg);
}

void ponyfs_helper_start_locked(struct ponyfs *fs)
{
	/* The worker path alone: a CALL never goes to io_uring, so the ring
	 * needs neither one nor its reaper thread. */
	const struct acall_ring_params p = { .workers = 1, .path = ACALL_PATH_WORKERS };
	struct ponyfs_helper *h;

	if (fs->helper || fs->helper_failed)
		return;
	/* On one CPU a helper could only take turns with its caller. */
	h = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? calloc(1, sizeof(*h)) : NULL;
	for (unsigned i = 0; h && i < HELPERS; i++) {
		if (acall_ring_new(&p, &h->slot[i].ring) < 0) {
			helper_free(h);
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
	struct ponyfs_helper_slot *slot = NULL;

	j->op = NULL;
	j->slot = NULL;
	for (unsigned i = 0; h && !slot && i < HELPERS; i++) {
		bool idle = false;

		if (atomic_compare_exchange_strong(&h->slot[i].claimed, &idle, true))
			slot = &h->slot[i];
	}
	if (!slot)
		return;
	/* Only the claimant prepares ops on the ring, so acall_submit()
	 * takes this one alone. */
	j->op = acall_get_op(slot->ring);
	if (!j->op) {
		atomic_store(&slot->claimed, false);
		return;
	}
	acall_prep_call(j->op, job_call, j);
	if (acall_submit(slot->ring) != 1) {
		acall_op_done(slot->ring, j->op);
		j->op = NULL;
		atomic_store(&slot->claimed, false);
		return;
	}
	j->slot = slot;
	__atomic_add_fetch(&fs->helper_jobs, 1, __ATOMIC_RELAXED);
}

int ponyfs_job_wait(struct ponyfs *fs, struct ponyfs_job *j)
{
	struct ponyfs_helper_slot *slot = j->slot;
	int64_t r;

	(void)fs;
	if (!j->op)                     /* the helpers were busy: in line, now */
		return j->fn(j->arg);
	r = acall_op_wait(slot->ring, j->op);
	acall_op_done(slot->ring, j->op);
	j->op = NULL;
	j->slot = NULL;
	atomic_store(&slot->claimed, false);
	return (int)r;
}

void ponyfs_helper_stop(struct ponyfs *fs)
{
	struct ponyfs_helper *h = fs->helper;

	if (!h)
		return;
	/* No job is in flight: every starter waits before it returns. */
	helper_free(h);
	fs->helper = NULL;
}

static int share_take(struct ponyfs_share *s, struct crypt_contents *cipher)
{
	for (;;) {
		uint64_t i = atomic_fetch_add(&s->next, 1);
		int e;

		if (i >= s->pieces || atomic_load(&s->err) < 0)
			return 0;
		e = s->piece(s->arg, i, cipher);
		if (e < 0) {
			atomic_store(&s->err, e);
			return e;
		}
	}
}

static int share_helper(void *arg)
{
	struct ponyfs_share *s = arg;

	return share_take(s, s->cipher[1]);
}

int ponyfs_share_run(struct ponyfs *fs, struct ponyfs_share *s)
{
	struct ponyfs_job job = { .fn = share_helper, .arg = s };
	int r, r2;

	atomic_store(&s->next, 0);
	atomic_store(&s->err, 0);
	ponyfs_job_start(fs, &job);
	r = share_take(s, s->cipher[0]);
	/* Waited for even after an error: the helper may be writing into
	 * the caller's buffers. A helper that starts after the last piece was
	 * taken finds none. */
	r2 = ponyfs_job_wait(fs, &job);
	return r < 0 ? r : r2 < 0 ? r2 : atomic_load(&s->err);
}
