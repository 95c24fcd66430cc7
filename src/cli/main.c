/*
 * main.c - the `pony` binary: one subcommand per component. The table below
 * is the whole list; each command lives in its own cmd_<component>.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mount_helper.h"
#include "union_opts.h"

static int version_run(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		printf("Usage: pony version\nPrints pony's version.\n");
		return CLI_EXIT_OK;
	}
	printf("pony %s\n", PONY_VERSION);
	return CLI_EXIT_OK;
}

static const struct cli_command version_command = {
	.name = "version",
	.summary = "print pony's version",
	.run = version_run,
};

static const struct cli_command *const commands[] = {
	&acall_command,
	&version_command,
	&cli_dev_command,
	&cli_fs_command,
	&cli_union_command,
	&cli_mkfs_command,
	&cli_mount_command,
	&cli_fsck_command,
	&cli_barrier_command,
	&cli_sync_command,
	&cli_stat_command,
	&cli_shutdown_command,
	&cli_vol_command,
	&cli_crypt_command,
};

int main(int argc, char **argv)
{
	const char *self = argv[0] ? strrchr(argv[0], '/') : NULL;
	int r;

	/* Installed as a link named pony-overlayfs: fuse-overlayfs's command
	 * line, for podman's mount_program (cmd_union_opts.c). */
	self = self ? self + 1 : argv[0];
	if (self && !strcmp(self, "pony-overlayfs"))
		return cli_union_overlayfs_main(argc, argv);
	r = cli_take_member_timeout(&argc, argv);
	if (r)
		return r;
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
		return version_run(1, argv);
	/* mount(8)'s helper: mount.fuse.pony, pony-union, `pony SRC MNT -o OPTS`. */
	r = cli_mount_helper_main(argc, argv);
	if (r >= 0)
		return r;
	return cli_dispatch("pony", commands, sizeof(commands) / sizeof(commands[0]),
			    argc, argv);
}
