/* cmd_acall.h - what the two files of `pony acall` share. */
#ifndef PONY_CLI_CMD_ACALL_H
#define PONY_CLI_CMD_ACALL_H

#include "pony/acall.h"

/* `pony acall bench` (cmd_acall_bench.c). */
int acall_bench_run(int argc, char **argv);
/* "auto", "uring", "workers" -> *ret_path; -EINVAL otherwise. */
int acall_parse_path(const char *text, enum acall_path *ret_path);

#endif
