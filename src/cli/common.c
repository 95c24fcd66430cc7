/*
 * common.c - error reporting and subcommand dispatch shared by every
 * `pony` command, so each command file holds only its own options and work.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <syslog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "cli.h"
#include "pony/util.h"

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

int cli_log_open(const char *cmd, const char *file, bool foreground)
{
	int r = util_log_open("pony", file, UTIL_LOG_SYSLOG | (foreground ? UTIL_LOG_STDERR : 0));

	if (r < 0)
		return cli_error("%s: --log %s: %s", cmd, file, strerror(-r));
	return 0;
}

int cli_path_error(const char *path, int err)
{
	char mnt[PATH_MAX];

	switch (err) {
	case ENOTCONN:
		/* FUSE's answer once the daemon is gone: nothing on the mount
		 * works until it is unmounted, so say that, not "Transport
		 * endpoint is not connected". */
		cli_mount_point_of(path, mnt);
		return cli_error("%s: stale mount: run umount first", mnt);
	case ENOTTY:
		return cli_error("%s: %s (not on a pony mount?)", path, strerror(err));
	default:
		return cli_error("%s: %s", path, strerror(err));
	}
}

int cli_check_dir(const char *what, const char *path)
{
	struct statfs sfs;
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == ENOTCONN ? cli_path_error(path, ENOTCONN)
					 : cli_error("%s %s: %s", what, path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_error("%s %s: not a directory", what, path);
	/* A dead FUSE mount answers stat() from the kernel's cache of its
	 * attributes; statfs() always asks the daemon. */
	if (statfs(path, &sfs) < 0 && errno == ENOTCONN)
		return cli_path_error(path, ENOTCONN);
	return 0;
}

/* Decimal, or hexadecimal after 0x; nothing else, not even a sign or a space. */
static int parse_u64(const char *text, uint64_t *ret)
{
	bool hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
	const char *digits = hex ? text + 2 : text;
	char *end;
	uint64_t v;

	if (!*digits || !(hex ? isxdigit((unsigned char)*digits) : isdigit((unsigned char)*digits)))
		return -EINVAL;
	errno = 0;
	v = strtoull(digits, &end, hex ? 16 : 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*ret = v;
	return 0;
}

static int number_error(const char *cmd, const char *opt, const char *text, int r,
			const char *what, uint64_t min, uint64_t max)
{
	if (r == -ERANGE)
		return cli_usage_error(cmd, "%s: '%s' is out of range (%" PRIu64 " to %" PRIu64 ")", opt,
				       text, min, max);
	return cli_usage_error(cmd, "%s: '%s' is not %s", opt, text, what);
}

int cli_parse_uint(const char *cmd, const char *opt, const char *text, uint64_t min, uint64_t max,
		   uint64_t *ret)
{
	uint64_t v;
	int r = parse_u64(text, &v);

	if (r >= 0 && (v < min || v > max))
		r = -ERANGE;
	if (r < 0)
		return number_error(cmd, opt, text, r, "a number", min, max);
	*ret = v;
	return 0;
}

int cli_parse_unsigned(const char *cmd, const char *opt, const char *text, unsigned min,
		       unsigned max, unsigned *ret)
{
	uint64_t v;
	int r = cli_parse_uint(cmd, opt, text, min, max, &v);

	if (!r)
		*ret = (unsigned)v;
	return r;
}

int cli_parse_size(const char *cmd, const char *opt, const char *text, uint64_t min, uint64_t max,
		   uint64_t align, uint64_t *ret)
{
	uint64_t v;
	int r = util_parse_size(text, &v);

	if (r >= 0 && (v < min || v > max))
		r = -ERANGE;
	if (r < 0)
		return number_error(cmd, opt, text, r, "a size (4096, 64K, 1M, 2G ...)", min, max);
	if (align > 1 && v % align)
		return cli_usage_error(cmd, "%s: '%s' is not a multiple of %" PRIu64, opt, text, align);
	*ret = v;
	return 0;
}

int cli_parse_seconds(const char *cmd, const char *opt, const char *text, double min, double max,
		      double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (!*text || *end || isspace((unsigned char)*text) || errno || isnan(v))
		return cli_usage_error(cmd, "%s: '%s' is not a number of seconds", opt, text);
	if (v < min || v > max)
		return cli_usage_error(cmd, "%s: '%s' is out of range (%g to %g seconds)", opt, text,
				       min, max);
	*ret = v;
	return 0;
}
