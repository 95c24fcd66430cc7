/*
 * cli.h - what the `pony` subcommands share: the command table type, error
 * reporting (to stderr, with the exit codes below) and nested dispatch
 * (`pony vol create ...`). Only src/cli/ prints messages for people.
 */
#ifndef PONY_CLI_H
#define PONY_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAILURE = 1,   /* the operation failed */
	CLI_EXIT_NOT_FOUND = 1, /* nothing matched (findfs; the dev commands) */
	CLI_EXIT_USAGE = 2,     /* bad arguments */
};

struct cli_command {
	const char *name;
	const char *summary;    /* one line for the parent's --help */
	int (*run)(int argc, char **argv); /* argv[0] is the command's name */
};

/* Every top-level command, one per component; defined in its cmd_*.c. */
extern const struct cli_command cli_dev_command;    /* cmd_dev.c */
extern const struct cli_command cli_fs_command;     /* cmd_fs.c */
extern const struct cli_command cli_fs_layout_command; /* cmd_fs_layout.c: pony fs layout */
extern const struct cli_command cli_fs_cat_command;    /* cmd_fs_direct.c: pony fs cat */
/* A layout call's errno (positive) as a sentence about path; CLI_EXIT_FAILURE. */
int cli_layout_error(const char *path, int err);
/* cmd_fs_scrub.c: pony fs resolve, badblocks, scrub */
extern const struct cli_command cli_fs_resolve_command, cli_fs_badblocks_command,
	cli_fs_scrub_command;
extern const struct cli_command cli_union_command;  /* cmd_union.c */
extern const struct cli_command cli_mkfs_command;   /* cmd_ponyfs.c */
extern const struct cli_command cli_mount_command;  /* cmd_ponyfs.c */
extern const struct cli_command cli_fsck_command;   /* cmd_ponyfs.c */
extern const struct cli_command cli_barrier_command; /* cmd_ponyfs_ioctl.c */
extern const struct cli_command cli_sync_command;   /* cmd_ponyfs_ioctl.c */
extern const struct cli_command cli_stat_command;   /* cmd_ponyfs_ioctl.c */
extern const struct cli_command cli_shutdown_command; /* cmd_ponyfs_ioctl.c */
extern const struct cli_command cli_vol_command;    /* cmd_vol.c */
extern const struct cli_command cli_crypt_command;  /* cmd_crypt.c */

/* Serving a vfs instance through FUSE, shared by the mount commands (cmd_fs.c). */
struct vfs;
struct ponyfuse_options;
/* Raises RLIMIT_NOFILE as far as allowed (before hostfs instances are made). */
void cli_raise_nofile(void);
int cli_fuse_serve(struct vfs *fs, const char *mountpoint, const char *source,
		   const struct ponyfuse_options *opts);
int cli_fuse_unmount(const char *mountpoint);
/* --io-uring: turns on the fuse module's enable_uring (root), saying so. */
void cli_fuse_want_uring(void);
extern const struct cli_command acall_command;

/* "pony: <message>" on stderr; returns CLI_EXIT_FAILURE for `return cli_error(...)`. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, then "Try 'pony <cmd> --help'."; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Number options, each checked whole and against its range, so `--commit
 * abc` or `--threads -1` is a usage error naming the option and the value,
 * never a silent 0. cmd is the command for the message ("pony mount"), opt
 * the option ("--commit"). 0 and *ret, or the message printed and
 * CLI_EXIT_USAGE returned: `if ((r = cli_parse_uint(...))) return r;`.
 * Integers are decimal, or hexadecimal after 0x; sizes as util_parse_size
 * takes them (64K, 1M ...), a multiple of align when align > 1.
 */
int cli_parse_uint(const char *cmd, const char *opt, const char *text, uint64_t min, uint64_t max,
		   uint64_t *ret);
int cli_parse_unsigned(const char *cmd, const char *opt, const char *text, unsigned min,
		       unsigned max, unsigned *ret);
int cli_parse_size(const char *cmd, const char *opt, const char *text, uint64_t min, uint64_t max,
		   uint64_t align, uint64_t *ret);
int cli_parse_seconds(const char *cmd, const char *opt, const char *text, double min, double max,
		      double *ret);

/*
 * Devices a command is about to overwrite (targets.c): distinct files,
 * not held by a running pony (the lock is taken and kept), not mounted, no
 * signature unless force. 0, or a message printed and CLI_EXIT_FAILURE.
 */
