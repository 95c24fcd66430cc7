/*
 * cmd_dev_probe.c - `pony dev probe`: what the probers find on each file or
 * device, without the database, in blkid -p's output forms (udev, export,
 * JSON, device path, or blkid's default NAME="value" line). Exit codes are
 * the dev commands' (findfs's): 1 when nothing was found, 2 bad usage; and
 * blkid's 8 when a result was ambivalent.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_dev.h"
#include "pony/devdb.h"
#include "pony/util.h"
#include "table.h"

#define EXIT_AMBIVALENT 8

static bool name_in(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(name, *list))
			return true;
	return false;
}

/* blkid's print_udev_format(): which names are encoded, which get _ENC twins. */
static void print_udev(const char *name, const char *value)
{
	static const char *const encoded[] = { "TYPE", "VERSION", "SYSTEM_ID", "PUBLISHER_ID",
		"APPLICATION_ID", "BOOT_SYSTEM_ID", "VOLUME_ID", "LOGICAL_VOLUME_ID",
		"VOLUME_SET_ID", "DATA_PREPARER_ID", NULL };
	char enc[1024], safe[1024];

	if (name_in(name, encoded)) {
		devdb_encode_string(value, enc, sizeof(enc));
		printf("ID_FS_%s=%s\n", name, enc);
	} else if (!strcmp(name, "UUID") || !strncmp(name, "LABEL", 5) || !strcmp(name, "UUID_SUB")) {
		devdb_safe_string(value, safe, sizeof(safe));
		devdb_encode_string(value, enc, sizeof(enc));
		printf("ID_FS_%s=%s\nID_FS_%s_ENC=%s\n", name, safe, name, enc);
	} else if (!strcmp(name, "PTUUID")) {
		printf("ID_PART_TABLE_UUID=%s\n", value);
	} else if (!strcmp(name, "PTTYPE")) {
		printf("ID_PART_TABLE_TYPE=%s\n", value);
	} else if (!strcmp(name, "PART_ENTRY_NAME") || !strcmp(name, "PART_ENTRY_TYPE")) {
		devdb_encode_string(value, enc, sizeof(enc));
		printf("ID_%s=%s\n", name, enc);
	} else if (!strncmp(name, "PART_ENTRY_", 11)) {
		printf("ID_%s=%s\n", name, value);
	} else if (!strcmp(name, "PARTUUID") || !strcmp(name, "PARTLABEL")) {
		/* cache-level names, not in blkid -p's udev output */
	} else {
		printf("ID_FS_%s=%s\n", name, value);
	}
}

/* blkid's safe_print(): M- for high bytes, ^X for control, \ before esc. */
static void print_safe(const char *s, const char *esc)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;

		if (c >= 128) {
			fputs("M-", stdout);
			c -= 128;
		}
		if (c < 32 || c == 0x7f) {
			fputc('^', stdout);
			c ^= 0x40;
		} else if (strchr(esc, c)) {
			fputc('\\', stdout);
		}
		fputc(c, stdout);
	}
}

static void print_tags(const char *dev, const struct devdb_tags *t, enum dev_output out)
{
	switch (out) {
	case DEV_OUT_UDEV:
		for (size_t i = 0; i < t->n; i++)
			print_udev(t->v[i].name, t->v[i].value);
		break;
	case DEV_OUT_EXPORT:
		printf("DEVNAME=%s\n", dev);
		for (size_t i = 0; i < t->n; i++) {
			printf("%s=", t->v[i].name);
			print_safe(t->v[i].value, " \\\"'$`<>");
			putchar('\n');
		}
		break;
	case DEV_OUT_JSON:
		break;          /* collected by the caller: probe_json_add() */
	case DEV_OUT_DEVICE:
		printf("%s\n", dev);
		break;
	case DEV_OUT_FULL:
		printf("%s:", dev);
		for (size_t i = 0; i < t->n; i++) {
			printf(" %s=\"", t->v[i].name);
			print_safe(t->v[i].value, "\"\\");
			putchar('"');
		}
		putchar('\n');
		break;
	}
}

