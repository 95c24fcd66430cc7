/*
 * cmd_dev_db.c - the `pony dev` commands that use the database: scan, find
 * (findfs-style: prints the path, exit 1 when nothing is found), list,
 * show (a record, table.c), register and forget. Every one takes --db PATH (else $PONY_DEVDB,
 * else /var/lib/pony/devdb.sqlite) and --help; list, show, find and scan
 * take --json.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pony/bdev.h"
#include "cmd_dev.h"
#include "table.h"

struct dev_opts {
	const char *db;
	bool json, force, all, duplicates;
};

/* Common options; returns optind, or -exit code. */
static int dev_getopt(int argc, char **argv, const char *cmd, void (*usage)(FILE *),
		      struct dev_opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' }, { "json", no_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' }, { "all", no_argument, NULL, 'a' },
		{ "duplicates", no_argument, NULL, 'D' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'j': o->json = true; break;
		case 'f': o->force = true; break;
		case 'a': o->all = true; break;
		case 'D': o->duplicates = true; break;
		case 'h':
			usage(stdout);
			return -CLI_EXIT_OK - 1000;
		default:
			fprintf(stderr, "Try '%s --help'.\n", cmd);
			return -CLI_EXIT_USAGE;
		}
	}
	return optind;
}

#define DEV_GETOPT(cmd, usage, o)                                               \
	do {                                                                    \
		int _i = dev_getopt(argc, argv, cmd, usage, o);                 \
		if (_i == -CLI_EXIT_OK - 1000)                                  \
			return CLI_EXIT_OK;                                     \
		if (_i < 0)                                                     \
			return -_i;                                             \
		argc -= _i;                                                     \
		argv += _i;                                                     \
	} while (0)

static int open_db(const struct dev_opts *o, struct devdb **ret)
{
	int r = devdb_open(o->db, 0, ret);

	if (r < 0)
		cli_error("cannot open the device database %s: %s",
			  o->db ? o->db : getenv("PONY_DEVDB") ? getenv("PONY_DEVDB") : DEVDB_DEFAULT_PATH,
			  strerror(-r));
	return r;
}

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	struct util_progress *p = ctx;

	p->total = total;
	util_progress_update(p, done);
}

/* A scan's totals, a record: {"scan": [{"probed": N, ...}]} with --json. */
static int scan_print(const struct devdb_scan_stats *st, uint64_t ns, bool json)
{
	struct cli_record *r = cli_record_new("scan", json);

	cli_record_set_u64(r, "PROBED", st->probed);
	cli_record_set_u64(r, "FOUND", st->found);          /* with a signature */
	cli_record_set_u64(r, "UNCHANGED", st->unchanged);
	cli_record_set_u64(r, "VANISHED", st->vanished);
	cli_record_set_u64(r, "FAILED", st->failed);
	cli_record_set_u64(r, "BYTES_READ", st->bytes_read);
	cli_record_set(r, "SECONDS", CLI_COL_NUMBER, "%.3f", (double)ns / 1e9);
	return cli_record_print(r);
}

static void scan_usage(FILE *f)
{
	fprintf(f, "Usage: pony dev scan [--db PATH] [--force] [--json] [PATH...]\n"
		   "Adds devices to the database: every block device in /sys/class/block, or the\n"
		   "image files, block devices and directories (searched recursively) given.\n"
		   "Unchanged devices (same dev_t, size, mtime, diskseq) are not read again unless\n"
		   "--force; known paths under the scanned directories that are gone are marked\n"
		   "absent. Probing runs in parallel; a progress bar shows on a terminal.\n"
		   "Prints the totals, a FIELD VALUE line each: PROBED, FOUND, UNCHANGED,\n"
		   "VANISHED, FAILED, BYTES_READ, SECONDS; --json: {\"scan\": [{\"probed\": ...}]}.\n");
}

