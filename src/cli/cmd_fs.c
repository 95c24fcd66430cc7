/*
 * cmd_fs.c - `pony fs`: what any pony FUSE mount offers beyond FUSE
 * (statx with a mask and AT_STATX_* flags, syncfs, through the mount's
 * ioctls), and a host directory mounted through hostfs. The FUSE serving
 * and unmounting the mount commands share is fuse_serve.c.
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


static int fs_mount_run(int argc, char **argv)
{
	struct ponyfuse_options opts = { .subtype = "pony-hostfs", .timeout = 1.0 };
	int c;

	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "no-passthrough", no_argument, NULL, 'P' },
		{ "io-uring", no_argument, NULL, 'U' },
		{ "log", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *log_file = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fdh", longopts, NULL)) != -1) {
		switch (c) {
		case 'G': log_file = optarg; break;
		case 'f': opts.foreground = true; break;
		case 'd': opts.debug = opts.foreground = true; break;
		case 'P': opts.no_passthrough = true; break;
		case 'U': opts.io_uring = true; break;
		case 'h':
			printf("Usage: pony fs mount-host [-f] [-d] [--no-passthrough] [--io-uring] "
			       "DIR MNT\n"
			       "Mounts the host directory DIR at MNT through pony's hostfs\n"
			       "(a passthrough: the vfs and FUSE front end's reference).\n"
			       "File data goes by FUSE passthrough (the kernel reads and\n"
			       "writes the host file itself) where the kernel offers it;\n"
			       "--no-passthrough serves it through the daemon.\n"
			       "--io-uring serves requests over FUSE-over-io_uring rings, one\n"
			       "per CPU (kernel 6.14+; as root it turns on the fuse module's\n"
			       "enable_uring for the whole machine, and says so).\n"
			       CLI_LOG_HELP);
			return CLI_EXIT_OK;
		default: return cli_usage_error("pony fs mount-host", "bad option");
		}
	}
	if (optind != argc - 2)
		return cli_usage_error("pony fs mount-host", "DIR and MNT are needed");
	/* The daemon drops suid/sgid itself (KILLPRIV_V2, killpriv.c): the
	 * mount is then SB_NOSEC, and a passed-through write asks for
	 * security.capability once per file, not on every write(2). */
	opts.killpriv = true;
	if (cli_log_open("pony fs mount-host", log_file, opts.foreground))
		return CLI_EXIT_FAILURE;
	umask(0);
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	int r;

	cli_raise_nofile();
	r = hostfs_new(argv[optind], 0, &fs);
	if (r < 0)
		return cli_error("%s: %s", argv[optind], strerror(-r));
	return cli_fuse_serve(fs, argv[optind + 1], argv[optind], &opts);
}

static int fs_statx_run(int argc, char **argv)
{
	struct ponyfuse_statx_arg a = { .mask = STATX_BASIC_STATS };
	int c;

	static const struct option longopts[] = {
		{ "mask", required_argument, NULL, 'm' },
		{ "dont-sync", no_argument, NULL, 'D' },
		{ "force-sync", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "m:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cli_parse_unsigned("pony fs statx", "--mask", optarg, 0, UINT32_MAX, &a.mask))
				return CLI_EXIT_USAGE;
			break;
		case 'D': a.flags |= AT_STATX_DONT_SYNC; break;
		case 'F': a.flags |= AT_STATX_FORCE_SYNC; break;
		case 'h':
			printf("Usage: pony fs statx [--mask M] [--dont-sync|--force-sync] PATH\n"
			       "statx(2) of PATH on a pony mount, with the mask and flags\n"
			       "carried to the filesystem (FUSE itself drops them).\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error("pony fs statx", "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("pony fs statx", "one PATH is needed");
	_cleanup_(closep) int fd = open(argv[optind], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, PONYFUSE_IOC_STATX, &a) < 0)
		return cli_path_error(argv[optind], errno);
	printf("mask=0x%x ino=%llu mode=0%o nlink=%u uid=%u gid=%u size=%llu blocks=%llu "
	       "mtime=%lld.%09u\n", a.stx.stx_mask, (unsigned long long)a.stx.stx_ino,
	       a.stx.stx_mode, a.stx.stx_nlink, a.stx.stx_uid, a.stx.stx_gid,
	       (unsigned long long)a.stx.stx_size, (unsigned long long)a.stx.stx_blocks,
	       (long long)a.stx.stx_mtime.tv_sec, a.stx.stx_mtime.tv_nsec);
	return CLI_EXIT_OK;
}

/* `pony fs WHAT PATH`: one ioctl on the pony mount holding PATH. */
static int path_ioctl_run(int argc, char **argv, const char *what, unsigned long cmd,
			  void *arg)
{
	if (argc != 2)
		return cli_usage_error(what, "one PATH is needed");
	_cleanup_(closep) int fd = open(argv[1], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, cmd, arg) < 0)
		return cli_path_error(argv[1], errno);
	return CLI_EXIT_OK;
}

static int fs_syncfs_run(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		printf("Usage: pony fs syncfs PATH\nsyncfs(2) of the pony mount holding PATH "
		       "(FUSE does not pass syncfs on).\n");
		return CLI_EXIT_OK;
	}
	return path_ioctl_run(argc, argv, "pony fs syncfs", PONYFUSE_IOC_SYNCFS, NULL);
}

