/*
 * cmd_ponyfs_ioctl.c - the ponyfs calls FUSE does not carry, made through
 * the mount's ioctls (include/pony/fuse.h): `pony barrier FILE` (fbarrier),
 * `pony sync MNT` (commit now: syncfs(2) never reaches a FUSE daemon),
 * `pony stat --fields LIST FILE` (statx light: only the fields asked for are
 * computed, DONT_SYNC flushes nothing; a record, table.c, or its JSON with
 * --json; --counters shows the work counters
 * that prove it) and `pony shutdown MNT` (a power cut, as fstests' godown).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "pony/fuse.h"
#include "pony/util.h"
#include "table.h"

/* One ioctl on path (a file or a directory of a pony mount). */
static int path_ioctl(const char *path, unsigned long cmd, void *arg)
{
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 || ioctl(fd, cmd, arg) < 0)
		return cli_path_error(path, errno);
	return CLI_EXIT_OK;
}

/* The commands that make one argument-less ioctl on each PATH. */
static uint32_t goingdown_cut = PONYFUSE_GOINGDOWN_NOLOGFLUSH;

static const struct path_command {
	const char *name;
	unsigned long cmd;
	void *arg;
	const char *usage;
} path_commands[] = {
	{ "barrier", PONYFUSE_IOC_BARRIER, NULL,
	  "Usage: pony barrier FILE...\n"
	  "fbarrier: FILE's data written so far reaches the disk before any\n"
	  "later metadata change of its filesystem, without waiting for it now.\n" },
	{ "sync", PONYFUSE_IOC_SYNCFS, NULL,
	  "Usage: pony sync PATH...\n"
	  "Writes back and commits the ponyfs mounted at (or holding) PATH:\n"
	  "syncfs(2) and sync(1) never reach a FUSE daemon.\n" },
	{ "shutdown", PONYFUSE_IOC_GOINGDOWN, &goingdown_cut,
	  "Usage: pony shutdown MNT\n"
	  "Cuts the power of the ponyfs at MNT (XFS_IOC_GOINGDOWN, as fstests'\n"
	  "godown): nothing more reaches its images, every later call fails\n"
	  "with EIO, and the next mount finds the last committed state.\n" },
};

static int path_command_run(int argc, char **argv)
{
	const struct path_command *c = NULL;
	int r = CLI_EXIT_OK;

	for (size_t i = 0; i < ARRAY_SIZE(path_commands) && !c; i++)
		if (!strcmp(argv[0], path_commands[i].name))
			c = &path_commands[i];
	if (!c)
		return cli_usage_error(argv[0], "unknown command");
	if (cli_wants_help(argc, argv)) {
		printf("%s", c->usage);
		return CLI_EXIT_OK;
	}
	if (argc < 2)
		return cli_usage_error(argv[0], "a PATH is needed");
	for (int i = 1; i < argc && r == CLI_EXIT_OK; i++)
		r = path_ioctl(argv[i], c->cmd, c->arg);
	return r;
}

enum field_kind { F_U64, F_OCT, F_TIME };
struct field {
	const char *name;
	unsigned mask;
	enum field_kind kind;
	size_t off;                     /* in struct statx */
};
#define FIELD(n, m, k, member) { n, m, k, offsetof(struct statx, member) }
static const struct field fields[] = {
	FIELD("size", STATX_SIZE, F_U64, stx_size),
	FIELD("blocks", STATX_BLOCKS, F_U64, stx_blocks),
	FIELD("mode", STATX_TYPE | STATX_MODE, F_OCT, stx_mode),
	FIELD("nlink", STATX_NLINK, F_U64, stx_nlink),
	FIELD("uid", STATX_UID, F_U64, stx_uid),
	FIELD("gid", STATX_GID, F_U64, stx_gid),
	FIELD("ino", STATX_INO, F_U64, stx_ino),
	FIELD("atime", STATX_ATIME, F_TIME, stx_atime),
	FIELD("mtime", STATX_MTIME, F_TIME, stx_mtime),
	FIELD("ctime", STATX_CTIME, F_TIME, stx_ctime),
	FIELD("btime", STATX_BTIME, F_TIME, stx_btime),
};

static const struct field *field_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (!strcmp(fields[i].name, name))
			return &fields[i];
	return NULL;
}

/* A field of the record: times as seconds.nanoseconds, the mode in octal
 * (a string: JSON has no octal), the rest as numbers. */