static int scan_run(int argc, char **argv)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	struct dev_opts o = { 0 };
	struct devdb_scan_stats st;
	struct util_progress prog;
	uint64_t t0;
	int r;

	DEV_GETOPT("pony dev scan", scan_usage, &o);
	if (open_db(&o, &db) < 0)
		return CLI_EXIT_FAILURE;
	util_progress_init(&prog, "probing", 0);
	t0 = util_now_ns();
	r = devdb_scan(db, (const char *const *)argv, (size_t)argc, o.force ? DEVDB_SCAN_FORCE : 0,
		       progress_cb, &prog, &st);
	util_progress_done(&prog);
	if (r < 0)
		return cli_error("scan failed: %s", strerror(-r));
	return scan_print(&st, util_now_ns() - t0, o.json);
}

/* "NAME=VALUE" into name/value (strings point into arg, which is modified). */
static int split_term(char *arg, const char **name, const char **value)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg)
		return -EINVAL;
	*eq = '\0';
	*name = arg;
	*value = eq + 1;
	return 0;
}

static const char *dev_state(const struct devdb_dev *d)
{
	return !strcmp(d->kind, "remote") ? "remote" : !d->present ? "absent" :
	       d->status == DEVDB_PROBE_AMBIVALENT ? "ambivalent" : "present";
}

/*
 * Devices a line each (list, find --json): PATH, TYPE, LABEL, UUID and
 * STATE; the JSON has KIND, PRESENT, CONNECT and SIZE too, what a script
 * needs to reach the device ({"devices": [{"path": ..., "kind": ...}]}).
 */
static int print_devs(struct devdb_dev **devs, size_t n, bool json)
{
	struct cli_table *t = cli_table_new("devices", json);
	static const char *const tags[] = { "TYPE", "LABEL", "UUID" };

	cli_table_column(t, "PATH", CLI_COL_WRAP);
	for (size_t c = 0; c < ARRAY_SIZE(tags); c++)
		cli_table_column(t, tags[c], 0);
	cli_table_column(t, "STATE", 0);
	if (json) {
		cli_table_column(t, "KIND", 0);
		cli_table_column(t, "PRESENT", CLI_COL_BOOL);
		cli_table_column(t, "CONNECT", 0);
		cli_table_column(t, "SIZE", CLI_COL_NUMBER);
	}
	for (size_t i = 0; i < n; i++) {
		const struct devdb_dev *d = devs[i];
		struct cli_table_line *ln = cli_table_line(t, NULL);

		cli_table_set(ln, 0, "%s", d->path ? d->path : "?");
		for (size_t c = 0; c < ARRAY_SIZE(tags); c++) {
			const char *v = devdb_tags_get(&d->tags, tags[c]);

			/* people: "-" keeps the column; JSON: null */
			cli_table_set(ln, 1 + (int)c, v ? "%s" : json ? NULL : "-", v);
		}
		cli_table_set(ln, 4, "%s", dev_state(d));
		if (json) {
			cli_table_set(ln, 5, "%s", d->kind);
			cli_table_set_bool(ln, 6, d->present);
			cli_table_set(ln, 7, d->connect ? "%s" : NULL, d->connect);
			cli_table_set_u64(ln, 8, d->size);
		}
	}
	return cli_table_print(t);
}

static void find_usage(FILE *f)
{
	fprintf(f, "Usage: pony dev find [--db PATH] [--all] [--json] NAME=VALUE...\n"
		   "Prints the path of the device whose tags match every NAME=VALUE (LABEL, UUID,\n"
		   "TYPE, PARTUUID, PARTLABEL, any tag), from the index, as findfs(8) does.\n"
		   "A hit is checked with one stat and re-probed alone if it changed. --all prints\n"
		   "every match (devices sharing a UUID are all listed). A device registered but not\n"
		   "connected prints its URI. Exit: 0 found, 1 nothing found (or an error), 2 bad\n"
		   "usage, as findfs(8).\n");
}

