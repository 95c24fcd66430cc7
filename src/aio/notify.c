/*
 * notify.c - the sigevent a request or a lio_listio() list asked for:
 * nothing (SIGEV_NONE), a queued signal carrying the application's value
 * with si_code SI_ASYNCIO (SIGEV_SIGNAL), or a new thread running the
 * application's function (SIGEV_THREAD), as glibc delivers them; and when:
 * gathered under aio.lock, sent once this thread holds neither the lock
 * nor the ring's completion queue.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

int aio_sigevent_check(const struct sigevent *sev)
{
	switch (sev->sigev_notify) {
	case SIGEV_NONE:
		return 0;
	case SIGEV_SIGNAL:
		/* 0 is accepted and sends nothing, as kill(pid, 0): a zeroed
		 * aiocb asks for SIGEV_SIGNAL (0) with signal 0. */
		return sev->sigev_signo >= 0 && sev->sigev_signo < NSIG ? 0 : -EINVAL;
	case SIGEV_THREAD:
		return sev->sigev_notify_function ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

struct notify_thread {
	void (*fn)(union sigval);
	union sigval value;
};

static void *notify_thread_main(void *arg)
{
	struct notify_thread t = *(struct notify_thread *)arg;
	sigset_t none;

	free(arg);
	/* Born of a pony thread, which blocks everything: the application's
	 * function runs with no signal blocked, as under glibc. */
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	t.fn(t.value);
	return NULL;
}

static void notify_thread(const struct sigevent *sev)
{
	struct notify_thread *t = malloc(sizeof(*t));
	pthread_attr_t own, *attr = sev->sigev_notify_attributes;
	pthread_t th;

	if (!t)
		return;
	t->fn = sev->sigev_notify_function;
	t->value = sev->sigev_value;
	if (!attr) {
		attr = &own;
		pthread_attr_init(&own);
		pthread_attr_setdetachstate(&own, PTHREAD_CREATE_DETACHED);
	}
	if (pthread_create(&th, attr, notify_thread_main, t) != 0)
		free(t);        /* nothing left to tell anyone: as glibc */
	if (attr == &own)
		pthread_attr_destroy(&own);
}

void aio_notify(const struct sigevent *sev, pid_t pid)
{
	siginfo_t si;

	switch (sev->sigev_notify) {
	case SIGEV_SIGNAL:
		if (!sev->sigev_signo)
			break;
		/* rt_sigqueueinfo(), not sigqueue(): only the raw call lets
		 * the sender set si_code, and the kernel allows SI_ASYNCIO
		 * when a process signals itself. */
		memset(&si, 0, sizeof(si));
		si.si_signo = sev->sigev_signo;
		si.si_code = SI_ASYNCIO;
		si.si_pid = aio_getpid();
		si.si_uid = getuid();
		si.si_value = sev->sigev_value;
		syscall(SYS_rt_sigqueueinfo, pid, sev->sigev_signo, &si);
		break;
	case SIGEV_THREAD:
		notify_thread(sev);
		break;
	}
}

void aio_notes_add(struct aio_notes *n, const struct sigevent *sev, pid_t pid)
{
	if (sev->sigev_notify == SIGEV_NONE)
		return;
	n->v[n->n].sev = *sev;
	n->v[n->n++].pid = pid;
}

/*
 * Notifications due while this thread holds aio.lock, or reaps in
 * aio_wait_seq(): sent once it released the lock and left
 * acall_reap_wait(). A SIGEV_SIGNAL sent to the process from this thread
 * lands on this thread at once, and its handler (which may call
 * aio_suspend()) must not run while this thread holds the completion
 * queue: nobody else could complete what the handler waits for; nor hold
 * aio.lock, which is no recursive mutex: a handler submitting a request
 * would wait for itself.
 */
struct later {
	struct sigevent sev;
	pid_t pid;
};
static _Thread_local bool reaping;
static _Thread_local struct later *later;
static _Thread_local unsigned nlater, later_cap;

static bool notes_defer(const struct sigevent *sev, pid_t pid)
{
	if (nlater == later_cap) {
		unsigned cap = later_cap ? 2 * later_cap : 16;
		struct later *l = realloc(later, cap * sizeof(*l));

		if (!l)
			return false;   /* sent at once, then */
		later = l;
		later_cap = cap;
	}
	later[nlater].sev = *sev;
	later[nlater++].pid = pid;
	return true;
}

void aio_notes_flush(void)
{
	/* A handler run by one of these may reap and defer again: take the
	 * list first (and free it: no buffer outlives its thread). */
	struct later *l = later;
	unsigned n = nlater;

	if (!n || reaping)
		return;
	later = NULL;
	nlater = later_cap = 0;
	for (unsigned i = 0; i < n; i++)
		aio_notify(&l[i].sev, l[i].pid);
	free(l);
}

void aio_notes_send(const struct aio_notes *n)
{
	for (unsigned i = 0; i < n->n; i++)
		if (!(reaping || aio_lock_held) || !notes_defer(&n->v[i].sev, n->v[i].pid))
			aio_notify(&n->v[i].sev, n->v[i].pid);
}

bool aio_notes_reap_begin(void)
{
	bool outer = !reaping;

	reaping = true;
	return outer;
}

void aio_notes_reap_end(bool outer)
{
	if (outer) {
		reaping = false;
		aio_notes_flush();
	}
}
