/*
 * cmd_vol_expose.c - `pony vol expose DEV... DIR` serves the volume as one
 * file, DIR/volume, through FUSE, so losetup, mkfs.ext4 and fsck work on a
 * pony RAID without any kernel md; `pony vol stop DIR` unmounts it and waits
 * until the volume is closed clean. The mount's source is
 * "pony-vol:<pid>", which is how stop finds the process serving it.
 */
#define FUSE_USE_VERSION 35
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pony/fuse.h"
#include "pony/util.h"
#include "vol.h"

#define EXPOSE_NAME "volume"

static struct vol_handle *expose_handle(void)
{
	return fuse_get_context()->private_data;
}

static int expose_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (!strcmp(path, "/" EXPOSE_NAME)) {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = (off_t)volume_size(expose_handle()->v);
		st->st_blocks = st->st_size / 512;
	} else {
		return -ENOENT;
	}
	st->st_uid = getuid();
	st->st_gid = getgid();
	return 0;
}

static int expose_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			  struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	if (strcmp(path, "/"))
		return -ENOTDIR;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, EXPOSE_NAME, NULL, 0, 0);
	return 0;
}

static int expose_open(const char *path, struct fuse_file_info *fi)
{
	return strcmp(path, "/" EXPOSE_NAME) ? -ENOENT : 0;
}

static int expose_read(const char *path, char *buf, size_t len, off_t off,
		       struct fuse_file_info *fi)
{
	struct volume *v = expose_handle()->v;
	uint64_t size = volume_size(v);
	int r;

	if ((uint64_t)off >= size)
		return 0;
	len = (size_t)MIN((uint64_t)len, size - (uint64_t)off);
	r = volume_read(v, buf, len, (uint64_t)off);
	return r < 0 ? r : (int)len;
}

static int expose_write(const char *path, const char *buf, size_t len, off_t off,
			struct fuse_file_info *fi)
{
	struct volume *v = expose_handle()->v;
	int r;

	if ((uint64_t)off + len > volume_size(v))
		return -ENOSPC;
	r = volume_write(v, buf, len, (uint64_t)off);
	return r < 0 ? r : (int)len;
}

static int expose_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	return volume_flush(expose_handle()->v);
}

static int expose_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	return (uint64_t)size == volume_size(expose_handle()->v) ? 0 : -EINVAL;
}

static const struct fuse_operations expose_ops = {
	.getattr = expose_getattr,
	.readdir = expose_readdir,
	.open = expose_open,
	.read = expose_read,
	.write = expose_write,
	.fsync = expose_fsync,
	.truncate = expose_truncate,
};

/* Forks; the child gets a pipe to say whether it mounted. Returns the child's pid
 * in the parent, 0 in the child, -errno on failure. */
static pid_t expose_fork(int *notify)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid > 0) {
		close(fds[1]);
		*notify = fds[0];
		return pid;
	}
	close(fds[0]);
	*notify = fds[1];
	setsid();
	return 0;
}

/* The child: tells the parent, then lets go of the terminal. */
static void expose_notify(int fd, bool mounted)
{
	char c = mounted ? 1 : 0;
	int null;

	if (fd < 0)
		return;
	if (write(fd, &c, 1) != 1)
		mounted = false;
	close(fd);
	null = open("/dev/null", O_RDWR);
	if (null >= 0 && mounted) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	if (null > 2)
		close(null);
}