static int find_run(int argc, char **argv)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	_cleanup_(freep) const char **names = NULL, **values = NULL;
	struct devdb_dev **devs;
	struct dev_opts o = { 0 };
	size_t n;
	int r;

	DEV_GETOPT("pony dev find", find_usage, &o);
	if (argc < 1)
		return cli_usage_error("pony dev find", "no NAME=VALUE given");
	names = calloc((size_t)argc, sizeof(*names));
	values = calloc((size_t)argc, sizeof(*values));
	if (!names || !values)
		return cli_error("out of memory");
	for (int i = 0; i < argc; i++)
		if (split_term(argv[i], &names[i], &values[i]) < 0)
			return cli_usage_error("pony dev find", "'%s' is not NAME=VALUE", argv[i]);
	if (open_db(&o, &db) < 0)
		return CLI_EXIT_FAILURE;
	r = devdb_find(db, names, values, (size_t)argc, &devs, &n);
	if (r == -ENOENT)
		return CLI_EXIT_NOT_FOUND;      /* findfs: nothing found is exit 1, silently */
	if (r < 0)
		return cli_error("lookup failed: %s", strerror(-r));
	if (o.json) {
		r = print_devs(devs, o.all ? n : 1, true);
	} else {
		r = CLI_EXIT_OK;
		for (size_t i = 0; i < (o.all ? n : 1); i++) {
			if (devs[i]->present)
				printf("%s\n", devs[i]->path);
			else
				printf("%s\n", devs[i]->connect ? devs[i]->connect : devs[i]->path);
			if (!devs[i]->present)
				fprintf(stderr, "pony: %s is not connected\n",
					devs[i]->connect ? devs[i]->connect : devs[i]->path);
		}
		if (n > 1 && !o.all)
			fprintf(stderr, "pony: %zu devices match; showing the first (--all lists them)\n", n);
	}
	devdb_devs_free(devs, n);
	return r;
}

/* UUIDs that more than one device carries, a line for each device:
 * UUID and PATH ({"duplicates": [{"uuid": ..., "path": ...}]}). */
static int print_duplicates(struct devdb *db, bool json)
{
	struct cli_table *t;
	char **uuids;
	size_t n;
	int r = devdb_duplicate_uuids(db, &uuids, &n);

	if (r < 0)
		return cli_error("%s", strerror(-r));
	t = cli_table_new("duplicates", json);
	cli_table_column(t, "UUID", 0);
	cli_table_column(t, "PATH", CLI_COL_WRAP);
	for (size_t i = 0; i < n; i++) {
		const char *name = "UUID", *value = uuids[i];
		struct devdb_dev **d;
		size_t m;

		if (devdb_find(db, &name, &value, 1, &d, &m) == 0) {
			for (size_t k = 0; k < m; k++) {
				struct cli_table_line *ln = cli_table_line(t, NULL);

				cli_table_set(ln, 0, "%s", uuids[i]);
				cli_table_set(ln, 1, "%s", d[k]->path ? d[k]->path : "?");
			}
			devdb_devs_free(d, m);
		}
		free(uuids[i]);
	}
	free(uuids);
	return cli_table_print(t);
}

static void list_usage(FILE *f)
{
	fprintf(f, "Usage: pony dev list [--db PATH] [--json] [--duplicates]\n"
		   "Lists every device the database knows: path, TYPE, LABEL, UUID and state\n"
		   "(absent: vanished; remote: registered, not connected). --duplicates lists\n"
		   "only UUIDs that more than one device carries (copied images, snapshots):\n"
		   "UUID and PATH, a line for each device. --json: the same table as JSON.\n");
}

static int list_run(int argc, char **argv)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	struct devdb_dev **devs;
	struct dev_opts o = { 0 };
	size_t n;
	int r;

	DEV_GETOPT("pony dev list", list_usage, &o);
	if (argc > 0)
		return cli_usage_error("pony dev list", "unexpected argument '%s'", argv[0]);
	if (open_db(&o, &db) < 0)
		return CLI_EXIT_FAILURE;
	if (o.duplicates)
		return print_duplicates(db, o.json);
	r = devdb_list(db, &devs, &n);
	if (r < 0)
		return cli_error("%s", strerror(-r));
	r = print_devs(devs, n, o.json);
	devdb_devs_free(devs, n);
	return r;
}

