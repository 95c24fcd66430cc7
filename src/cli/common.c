/*
 * common.c - error reporting and subcommand dispatch shared by every
 * `pony` command, so each command file holds only its own options and work.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("pony: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return CLI_EXIT_FAILURE;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry '%s --help'.\n", cmd);
	va_end(ap);
	return CLI_EXIT_USAGE;
}

bool cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

static void dispatch_usage(FILE *out, const char *prefix,
			   const struct cli_command *const *cmds, size_t n)
{
	fprintf(out, "Usage: %s COMMAND [OPTIONS] [ARGS]\n\nCommands:\n", prefix);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  %-12s %s\n", cmds[i]->name, cmds[i]->summary);
	fprintf(out, "\nRun '%s COMMAND --help' for a command's options.\n", prefix);
}

int cli_dispatch(const char *prefix, const struct cli_command *const *cmds, size_t n,
		 int argc, char **argv)
{
	if (argc < 2) {
		dispatch_usage(stderr, prefix, cmds, n);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		dispatch_usage(stdout, prefix, cmds, n);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(argv[1], cmds[i]->name))
			return cmds[i]->run(argc - 1, argv + 1);
	return cli_usage_error(prefix, "unknown command '%s'", argv[1]);
}
