/*
 * cmd_dev.h - what the `pony dev` command files share: output forms and the
 * subcommands' entry points (cmd_dev.c dispatches, cmd_dev_probe.c probes).
 */
#ifndef PONY_CMD_DEV_H
#define PONY_CMD_DEV_H

#include <stdbool.h>

#include "pony/devdb.h"
#include "pony/util.h"

enum dev_output { DEV_OUT_FULL, DEV_OUT_UDEV, DEV_OUT_EXPORT, DEV_OUT_JSON, DEV_OUT_DEVICE };

/* "udev", "export", "json", "device", "full"; 0 or -EINVAL. */
int dev_parse_output(const char *arg, enum dev_output *ret);
/* One device's tags in the chosen form; first tracks blank lines between devices. */
void dev_print_dev(const char *path, const struct devdb_tags *tags, enum dev_output out,
		   bool *first);

int dev_probe_run(int argc, char **argv);
int dev_watch_run(int argc, char **argv);

struct cli_command;
extern const struct cli_command dev_scan_cmd, dev_find_cmd, dev_list_cmd, dev_show_cmd,
	dev_register_cmd, dev_forget_cmd;

#endif