/*
 * One device as a record (table.c): for people a FIELD VALUE line each (a
 * line per path, the preferred first; a line per tag, by its name), with
 * --json one object: {"device": [{"id": 1, "kind": ..., "paths": [...],
 * "label": ..., ...}]}, the tags by their names in lower case.
 */
static int show_print(const struct devdb_dev *d, bool json)
{
	struct cli_record *r = cli_record_new("device", json);

	cli_record_set(r, "ID", CLI_COL_NUMBER, "%lld", (long long)d->id);
	cli_record_set(r, "KIND", 0, "%s", d->kind);
	cli_record_set(r, "STATE", 0, "%s", dev_state(d));
	cli_record_set(r, "CONNECT", 0, d->connect ? "%s" : NULL, d->connect);
	cli_record_set(r, "AMBIVALENT", 0, d->ambivalent ? "%s" : NULL, d->ambivalent);
	cli_record_set_u64(r, "SIZE", d->size);
	cli_record_set_list(r, "PATH", (const char *const *)d->paths, d->npaths);
	for (size_t i = 0; i < d->tags.n; i++)
		cli_record_set(r, d->tags.v[i].name, 0, "%s", d->tags.v[i].value);
	return cli_record_print(r);
}

static void show_usage(FILE *f)
{
	fprintf(f, "Usage: pony dev show [--db PATH] [--json] PATH|NAME=VALUE\n"
		   "Shows one device, a FIELD VALUE line each: ID, KIND, STATE, CONNECT,\n"
		   "AMBIVALENT, SIZE, a PATH line for each path (preferred first: present\n"
		   "paths, then the shortest, then in alphabetical order), then each tag.\n"
		   "--json: {\"device\": [{\"id\": ..., \"path\": [...], \"uuid\": ...}]}, the tags\n"
		   "by their names in lower case. Exit 1 when it is not in the database, 2 on\n"
		   "bad usage.\n");
}

static int show_run(int argc, char **argv)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	_cleanup_(devdb_dev_freep) struct devdb_dev *d = NULL;
	struct dev_opts o = { 0 };
	const char *name, *value = NULL;
	int r;

	DEV_GETOPT("pony dev show", show_usage, &o);
	if (argc != 1)
		return cli_usage_error("pony dev show", "give one PATH or NAME=VALUE");
	if (open_db(&o, &db) < 0)
		return CLI_EXIT_FAILURE;
	if (argv[0][0] != '/' && !strstr(argv[0], "://") && split_term(argv[0], &name, &value) == 0)
		r = devdb_find_tag(db, name, value, &d);
	else
		r = devdb_get(db, argv[0], &d);
	if (r == -ENOENT) {
		/* split_term() cut NAME=VALUE at the '=': say it whole. */
		cli_error("%s%s%s: not in the device database", argv[0], value ? "=" : "",
			  value ? value : "");
		return CLI_EXIT_NOT_FOUND;
	}
	if (r < 0)
		return cli_error("%s", strerror(-r));
	return show_print(d, o.json);
}

static void register_usage(FILE *f)
{
	fprintf(f, "Usage: pony dev register [--db PATH] URI [NAME=VALUE...]\n"
		   "Registers a device that exists only once connected (nbd://host:port/export,\n"
		   "iscsi://host/target/lun) with the identity to expect (e.g. UUID=...).\n"
		   "An NBD export (nbd://, nbds://, nbd+unix://) is connected to and probed:\n"
		   "what it holds (TYPE, UUID, LABEL, ...) is kept, NAME=VALUE given adds to it\n"
		   "or overrides it, so `pony vol assemble UUID=...` and `pony mount UUID=...`\n"
		   "find members on NBD servers. One that cannot be reached is refused, unless\n"
		   "NAME=VALUE given say what to expect. Lookups return it as not connected.\n");
}