int dev_parse_output(const char *arg, enum dev_output *ret)
{
	static const struct { const char *name; enum dev_output out; } outs[] = {
		{ "udev", DEV_OUT_UDEV }, { "export", DEV_OUT_EXPORT }, { "json", DEV_OUT_JSON },
		{ "device", DEV_OUT_DEVICE }, { "full", DEV_OUT_FULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(outs); i++)
		if (!strcmp(arg, outs[i].name)) {
			*ret = outs[i].out;
			return 0;
		}
	return -EINVAL;
}

void dev_print_dev(const char *path, const struct devdb_tags *tags, enum dev_output out,
		   bool *first)
{
	if (!*first && (out == DEV_OUT_UDEV || out == DEV_OUT_EXPORT))
		putchar('\n');
	*first = false;
	print_tags(path, tags, out);
}

/*
 * -o json: every device's tags, kept until all are probed, then one table
 * through table.c (libsmartcols, as every pony record): a column for the
 * device and one for each tag name any device has, in the order first
 * seen; a device without a tag has null there. libsmartcols writes the
 * keys in lower case, as lsblk's ("type", "uuid").
 */
struct probe_json {
	size_t n, cap;
	struct probed {
		char *dev;
		struct devdb_tags tags;
	} *v;
};

static int probe_json_add(struct probe_json *pj, const char *dev, const struct devdb_tags *tags)
{
	struct probed *d;

	if (pj->n == pj->cap) {
		size_t cap = pj->cap ? 2 * pj->cap : 8;
		struct probed *v = realloc(pj->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pj->v = v;
		pj->cap = cap;
	}
	d = &pj->v[pj->n];
	*d = (struct probed){ .dev = strdup(dev) };
	if (!d->dev)
		return -ENOMEM;
	pj->n++;
	for (size_t i = 0; i < tags->n; i++)
		if (devdb_tags_add(&d->tags, tags->v[i].name, tags->v[i].value) < 0)
			return -ENOMEM;
	return 0;
}

static void probe_json_free(struct probe_json *pj)
{
	for (size_t i = 0; i < pj->n; i++) {
		free(pj->v[i].dev);
		devdb_tags_done(&pj->v[i].tags);
	}
	free(pj->v);
}

static int probe_json_print(struct probe_json *pj)
{
	struct cli_table *t = cli_table_new("devices", true);
	struct devdb_tags names = { 0 };        /* the columns after "device", as a set */
	int r = 0;

	cli_table_column(t, "device", 0);
	for (size_t d = 0; d < pj->n && r >= 0; d++)
		for (size_t i = 0; i < pj->v[d].tags.n && r >= 0; i++)
			if (!devdb_tags_get(&names, pj->v[d].tags.v[i].name)) {
				r = devdb_tags_add(&names, pj->v[d].tags.v[i].name, "");
				cli_table_column(t, pj->v[d].tags.v[i].name, 0);
			}
	for (size_t d = 0; d < pj->n && r >= 0; d++) {
		struct cli_table_line *l = cli_table_line(t, NULL);

		cli_table_set(l, 0, "%s", pj->v[d].dev);
		for (size_t c = 0; c < names.n; c++) {
			const char *v = devdb_tags_get(&pj->v[d].tags, names.v[c].name);

			cli_table_set(l, (int)c + 1, v ? "%s" : NULL, v);
		}
	}
	devdb_tags_done(&names);
	if (r < 0) {
		cli_table_free(t);
		return cli_error("out of memory");
	}
	return cli_table_print(t);
}

static void print_ambivalent(const char *path, const char *desc, enum dev_output out)
{
	char enc[1024];

	if (out == DEV_OUT_UDEV) {
		devdb_encode_string(desc, enc, sizeof(enc));
		/* blkid keeps the spaces and colons between entries unencoded */
		printf("ID_FS_AMBIVALENT=%s\n", desc);
	} else {
		fprintf(stderr, "pony: %s: ambivalent result (probably more filesystems on the "
			"device: %s)\n", path, desc);
	}
}

static void probe_usage(FILE *f)
{
	fprintf(f, "Usage: pony dev probe [-o udev|export|json|device|full] [--hint session_offset=N]\n"
		   "                      [--no-partitions] [--stats] FILE|DEVICE...\n"
		   "       pony dev probe --formats   (list the formats the probers know)\n"
		   "Reads each device's superblocks and partition table, as `blkid -p` does,\n"
		   "without the database. Each partition of an image FILE is shown as FILE:pN.\n"
		   "Exit: 0 found, 1 nothing found or an error, 2 bad usage, 8 ambivalent\n"
		   "(two signatures, as blkid).\n");
}

int dev_probe_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' }, { "hint", required_argument, NULL, 'H' },
		{ "no-partitions", no_argument, NULL, 'n' }, { "stats", no_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' }, { "formats", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct devdb_probe_opts popts = { 0 };
	enum dev_output out = DEV_OUT_FULL;
	bool first = true, stats = false, any = false, ambivalent = false, failed = false;
	struct probe_json pj = { 0 };
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (dev_parse_output(optarg, &out) < 0)
				return cli_usage_error("pony dev probe", "unknown output '%s'", optarg);
			break;
		case 'j':
			out = DEV_OUT_JSON;
			break;
		case 'H':
			if (strncmp(optarg, "session_offset=", 15))
				return cli_usage_error("pony dev probe", "--hint: unknown hint '%s'", optarg);
			if (cli_parse_size("pony dev probe", "--hint session_offset", optarg + 15, 0,
					   UINT64_MAX, 1, &popts.session_offset))
				return CLI_EXIT_USAGE;
			break;
		case 'n':
			popts.no_partitions = true;
			break;
		case 's':
			stats = true;
			break;
		case 'F':
			for (const char *const *f = devdb_probe_formats(); *f; f++)
				printf("%s\n", *f);
			return CLI_EXIT_OK;
		case 'h':
			probe_usage(stdout);
			return CLI_EXIT_OK;
		default:
			probe_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error("pony dev probe", "no device given");
	for (int i = optind; i < argc; i++) {
		struct devdb_probe_result *res;
		r = devdb_probe_path(argv[i], &popts, &res);
		if (r < 0) {
			cli_error("%s: %s", argv[i], strerror(-r));
			failed = true;
			continue;
		}
		if (res->status == DEVDB_PROBE_AMBIVALENT) {
			print_ambivalent(argv[i], res->ambivalent, out);
			ambivalent = true;
		} else if (res->tags.n) {
			dev_print_dev(argv[i], &res->tags, out, &first);
			if (out == DEV_OUT_JSON && probe_json_add(&pj, argv[i], &res->tags) < 0)
				failed = true;
			any = true;
		}
		for (size_t p = 0; p < res->nparts; p++) {
			char name[4096];

			snprintf(name, sizeof(name), "%s:p%u", argv[i], res->parts[p].number);
			dev_print_dev(name, &res->parts[p].tags, out, &first);
			if (out == DEV_OUT_JSON && probe_json_add(&pj, name, &res->parts[p].tags) < 0)
				failed = true;
		}
		if (stats)
			fprintf(stderr, "%s: %llu bytes read in %u reads\n", argv[i],
				(unsigned long long)res->bytes_read, res->reads);
		devdb_probe_result_free(res);
	}
	if (out == DEV_OUT_JSON) {
		r = probe_json_print(&pj);
		probe_json_free(&pj);
		if (r)
			return r;
	}
	if (failed)
		return CLI_EXIT_FAILURE;
	if (ambivalent)
		return EXIT_AMBIVALENT;
	return any ? CLI_EXIT_OK : CLI_EXIT_NOT_FOUND;
}