#define CLI_TARGETS_MAX 64
struct cli_targets {
	const char *cmd;                /* "pony mkfs": for messages */
	bool force;                     /* -f: a signature may be overwritten */
	/* A member of the volume with this UUID (devdb's spelling) may be
	 * taken back in without -f (vol add of a failed member); NULL: none. */
	const char *rejoin_uuid;
};
int cli_targets_check(const struct cli_targets *t, char *const *paths, int n);

/*
 * open.c: a device by the name given (a path or an NBD URI), with oflags
 * (O_RDONLY or O_RDWR); with ring, a file's I/O goes through the process's
 * acall ring. On failure a message naming it and the cause, and -errno.
 */
struct bdev;
int cli_open_device(const char *name, int oflags, bool ring, struct bdev **ret);
/*
 * Opens the members names[0..n) into devs, and their names into used
 * (borrowed), *ret_n of them. With degraded, an NBD member that cannot be
 * reached is left out, said on stderr (the volume then starts without
 * it, as without a member not given); anything else that fails frees what
 * was opened: CLI_EXIT_FAILURE after the message.
 */
int cli_open_members(char *const *names, int n, int oflags, bool ring, bool degraded,
		     struct bdev **devs, char **used, int *ret_n);
/*
 * Opens name read-only (as cli_open_device) and, with ret, probes what it
 * holds (free with devdb_probe_result_free()); with ret_size, its size.
 */
struct devdb_probe_result;
int cli_probe_device(const char *name, struct devdb_probe_result **ret, uint64_t *ret_size);
/*
 * Takes `--member-timeout SECONDS` (or =SECONDS) out of argv, wherever it
 * is: how long an NBD member may take to connect or to answer a request
 * before it is failed. 0, or a message and CLI_EXIT_USAGE.
 */
int cli_take_member_timeout(int *argc, char **argv);
/* Whether two names are one device: one file (by identity) or one NBD export (by URI). */
bool cli_same_device(const char *a, const char *b);
/* What --member-timeout set, in milliseconds; 0: not given (30 s). */
unsigned cli_member_timeout_ms(void);
/* Refuses one file or device given twice (by identity, not name). 0 or CLI_EXIT_FAILURE. */
int cli_paths_distinct(char *const *paths, int n);
/* what PATH must be an existing directory ("mount point", "--upper"). 0 or CLI_EXIT_FAILURE. */
int cli_check_dir(const char *what, const char *path);
/*
 * A path's open, stat or ioctl failed with err (positive): the message,
 * and CLI_EXIT_FAILURE. ENOTCONN is a mount whose daemon is gone (killed,
 * crashed): "MNT: stale mount: run umount first", MNT the mount the path
 * is on; ENOTTY (an ioctl pony's mounts answer) says it is not a pony
 * mount; the rest is "PATH: strerror". Every command that takes a path on
 * a mount reports through here.
 */
int cli_path_error(const char *path, int err);

/* mountinfo.c: one mount of /proc/self/mountinfo, escapes undone. */
struct cli_mount {
	const char *target, *type, *source;
};
/* Calls fn on each mount until it returns non-zero, which is returned. */
int cli_mountinfo_foreach(int (*fn)(const struct cli_mount *m, void *arg), void *arg);
/* The mount point path is on (PATH_MAX in ret), found without touching path; else path. */
void cli_mount_point_of(const char *path, char *ret);

/*
 * A daemon's log (mount, union mount, mount-host, vol expose): its events
 * (a member failed, a checksum repaired, a commit failed ...) go to syslog,
 * the journal where it runs, and also to FILE when --log FILE was given,
 * one line each (util_log); in the foreground on stderr as well, as
 * systemd's services do. 0, or a message printed and CLI_EXIT_FAILURE.
 */
int cli_log_open(const char *cmd, const char *file, bool foreground);
#define CLI_LOG_HELP "--log FILE: the daemon's events (a member failed, a checksum repaired,\n" \
	"a commit failed ...) go to syslog, to FILE too, a line each, and to\n" \
	"stderr in the foreground.\n"

/* True when argv[1..] asks for help ("--help" or "-h"), for commands without getopt. */
bool cli_wants_help(int argc, char **argv);

/*
 * Runs the subcommand argv[1] of `prefix` (e.g. "pony vol") from cmds, or
 * prints the list on --help / no argument. Returns the exit code.
 */
int cli_dispatch(const char *prefix, const struct cli_command *const *cmds, size_t n,
		 int argc, char **argv);

#endif
