/*
 * fuse_serve.c - serving a vfs over FUSE from the CLI and unmounting it, as
 * every mount command does (pony mount, pony fs mount, pony union mount and
 * pony-overlayfs): the descriptor limit hostfs needs, FUSE over io_uring
 * when asked, the mount itself and fusermount3 at the end. A file of its
 * own so pony-overlayfs links these and not the `pony fs` commands
 * (overlayfs_main.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "cli.h"
#include "pony/fuse.h"
#include "pony/hostfs.h"
#include "pony/util.h"

void cli_raise_nofile(void)
{
	/* hostfs holds one O_PATH descriptor per inode the kernel keeps: a tree
	 * of 30,000 files needs more than the usual limits. Root may raise the
	 * hard limit too (to fs.nr_open's usual 2^20); others take the hard one.
	 * Call it before making hostfs instances: they size their descriptor
	 * budget from the limit. */
	struct rlimit rl = { .rlim_cur = 1 << 20, .rlim_max = 1 << 20 };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * --io-uring: FUSE over io_uring needs the fuse module's enable_uring, a
 * switch for the whole machine. Turn it on only because the user asked,
 * and say so; when that cannot be, say the mount stays on /dev/fuse.
 */
void cli_fuse_want_uring(void)
{
	int r = ponyfuse_uring_param();

	if (r == 1)
		return;
	if (r == 0)
		r = ponyfuse_uring_enable();
	if (r == 0)
		fprintf(stderr, "pony: turned on FUSE over io_uring for this machine "
			"(/sys/module/fuse/parameters/enable_uring)\n");
	else
		fprintf(stderr, "pony: FUSE over io_uring unavailable (%s); serving over "
			"/dev/fuse\n", r == -ENOENT ? "kernel without it" : strerror(-r));
}

int cli_fuse_serve(struct vfs *fs, const char *mountpoint, const char *source,
		   const struct ponyfuse_options *opts)
{
	struct ponyfuse_options o = *opts;
	struct ponyfuse *pf = NULL;
	char fsname[4096], mnt[4096];
	int r;

	if (cli_check_dir("mount point", mountpoint))
		return CLI_EXIT_FAILURE;
	cli_raise_nofile();
	if (o.io_uring)
		cli_fuse_want_uring();
	if (!realpath(source, fsname))
		snprintf(fsname, sizeof(fsname), "%s", source);
	o.fsname = fsname;
	/* Absolute: the daemon leaves its directory ("/") before it unmounts
	 * on SIGTERM, and a relative mount point then names nothing. */
	if (realpath(mountpoint, mnt))
		mountpoint = mnt;
	r = ponyfuse_mount(fs, mountpoint, &o, &pf);
	if (r < 0)
		return cli_error("cannot mount at %s: %s", mountpoint,
				 r == -ENOTCONN ? "FUSE refused the mount" : strerror(-r));
	util_log(LOG_NOTICE, "%s (%s) mounted at %s", source, fs->ops->name, mountpoint);
	r = ponyfuse_run(pf);
	ponyfuse_free(pf);
	if (r < 0) {
		util_log(LOG_ERR, "%s at %s: serving failed: %s", source, mountpoint, strerror(-r));
		return cli_error("serving %s failed: %s", mountpoint, strerror(-r));
	}
	util_log(LOG_NOTICE, "%s unmounted from %s", source, mountpoint);
	return CLI_EXIT_OK;
}

/* One fusermount3 -u; true when it exited 0. quiet: -q, no message. */
static bool fusermount_unmount(const char *mountpoint, bool quiet)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return false;
	if (pid == 0) {
		if (quiet)
			execlp("fusermount3", "fusermount3", "-u", "-q", "--", mountpoint,
			       (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", "--", mountpoint, (char *)NULL);
		_exit(127);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status);
}

/*
 * A mount is busy for a moment after the last process leaves it (a shell's
 * cwd, a closing file, a scan passing through), and umount says EBUSY
 * rather than wait. Retry for up to two seconds, quietly, then once more
 * with fusermount3's own message on failure.
 */
int cli_fuse_unmount(const char *mountpoint)
{
	enum { TRIES = 20, PAUSE_US = 100 * 1000 };

	for (int i = 0; i < TRIES; i++) {
		if (fusermount_unmount(mountpoint, true))
			return CLI_EXIT_OK;
		usleep(PAUSE_US);
	}
	if (fusermount_unmount(mountpoint, false))
		return CLI_EXIT_OK;
	return cli_error("cannot unmount %s (still busy after 2 s?)", mountpoint);
}
