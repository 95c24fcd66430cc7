/*
 * cmd_union.c - `pony union mount|umount`: a union of read-only lowers and a
 * writable upper, served through FUSE, with overlayfs's mount vocabulary
 * (--lower A:B:C, --upper, --work, or fuse-overlayfs's -o lowerdir=...,
 * cmd_union_opts.c) so the same directories can be handed to the kernel's
 * overlayfs or to podman. Without an upper the union is read-only.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "cli.h"
#include "pony/fuse.h"
#include "pony/union.h"
#include "pony/util.h"
#include "union_opts.h"

static void mount_usage(FILE *out)
{
	fprintf(out,
		"Usage: pony union mount --lower A[:B...] [--upper U --work W] [OPTIONS] MNT\n"
		"       pony union mount -o lowerdir=A[:B...][,upperdir=U,workdir=W][,...] MNT\n"
		"Mounts the union of the read-only lowers (top first) and the writable\n"
		"upper at MNT, in kernel overlayfs's on-disk format; without an upper,\n"
		"a read-only union of the lowers.\n\n"
		"  -l, --lower A:B:C   lower directories, top first\n"
		"  -u, --upper DIR     the writable upper directory\n"
		"  -w, --work DIR      work directory, on the upper's filesystem\n"
		"  -o, --options LIST  fuse-overlayfs's -o options (lowerdir=, upperdir=,\n"
		"                      workdir=, uidmapping=, gidmapping=, squash_to_root,\n"
		"                      squash_to_uid=, squash_to_gid=, static_nlink,\n"
		"                      volatile, fsync=0, threaded=, timeout=, noacl, the\n"
		"                      kernel's mount flags...; docs/union.md), as\n"
		"                      pony-overlayfs takes them\n"
		"  -f, --foreground    stay in the foreground (default: daemonize)\n"
		"      --log FILE      also log the daemon's events to FILE, a line each\n"
		"                      (they always go to syslog)\n"
		"      --userxattr     user.overlay.* xattrs (as overlayfs -o userxattr)\n"
		"      --writeback     kernel writeback cache (fewer, larger writes for\n"
		"                      streams of small write(2)s; costs a READ and a\n"
		"                      SETATTR per small append, so off by default)\n"
		"      --no-writeback  no kernel writeback cache (the default)\n"
		"      --no-passthrough\n"
		"                      serve file data in the daemon; by default the\n"
		"                      kernel reads and writes an upper file's host\n"
		"                      file itself (FUSE passthrough: kernel 6.9+, root,\n"
		"                      not with --writeback; silently off where the\n"
		"                      kernel lacks it); lower files are spliced\n"
		"      --io-uring      FUSE over io_uring: a ring and thread per CPU,\n"
		"                      no cross-CPU wakeup per request (kernel 6.14+;\n"
		"                      as root turns on the fuse module's enable_uring,\n"
		"                      machine-wide, and says so; else /dev/fuse)\n"
		"      --threads N     FUSE worker threads (default 1: serial workloads\n"
		"                      pay a thread hand-off per request otherwise)\n"
		"      --timeout SECS  kernel attribute and entry cache (default 86400:\n"
		"                      lowers are read-only and the upper changes only\n"
		"                      through the union, as fuse-overlayfs assumes)\n"
		"      --no-prefetch   no reading of lower directories ahead of a\n"
		"                      tree walk (by default, a thread reads the lower\n"
		"                      subdirectories of each directory listed)\n"
		"  -d, --debug         log every FUSE request (implies --foreground)\n"
		"  -h, --help          this help\n");
}

/*
 * Whether the upper is on a local filesystem, where closing a descriptor
 * does nothing (hostfs's flush is close(dup()), for NFS's close-to-open):
 * then the kernel need not send a FLUSH on every close(2).
 */
static bool upper_is_local(const char *upper)
{
	struct statfs st;

	if (statfs(upper, &st) < 0)
		return false;
	switch ((unsigned long)st.f_type) {
	case 0x6969:            /* NFS */
	case 0xff534d42:        /* CIFS */
	case 0xfe534d42:        /* SMB2 */
	case 0x65735546:        /* FUSE */
	case 0x00c36400:        /* Ceph */
		return false;
	default:
		return true;
	}
}

/*
 * Whether the host kernel runs SELinux: it registers selinuxfs only then.
 * Without it a security.selinux label is inert data, and the union refuses
 * it (EOPNOTSUPP) so that `ls -l` stops asking for one per file.
 */
bool cli_union_host_has_selinux(void)
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/filesystems", "re");
	char line[128];

	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "selinuxfs"))
			return true;
	return false;
}

