/*
 * cmd_acall.c - `pony acall`: look at and measure the asynchronous call
 * engine. `routes` shows where each op runs on this kernel, `mkfiles`
 * creates a tree of small files through batched acall ops (the statx
 * benchmark's input), `bench` (cmd_acall_bench.c) runs an op mix and prints
 * throughput.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_acall.h"
#include "table.h"
#include "pony/util.h"

int acall_parse_path(const char *text, enum acall_path *ret_path)
{
	if (!strcmp(text, "auto"))
		*ret_path = ACALL_PATH_AUTO;
	else if (!strcmp(text, "uring"))
		*ret_path = ACALL_PATH_URING;
	else if (!strcmp(text, "workers"))
		*ret_path = ACALL_PATH_WORKERS;
	else
		return -EINVAL;
	return 0;
}

static const char *path_name(enum acall_path p)
{
	return p == ACALL_PATH_URING ? "uring" : p == ACALL_PATH_WORKERS ? "workers" : "auto";
}

/*
 * The ring as a record (IO_URING: whether this kernel gave one) and its
 * routes, one line an op, OP and PATH (uring or workers): for people two
 * tables, with json one object {"ring": [{"io_uring": true}], "routes":
 * [{"op": "read", "path": "uring"}, ...]}.
 */
static int routes_print(struct acall_ring *ring, bool json)
{
	struct cli_record *rec = cli_record_new("ring", json);
	struct cli_table *t = cli_table_new("routes", json);

	cli_record_set_bool(rec, "IO_URING", acall_ring_has_uring(ring));
	cli_table_column(t, "OP", 0);
	cli_table_column(t, "PATH", 0);
	for (unsigned op = 1; op < ACALL_OP__MAX; op++) {
		struct cli_table_line *ln = cli_table_line(t, NULL);

		cli_table_set(ln, 0, "%s", acall_opcode_name(op));
		cli_table_set(ln, 1, "%s", path_name(acall_ring_route(ring, op)));
	}
	return cli_tables_print((struct cli_table *[]){ cli_record_table(rec), t }, 2);
}

static int routes_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "path", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct acall_ring_params params = { .workers = 1 };
	_cleanup_(acall_ring_freep) struct acall_ring *ring = NULL;
	bool json = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "jp:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'p':
			if (acall_parse_path(optarg, &params.path) < 0)
				return cli_usage_error("pony acall routes", "bad path '%s'", optarg);
			break;
		case 'h':
			printf("Usage: pony acall routes [--path auto|uring|workers] [--json]\n"
			       "Shows where each acall op runs on this kernel: io_uring or pony's\n"
			       "worker threads (the table in src/acall/route.c, after probing).\n");
			return CLI_EXIT_OK;
		default:
			return cli_usage_error("pony acall routes", "bad option");
		}
	}
	if (optind != argc)
		return cli_usage_error("pony acall routes", "unexpected argument '%s'", argv[optind]);
	r = acall_ring_new(&params, &ring);
	if (r < 0)
		return cli_error("cannot set up an acall ring: %s", strerror(-r));
	return routes_print(ring, json);
}

/* Creates dir/dNNN/fNNNNN: count empty files, 1000 a directory, with
 * batched openat(O_CREAT)+close ops. */
static int mkfiles(struct acall_ring *ring, int dfd, unsigned long count)
{
	enum { BATCH = 256 };
	static char names[BATCH][32];
	struct acall_op *done[BATCH];

	for (unsigned long i = 0; i < count; i += BATCH) {
		unsigned n = (unsigned)MIN((unsigned long)BATCH, count - i);

		for (unsigned k = 0; k < n; k++) {
			unsigned long f = i + k;

			if (f % 1000 == 0) {
				snprintf(names[k], sizeof(names[k]), "d%03lu", f / 1000);
				if (mkdirat(dfd, names[k], 0755) < 0 && errno != EEXIST)
					return -errno;
			}
			snprintf(names[k], sizeof(names[k]), "d%03lu/f%05lu", f / 1000, f);
			acall_prep_openat(acall_get_op(ring), dfd, names[k],
					  O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		}
		acall_submit(ring);
		for (unsigned got = 0; got < n;) {
			int m = acall_wait_batch(ring, done, BATCH, 1);

			if (m < 0)
				return m;
			for (int k = 0; k < m; k++) {
				int64_t fd = acall_op_result(done[k]);

				acall_op_done(ring, done[k]);
				if (fd < 0)
					return (int)fd;
				acall_prep_close(acall_get_op(ring), (int)fd);
			}
			got += (unsigned)m;
		}
		acall_submit(ring);
		for (unsigned got = 0; got < n;) {
			int m = acall_wait_batch(ring, done, BATCH, 1);

			if (m < 0)
				return m;
			for (int k = 0; k < m; k++)
				acall_op_done(ring, done[k]);
			got += (unsigned)m;
		}
	}
	return 0;
}

static int mkfiles_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	_cleanup_(acall_ring_freep) struct acall_ring *ring = NULL;
	_cleanup_(closep) int dfd = -1;
	uint64_t count = 1000;
	int c, r;

	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (cli_parse_uint("pony acall mkfiles", "--count", optarg, 1, 10000000, &count))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			printf("Usage: pony acall mkfiles [--count N] DIR\n"
			       "Creates N empty files under DIR (1000 a subdirectory), with\n"
			       "batched acall openat/close ops: the statx benchmark's tree.\n");
			return CLI_EXIT_OK;
		default:
			return cli_usage_error("pony acall mkfiles", "bad option");
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error("pony acall mkfiles", "expected one directory");
	if (mkdir(argv[optind], 0755) < 0 && errno != EEXIST)
		return cli_error("cannot create %s: %m", argv[optind]);
	dfd = open(argv[optind], O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
		return cli_error("cannot open %s: %m", argv[optind]);
	r = acall_ring_new(NULL, &ring);
	if (r >= 0)
		r = mkfiles(ring, dfd, count);
	if (r < 0)
		return cli_error("mkfiles %s: %s", argv[optind], strerror(-r));
	printf("created %lu files under %s\n", count, argv[optind]);
	return CLI_EXIT_OK;
}

static const struct cli_command bench_cmd = {
	.name = "bench", .summary = "run an op mix against a path, print throughput",
	.run = acall_bench_run,
};
static const struct cli_command routes_cmd = {
	.name = "routes", .summary = "show where each op runs (io_uring or workers)",
	.run = routes_run,
};
static const struct cli_command mkfiles_cmd = {
	.name = "mkfiles", .summary = "create a tree of N empty files (statx input)",
	.run = mkfiles_run,
};
static const struct cli_command *const acall_cmds[] = { &bench_cmd, &routes_cmd, &mkfiles_cmd };

static int acall_run_cmd(int argc, char **argv)
{
	return cli_dispatch("pony acall", acall_cmds, ARRAY_SIZE(acall_cmds), argc, argv);
}

const struct cli_command acall_command = {
	.name = "acall",
	.summary = "asynchronous calls: routes, benchmarks",
	.run = acall_run_cmd,
};
