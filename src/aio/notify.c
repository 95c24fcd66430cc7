/*
 * notify.c - the sigevent a request or a lio_listio() list asked for:
 * nothing (SIGEV_NONE), a queued signal carrying the application's value
 * with si_code SI_ASYNCIO (SIGEV_SIGNAL), or a new thread running the
 * application's function (SIGEV_THREAD), as glibc delivers them.
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