static int fs_requests_run(int argc, char **argv)
{
	struct ponyfuse_counters_arg a;
	int r;

	if (cli_wants_help(argc, argv)) {
		printf("Usage: pony fs requests PATH\n"
		       "The FUSE front end's counters of the pony mount holding PATH:\n"
		       "\"fuse_<request> N\" for each kind of FUSE request it read (fuse_read,\n"
		       "fuse_lookup...), and its passthrough state (passthrough 1 when in use,\n"
		       "passthrough_opens, passthrough_backing_files registered now),\n"
		       "forget_inodes (inodes forgotten), spliced_answers (READ answers spliced\n"
		       "to /dev/fuse), pooled_reads (large READs answered by helper threads)\n"
		       "and pooled_reads_peak (the most of them held at once), and with FUSE\n"
		       "over io_uring (--io-uring) uring_queues, uring_requests served over\n"
		       "the rings and uring_direct_reads (READs of host files answered by a\n"
		       "pread into a ring). The request counters, forget_inodes,\n"
		       "spliced_answers and the pooled_reads lines are listed once not 0.\n");
		return CLI_EXIT_OK;
	}
	r = path_ioctl_run(argc, argv, "pony fs requests", PONYFUSE_IOC_REQUESTS, &a);
	if (r == CLI_EXIT_OK)
		printf("%.*s", (int)sizeof(a.text), a.text);
	return r;
}

static int fs_umount_run(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		printf("Usage: pony fs umount MNT\nUnmounts a pony FUSE mount.\n");
		return CLI_EXIT_OK;
	}
	if (argc != 2)
		return cli_usage_error("pony fs umount", "one mount point is needed");
	return cli_fuse_unmount(argv[1]);
}

static const struct cli_command fs_commands_list[] = {
	{ "mount-host", "mount a host directory through hostfs", fs_mount_run },
	{ "statx", "statx with mask and flags on a pony mount", fs_statx_run },
	{ "syncfs", "syncfs of a pony mount", fs_syncfs_run },
	{ "requests", "FUSE requests a pony mount has served", fs_requests_run },
	{ "umount", "unmount a pony FUSE mount", fs_umount_run },
};
static const struct cli_command *const fs_commands[] = {
	&fs_commands_list[0], &fs_commands_list[1], &fs_commands_list[2], &fs_commands_list[3],
	&fs_commands_list[4], &cli_fs_layout_command, &cli_fs_cat_command,
	&cli_fs_put_command,
	&cli_fs_resolve_command, &cli_fs_badblocks_command, &cli_fs_scrub_command,
};

static int fs_run(int argc, char **argv)
{
	return cli_dispatch("pony fs", fs_commands, ARRAY_SIZE(fs_commands), argc, argv);
}

const struct cli_command cli_fs_command = {
	.name = "fs",
	.summary = "pony FUSE mounts: hostfs, statx masks, syncfs, layouts, direct reads, bad blocks, scrub",
	.run = fs_run,
};