/* Adds what the export holds to tags, where tags do not name it already. */
static int register_probe(const char *uri, struct devdb_tags *tags)
{
	_cleanup_(devdb_probe_result_freep) struct devdb_probe_result *res = NULL;
	int r = cli_probe_device(uri, &res, NULL);

	if (r < 0)
		return r;       /* the message is out */
	if (res->status == DEVDB_PROBE_AMBIVALENT)
		fprintf(stderr, "pony dev register: %s: more than one signature (%s); no tags kept\n",
			uri, res->ambivalent);
	for (size_t i = 0; r == 0 && res->status == DEVDB_PROBE_FOUND && i < res->tags.n; i++)
		if (!devdb_tags_get(tags, res->tags.v[i].name))
			r = devdb_tags_add(tags, res->tags.v[i].name, res->tags.v[i].value);
	if (r < 0) {
		cli_error("register %s: %s", uri, strerror(-r));
		return r;
	}
	return 0;
}

static int register_run(int argc, char **argv)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	struct devdb_tags tags = { 0 };
	struct dev_opts o = { 0 };
	int r = 0;

	DEV_GETOPT("pony dev register", register_usage, &o);
	if (argc < 1 || !strstr(argv[0], "://"))
		return cli_usage_error("pony dev register", "give a URI such as nbd://host:10809/export");
	for (int i = 1; i < argc && r == 0; i++) {
		const char *name, *value;

		if (split_term(argv[i], &name, &value) < 0) {
			devdb_tags_done(&tags);
			return cli_usage_error("pony dev register", "'%s' is not NAME=VALUE", argv[i]);
		}
		r = devdb_tags_add(&tags, name, value);
	}
	/* Registered before it exists: the tags given say what to expect. */
	if (r == 0 && bdev_name_is_nbd(argv[0]) && register_probe(argv[0], &tags) < 0) {
		if (!tags.n) {
			devdb_tags_done(&tags);
			return CLI_EXIT_FAILURE;
		}
		fprintf(stderr, "pony dev register: %s: not probed; kept with the tags given\n",
			argv[0]);
	}
	if (r == 0 && open_db(&o, &db) < 0)
		r = -EIO;
	else if (r == 0)
		r = devdb_register(db, argv[0], &tags);
	devdb_tags_done(&tags);
	if (r < 0)
		return cli_error("register %s: %s", argv[0], strerror(-r));
	return CLI_EXIT_OK;
}

static void forget_usage(FILE *f)
{
	fprintf(f, "Usage: pony dev forget [--db PATH] PATH|URI...\n"
		   "Removes devices (by any of their paths, or their URI) from the database.\n");
}

static int forget_run(int argc, char **argv)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	struct dev_opts o = { 0 };
	int ret = CLI_EXIT_OK;

	DEV_GETOPT("pony dev forget", forget_usage, &o);
	if (argc < 1)
		return cli_usage_error("pony dev forget", "no path given");
	if (open_db(&o, &db) < 0)
		return CLI_EXIT_FAILURE;
	for (int i = 0; i < argc; i++) {
		int r = devdb_forget(db, argv[i]);

		if (r < 0)
			ret = cli_error("forget %s: %s", argv[i],
					r == -ENOENT ? "not in the device database" : strerror(-r));
	}
	return ret;
}

const struct cli_command dev_scan_cmd = { "scan", "add devices or image files to the database", scan_run };
const struct cli_command dev_find_cmd = { "find", "print the device with NAME=VALUE (findfs)", find_run };
const struct cli_command dev_list_cmd = { "list", "list every known device", list_run };
const struct cli_command dev_show_cmd = { "show", "show one device's tags and paths", show_run };
const struct cli_command dev_register_cmd = { "register", "register a not-yet-connected device",
					      register_run };
const struct cli_command dev_forget_cmd = { "forget", "remove devices from the database", forget_run };
