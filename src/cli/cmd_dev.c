/*
 * cmd_dev.c - `pony dev`: the device discovery database's commands. This
 * file dispatches; probing is in cmd_dev_probe.c, the database commands in
 * cmd_dev_db.c, watching in cmd_dev_watch.c.
 */
#include "cli.h"
#include "cmd_dev.h"

static const struct cli_command probe_cmd = {
	.name = "probe", .summary = "show what is on devices or image files (blkid -p)",
	.run = dev_probe_run,
};

static const struct cli_command watch_cmd = {
	.name = "watch", .summary = "keep the database current from udev and inotify events",
	.run = dev_watch_run,
};

static const struct cli_command *const dev_cmds[] = {
	&probe_cmd, &dev_scan_cmd, &dev_find_cmd, &dev_list_cmd, &dev_show_cmd,
	&dev_register_cmd, &dev_forget_cmd, &watch_cmd,
};

static int dev_run(int argc, char **argv)
{
	return cli_dispatch("pony dev", dev_cmds, ARRAY_SIZE(dev_cmds), argc, argv);
}

const struct cli_command cli_dev_command = {
	.name = "dev",
	.summary = "device discovery: probe, scan, find by LABEL/UUID",
	.run = dev_run,
};
