/*
 * stop.c - SIGINT, SIGTERM and SIGHUP end a mount's serving loop, whichever
 * thread the kernel hands them to.
 *
 * libfuse's multithreaded loop waits for its end in the thread that called
 * it (the loop thread), in sem_wait(), while its workers sleep in read() of
 * /dev/fuse with these signals blocked. Its own handler only marks the
 * session exited, so it stops the loop only when it runs in the loop thread
 * and interrupts that wait. The kernel gives a process's signal to any
 * thread that does not block it, and the loop thread blocks these signals
 * for an instant each time it starts a worker: a signal arriving then went
 * to one of the daemon's other threads (read helpers, the commit timer, the
 * I/O workers), which marked the session exited while nothing woke the
 * loop, and the daemon served on (fuse_signal_at_mount, seen once in 40
 * rounds). The handler here marks the session exited as libfuse's does,
 * and when it runs in another thread it sends the signal on to the loop
 * thread (tgkill is async-signal-safe), where it is taken as soon as that
 * thread unblocks it, before its next wait.
 *
 * The handlers go on before the mount appears (mount.c): a signal that
 * came between the mount and the loop was once lost too. One session per
 * process has them, as with libfuse's own.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };

static struct fuse_session *volatile stop_session;
static volatile pid_t loop_tid;         /* the thread that runs (or will run) the loop */

static void stop_handler(int sig)
{
	int saved = errno;
	struct fuse_session *se = stop_session;
	pid_t tid = loop_tid;

	if (se)
		fuse_session_exit(se);
	if (tid && tid != gettid())
		tgkill(getpid(), tid, sig);
	errno = saved;
}

int ponyfuse_stop_signals_catch(struct fuse_session *se)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/* An answer to a caller that went away must not kill the daemon. */
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		return -errno;
	stop_session = se;
	loop_tid = gettid();
	/* Not inherited SIG_IGN: a shell starts background jobs with SIGINT
	 * ignored, and the mount must still stop on it. */
	sa.sa_handler = stop_handler;
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		if (sigaction(stop_signals[i], &sa, NULL) != 0)
			return -errno;
	return 0;
}

void ponyfuse_stop_signals_loop_thread(void)
{
	loop_tid = gettid();
}

void ponyfuse_stop_signals_release(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_DFL;
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		sigaction(stop_signals[i], &sa, NULL);
	loop_tid = 0;
	stop_session = NULL;
}
