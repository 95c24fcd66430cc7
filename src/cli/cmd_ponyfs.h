/*
 * cmd_ponyfs.h - what cmd_ponyfs.c takes from cmd_ponyfs_find.c: member
 * images of a pony volume named by UUID= or LABEL=, looked up in devdb.
 */
#ifndef PONY_CMD_PONYFS_H
#define PONY_CMD_PONYFS_H

#include <stdbool.h>

bool cli_ponyfs_is_spec(const char *arg);
/* The present members' paths (malloc'd, each too) in *ret_paths; a CLI exit code. */
int cli_ponyfs_find_members(const char *spec, char ***ret_paths, int *ret_n, int max);

#endif