static int expose_wait_child(int fd)
{
	char c = 0;
	ssize_t n = read(fd, &c, 1);

	close(fd);
	return n == 1 && c ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static void expose_usage(FILE *out)
{
	fprintf(out,
		"Usage: pony vol expose [OPTIONS] DEV...|NAME|UUID=U|LABEL=L DIR\n"
		"Serves the volume as the file DIR/" EXPOSE_NAME " through FUSE (losetup,\n"
		"mkfs and fsck work on it). Runs in the background until 'pony vol stop DIR'.\n\n"
		"      --md          the members carry md v1.x superblocks\n"
		"      --degraded    serve even with members missing, stale or truncated\n"
		"                    (they go stale; 'pony vol add' rebuilds them)\n"
		"  -f, --foreground  stay in the foreground\n"
		"      --log FILE    also log the daemon's events to FILE, a line each\n"
		"                    (they always go to syslog)\n"
		"  -h, --help        this help\n");
}

static int vol_expose_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "md", no_argument, NULL, 'M' }, { "foreground", no_argument, NULL, 'f' },
		{ "log", required_argument, NULL, 'G' }, { "degraded", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	char fsname[64], *fargv[] = { "pony", "-o", NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	unsigned flags = 0;
	bool foreground = false;
	const char *log_file = NULL;
	struct vol_handle h;
	struct fuse *fuse;
	char real[4096];
	const char *dir;
	int c, r, notify = -1;
	pid_t pid;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'M': flags |= VOL_OPEN_MD; break;
		case 'D': flags |= VOL_OPEN_DEGRADED; break;
		case 'f': foreground = true; break;
		case 'G': log_file = optarg; break;
		case 'h': expose_usage(stdout); return CLI_EXIT_OK;
		default: expose_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind < 2)
		return cli_usage_error("pony vol expose", "give the members and a directory");
	dir = argv[argc - 1];
	if (cli_log_open("pony vol expose", log_file, foreground))
		return CLI_EXIT_FAILURE;
	if (access("/dev/fuse", R_OK | W_OK) < 0)
		return cli_error("/dev/fuse: %s", strerror(errno));
	if (!realpath(argv[argc - 1], real))
		return cli_error("%s: %s", argv[argc - 1], strerror(errno));
	dir = real;
	/* In the background, the parent waits until the child has assembled and
	 * mounted (or failed, saying why on our stderr): the serving process's
	 * pid names the mount, and a script may use DIR as soon as we return.
	 * The child opens the members itself: an acall ring does not survive fork. */
	if (!foreground) {
		pid = expose_fork(&notify);
		if (pid < 0)
			return cli_error("cannot go to the background: %s", strerror(-pid));
		if (pid > 0)
			return expose_wait_child(notify);
	}
	r = vol_open("pony vol expose", argv + optind, argc - optind - 1, flags, &h);
	if (r) {
		expose_notify(notify, false);
		return r;
	}
	snprintf(fsname, sizeof(fsname), "fsname=pony-vol:%d,subtype=pony-vol", (int)getpid());
	fargv[2] = fsname;
	fuse = fuse_new(&args, &expose_ops, sizeof(expose_ops), &h);
	/* pony's stop signals, not libfuse's: theirs stop the loop only when
	 * the loop's own thread takes the signal, and the acall workers of
	 * the members' rings take them as often; set before the mount
	 * appears, so a stop at once is not lost either (src/fuse/stop.c). */
	r = fuse && ponyfuse_stop_signals_catch(fuse_get_session(fuse)) == 0 ?
	    fuse_mount(fuse, dir) : -1;
	expose_notify(notify, r == 0);
	if (r == 0) {
		util_log(LOG_NOTICE, "volume of %s exposed at %s/%s", argv[optind], dir, EXPOSE_NAME);
		struct fuse_loop_config cfg = { .clone_fd = 0, .max_idle_threads = 4 };

		r = fuse_loop_mt(fuse, &cfg);
		fuse_unmount(fuse);
	} else {
		cli_error("%s: cannot mount", dir);
	}
	ponyfuse_stop_signals_release();
	if (fuse)
		fuse_destroy(fuse);
	fuse_opt_free_args(&args);
	return vol_close(&h) || r ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

/* The pid in "pony-vol:<pid>", the source of the mount at dir; -ENOENT if none. */
static int expose_find_pid(const char *dir, pid_t *ret)
{
	char real[4096], line[8192];
	FILE *f = fopen("/proc/self/mounts", "re");
	int r = -ENOENT;

	if (!realpath(dir, real) || !f) {
		if (f)
			fclose(f);
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char src[256], mnt[4096];
		int pid;

		if (sscanf(line, "%255s %4095s", src, mnt) == 2 && !strcmp(mnt, real) &&
		    sscanf(src, "pony-vol:%d", &pid) == 1) {
			*ret = pid;
			r = 0;
		}
	}
	fclose(f);
	return r;
}

static int vol_stop_run(int argc, char **argv)
{
	pid_t pid;
	int r;

	if (cli_wants_help(argc, argv)) {
		printf("Usage: pony vol stop DIR\nUnmounts a volume exposed at DIR and waits "
		       "until it is closed clean.\n");
		return CLI_EXIT_OK;
	}
	if (argc != 2)
		return cli_usage_error("pony vol stop", "give the directory the volume is exposed at");
	r = expose_find_pid(argv[1], &pid);
	if (r < 0)
		return cli_error("%s: no exposed pony volume there", argv[1]);
	if (umount2(argv[1], 0) < 0 && kill(pid, SIGTERM) < 0)
		return cli_error("%s: %s", argv[1], strerror(errno));
	for (int i = 0; i < 600 && kill(pid, 0) == 0; i++)
		usleep(50000);
	if (kill(pid, 0) == 0)
		return cli_error("the volume server (pid %d) does not exit", (int)pid);
	return CLI_EXIT_OK;
}

const struct cli_command cli_vol_expose = {
	"expose", "serve the volume as a file through FUSE", vol_expose_run };
const struct cli_command cli_vol_stop = {
	"stop", "unmount an exposed volume", vol_stop_run };
