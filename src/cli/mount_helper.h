/*
 * mount_helper.h - pony as mount(8)'s helper (cmd_mount_helper.c): the
 * names it is run under, mount(8)'s own options, which neither ponyfs nor
 * the union may pass to the kernel, and a remount handed back to mount(8).
 */
#ifndef PONY_CLI_MOUNT_HELPER_H
#define PONY_CLI_MOUNT_HELPER_H

#include <stdbool.h>

/*
 * When pony runs as a mount helper, runs it and returns its exit code:
 * argv[0] named mount.fuse.pony or mount.fuse.pony-union (mount(8) runs
 * them from /sbin), or pony-union (mount.fuse3 runs `pony-union SRC MNT -o
 * OPTS` for fuse.pony-union), or `pony SRC MNT -o OPTS` (mount.fuse3, for
 * fuse.pony). -1: not a helper call, pony's own command line.
 */
int cli_mount_helper_main(int argc, char **argv);

/*
 * mount(8)'s and mount.fuse3's bookkeeping (defaults, auto, noauto, nofail,
 * _netdev, user, users, owner, group, loop, x-*, X-*, comment=...): for
 * them, never for the kernel, so a helper drops them.
 */
bool cli_mount_opt_is_bookkeeping(const char *o);

/*
 * mount(8) runs the helper for `mount -o remount,...` too: the kernel
 * changes a FUSE mount's flags itself, so this commits a ponyfs first (a
 * remount syncs a kernel filesystem; a union just remounts) and runs
 * `mount -i` (no helper) with opts. Returns only on failure, with a CLI
 * exit code.
 */
int cli_mount_remount(const char *mountpoint, const char *opts);

#endif