static void field_set(struct cli_record *r, const struct field *f, const struct statx *x)
{
	const char *p = (const char *)x + f->off;

	switch (f->kind) {
	case F_TIME: {
		const struct statx_timestamp *t = (const void *)p;

		cli_record_set(r, f->name, CLI_COL_NUMBER, "%lld.%09u", (long long)t->tv_sec,
			       t->tv_nsec);
		break;
	}
	case F_OCT:
		cli_record_set(r, f->name, 0, "0%o", *(const uint16_t *)p);
		break;
	default:
		/* stx_nlink, stx_uid, stx_gid are 32 bits, the rest 64. */
		cli_record_set_u64(r, f->name, f->mask & (STATX_NLINK | STATX_UID | STATX_GID)
				   ? *(const uint32_t *)p : *(const uint64_t *)p);
	}
}

/* Parses "size,mtime" into the mask and the fields in order. */
static int fields_parse(char *list, const struct field **out, size_t *n, uint32_t *mask)
{
	char *save = NULL;

	*n = 0;
	for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		const struct field *f = field_find(w);

		if (!f || *n == ARRAY_SIZE(fields))
			return cli_usage_error("pony stat", "unknown or repeated field '%s'", w);
		out[(*n)++] = f;
		*mask |= f->mask;
	}
	return *n ? 0 : cli_usage_error("pony stat", "no fields given");
}

static int stat_run(int argc, char **argv)
{
	struct ponyfuse_statx_arg a = { 0 };
	const struct field *want[ARRAY_SIZE(fields)];
	char deflt[] = "size,blocks,mode,nlink,uid,gid,ino,atime,mtime,ctime,btime";
	char *list = deflt;
	bool counters = false, json = false;
	struct cli_record *rec;
	size_t n;
	int c, r;

	static const struct option longopts[] = {
		{ "fields", required_argument, NULL, 'F' },
		{ "dont-sync", no_argument, NULL, 'D' },
		{ "force-sync", no_argument, NULL, 'S' },
		{ "counters", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'F': list = optarg; break;
		case 'D': a.flags |= AT_STATX_DONT_SYNC; break;
		case 'S': a.flags |= AT_STATX_FORCE_SYNC; break;
		case 'c': counters = true; break;
		case 'j': json = true; break;
		case 'h':
			printf("Usage: pony stat [--fields F,F...] [--dont-sync|--force-sync] [--json] PATH\n"
			       "       pony stat --counters PATH\n"
			       "statx light on a pony mount: the filesystem computes only the\n"
			       "fields asked for (%s),\n"
			       "and with --dont-sync flushes and waits for nothing. A FIELD VALUE\n"
			       "line each (times in seconds.nanoseconds, mode in octal); --json: as\n"
			       "JSON, {\"stat\": [{\"size\": ..., ...}]}. --counters prints the filesystem's work\n"
			       "counters instead (extent_walks, data_flushes, commits, meta_chunks...)\n"
			       "and commit_error: none, or the errno of the failed commit that made\n"
			       "the filesystem read-only.\n", deflt);
			return CLI_EXIT_OK;
		default: return cli_usage_error("pony stat", "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("pony stat", "one PATH is needed");
	if (counters) {
		struct ponyfuse_counters_arg ca;

		r = path_ioctl(argv[optind], PONYFUSE_IOC_COUNTERS, &ca);
		if (r == CLI_EXIT_OK)
			printf("%.*s", (int)sizeof(ca.text), ca.text);
		return r;
	}
	r = fields_parse(list, want, &n, &a.mask);
	if (r)
		return r;
	r = path_ioctl(argv[optind], PONYFUSE_IOC_STATX, &a);
	if (r)
		return r;
	rec = cli_record_new("stat", json);
	for (size_t i = 0; i < n; i++)
		field_set(rec, want[i], &a.stx);
	return cli_record_print(rec);
}

const struct cli_command cli_barrier_command = {
	.name = "barrier",
	.summary = "fbarrier of files on a ponyfs mount",
	.run = path_command_run,
};

const struct cli_command cli_sync_command = {
	.name = "sync",
	.summary = "commit a ponyfs mount now",
	.run = path_command_run,
};

const struct cli_command cli_stat_command = {
	.name = "stat",
	.summary = "statx light on a ponyfs mount: only the fields asked for",
	.run = stat_run,
};

const struct cli_command cli_shutdown_command = {
	.name = "shutdown",
	.summary = "cut a ponyfs mount's power (as fstests' godown)",
	.run = path_command_run,
};
