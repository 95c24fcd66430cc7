/*
 * union_opts.h - a union mount's settings as the command line gives them:
 * pony's own flags (cmd_union.c) and fuse-overlayfs's -o list
 * (cmd_union_opts.c), which `pony union mount -o` and `pony-overlayfs`
 * (podman's mount_program) both take.
 */
#ifndef PONY_CLI_UNION_OPTS_H
#define PONY_CLI_UNION_OPTS_H

#include <stdbool.h>

#include "pony/fuse.h"
#include "pony/union.h"

struct union_mount {
	struct union_config cfg;
	struct ponyfuse_options opts;
	const char *lowers[UNION_MAX_LOWERS];
	struct union_idmap uidmap[UNION_MAX_IDMAPS], gidmap[UNION_MAX_IDMAPS];
	char *owned[2 * UNION_MAX_LOWERS + 8]; /* strings the parser made (freed) */
	unsigned nowned;
	char fuse_opts[1024];           /* kernel mount options, comma-separated */
	bool squash_root;               /* squash_to_root: 0 unless _to_uid/gid */
	bool xattr_auto;                /* user. xattrs without the privilege
					 * for trusted. (set by any -o list) */
	const char *fsname;             /* the source /proc/mounts shows; NULL:
					 * the upper, else the top lower */
	const char *log_file;
};

/* Defaults (pony's: one thread, a day's cache, no writeback). */
void cli_union_mount_init(struct union_mount *m);
void cli_union_mount_done(struct union_mount *m);

/*
 * One -o list, fuse-overlayfs's options (docs/union.md has the table):
 * lowerdir=A:B (\: escapes a colon), upperdir=, workdir=, uidmapping=,
 * gidmapping=, squash_to_root, squash_to_uid=, squash_to_gid=,
 * static_nlink, noacl, volatile, fsync=, timeout=, threaded=, debug,
 * writeback=, the kernel's mount flags, and the rest; mount(8)'s own
 * (defaults, nofail, x-*...) are dropped. Options pony cannot honour exactly are
 * refused by name. 0, or a message printed and
 * CLI_EXIT_USAGE.
 */
int cli_union_mount_opts(const char *cmd, const char *list, struct union_mount *m);

/* A lower list "A:B:C" (top first; "\\:" is a colon in a name) into m. */
int cli_union_mount_lowers(const char *cmd, const char *key, const char *spec,
			   struct union_mount *m);

/*
 * What only the whole command line decides (squash_to_root against
 * squash_to_uid/gid, trusted. or user. xattrs, ro without an upper), then
 * checks of the directories named. 0, or a message and an exit code.
 */
int cli_union_mount_finish(const char *cmd, struct union_mount *m);

/*
 * Checks the layers and mount point (cli_union_mount_finish), builds the union and serves it (until
 * unmounted, or daemonized). Returns a CLI exit code.
 */
int cli_union_mount_serve(const char *cmd, struct union_mount *m, const char *mountpoint);

/* Whether the host kernel runs SELinux (selinuxfs registered). */
bool cli_union_host_has_selinux(void);

/* `pony-overlayfs`: fuse-overlayfs's command line (cmd_union_opts.c). */
int cli_union_overlayfs_main(int argc, char **argv);

#endif
