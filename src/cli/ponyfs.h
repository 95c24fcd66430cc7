/*
 * ponyfs.h - what the ponyfs command files share: the mount(8) side of
 * `pony mount` (cmd_ponyfs_helper.c), used by cmd_ponyfs.c and
 * cmd_mount_helper.c, and the member images of a volume named by UUID= or
 * LABEL=, looked up in devdb (cmd_ponyfs_find.c).
 */
#ifndef PONY_CLI_PONYFS_H
#define PONY_CLI_PONYFS_H

#include <stdbool.h>
#include <stddef.h>

struct ponyfs_options;
struct ponyfuse_options;

/* mount(8)'s -o options, sorted: what pony itself takes, and the rest for libfuse. */
struct mount_opts {
	bool format;                    /* format: mkfs an all-zero image first */
	bool format_foreign;            /* format=foreign: also one that is not pony's */
	bool remount;                   /* mount(8)'s -o remount: not a new mount */
	char subtype[64];               /* -o subtype=: the type fuse.SUBTYPE ("": fuse) */
	char fuse[1024];                /* for libfuse, comma-separated */
};

/*
 * Sorts a -o list (given several times: appended) into po, fo and m. Pony's
 * own: commit=MS, format, ro (also libfuse's), relatime, strictatime, noatime
 * (also libfuse's); mount(8)'s bookkeeping
 * (defaults, auto, nofail, _netdev, user...) is dropped; the rest goes to
 * libfuse. Returns 0 or CLI_EXIT_USAGE after a message.
 */
int cli_ponyfs_mount_opts(const char *list, struct ponyfs_options *po,
			  struct ponyfuse_options *fo, struct mount_opts *m);

/*
 * Waits (up to a minute) for an exclusive lock on every image and keeps it
 * until the process exits: the previous daemon of the same images may still
 * be writing its last commit after umount(8) returned. 0 or CLI exit code.
 */
int cli_ponyfs_lock_images(char **paths, int n);

/*
 * When a pony daemon already serves the image at path, bind-mounts that
 * mount at mountpoint (read-only if asked) and sets *ret_bound: a second
 * daemon would corrupt the image. 0 or a CLI error (printed).
 */
int cli_ponyfs_bind_existing(const char *path, const char *mountpoint, bool read_only,
			     bool *ret_bound);

/*
 * mkfs of path when its first MiB is all zeros, or (foreign) when it holds
 * no ponyfs or pony volume superblock (a test's scratch device that a test
 * made a swap device of). A damaged ponyfs is never formatted: its mount
 * fails instead. 0 or CLI exit code.
 */
int cli_ponyfs_format(const char *path, bool foreign);

/*
 * `pony mount` (argv as its own: argv[0] "mount", then options, images and
 * MNT) with fsname as the mount's source in /proc/mounts, not the first
 * image: mount(8)'s helper call keeps the source as fstab spells it.
 */
int cli_ponyfs_mount_as(const char *fsname, int argc, char **argv);

/* UUID=... or LABEL=...: a volume named through devdb, not a path. */
bool cli_ponyfs_is_spec(const char *arg);
/* The present members' paths (malloc'd, each too) in *ret_paths; a CLI exit code. */
int cli_ponyfs_find_members(const char *spec, char ***ret_paths, int *ret_n, int max);

#endif