int cli_union_mount_serve(const char *cmd, struct union_mount *m, const char *mountpoint)
{
	struct union_config *c = &m->cfg;
	int r = cli_union_mount_finish(cmd, m);

	if (r || cli_check_dir("mount point", mountpoint) ||
	    cli_log_open(cmd, m->log_file, m->opts.foreground))
		return r ? r : CLI_EXIT_FAILURE;
	m->opts.mount_opts = m->fuse_opts;
	m->opts.noflush = c->upper && upper_is_local(c->upper);
	m->opts.no_selinux_xattr = !cli_union_host_has_selinux();
	/* The union lists a directory by inode, no handle needed (union.h). */
	m->opts.no_opendir = true;
	m->opts.killpriv = true;
	/* Files are created with exactly the mode the caller's umask left. */
	umask(0);
	cli_raise_nofile();
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	r = union_new(c, &fs);
	if (r == -ELOOP)
		return cli_error("layers overlap: the upper or work directory is inside a "
				 "lower, or a lower inside the upper");
	if (r == -EXDEV)
		return cli_error("work directory %s is not on the filesystem of the upper "
				 "directory %s", c->work, c->upper);
	if (r < 0)
		return cli_error("cannot build the union: %s", strerror(-r));
	return cli_fuse_serve(fs, mountpoint, m->fsname ? m->fsname : c->upper ? c->upper : c->lowers[0],
			      &m->opts);
}

static int union_mount_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lower", required_argument, NULL, 'l' },
		{ "upper", required_argument, NULL, 'u' },
		{ "work", required_argument, NULL, 'w' },
		{ "options", required_argument, NULL, 'o' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "userxattr", no_argument, NULL, 'X' },
		{ "writeback", no_argument, NULL, 'B' },
		{ "no-writeback", no_argument, NULL, 'W' },
		{ "threads", required_argument, NULL, 'N' },
		{ "no-passthrough", no_argument, NULL, 'P' },
		{ "io-uring", no_argument, NULL, 'U' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "no-prefetch", no_argument, NULL, 'R' },
		{ "log", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const char cmd[] = "pony union mount";
	_cleanup_(cli_union_mount_done) struct union_mount m;
	struct union_config *c = &m.cfg;
	int n, r = 0;

	cli_union_mount_init(&m);
	optind = 1;
	while (r == 0 && (n = getopt_long(argc, argv, "l:u:w:o:fdh", longopts, NULL)) != -1) {
		switch (n) {
		case 'l': r = cli_union_mount_lowers(cmd, "--lower", optarg, &m); break;
		case 'o': r = cli_union_mount_opts(cmd, optarg, &m); break;
		case 'G': m.log_file = optarg; break;
		case 'u': c->upper = optarg; break;
		case 'w': c->work = optarg; break;
		case 'f': m.opts.foreground = true; break;
		case 'd': m.opts.debug = m.opts.foreground = true; break;
		case 'X': c->flags |= UNION_USERXATTR; break;
		case 'B': m.opts.writeback = true; break;
		case 'W': m.opts.writeback = false; break;
		case 'P': m.opts.no_passthrough = true; break;
		case 'R': c->flags |= UNION_NO_PREFETCH; break;
		case 'U': m.opts.io_uring = true; break;
		case 'N':
			r = cli_parse_unsigned(cmd, "--threads", optarg, 1, 64, &m.opts.max_threads);
			break;
		case 'T':
			r = cli_parse_seconds(cmd, "--timeout", optarg, 0, 86400, &m.opts.timeout);
			break;
		case 'h': mount_usage(stdout); return CLI_EXIT_OK;
		default: return cli_usage_error(cmd, "bad option");
		}
	}
	if (r)
		return CLI_EXIT_USAGE;
	if (optind != argc - 1)
		return cli_usage_error(cmd, "one mount point is needed");
	return cli_union_mount_serve(cmd, &m, argv[optind]);
}

static int union_umount_run(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		printf("Usage: pony union umount MNT\nUnmounts a pony union "
		       "(as fusermount3 -u MNT).\n");
		return CLI_EXIT_OK;
	}
	if (argc != 2)
		return cli_usage_error("pony union umount", "one mount point is needed");
	return cli_fuse_unmount(argv[1]);
}

static const struct cli_command union_mount_command = {
	.name = "mount", .summary = "mount a union through FUSE", .run = union_mount_run,
};
static const struct cli_command union_umount_command = {
	.name = "umount", .summary = "unmount a union", .run = union_umount_run,
};
static const struct cli_command *const union_commands[] = {
	&union_mount_command, &union_umount_command,
};

static int union_run(int argc, char **argv)
{
	return cli_dispatch("pony union", union_commands, ARRAY_SIZE(union_commands), argc,
			    argv);
}

const struct cli_command cli_union_command = {
	.name = "union",
	.summary = "union mounts (overlayfs-compatible) through FUSE",
	.run = union_run,
};
