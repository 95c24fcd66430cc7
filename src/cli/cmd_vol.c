/*
 * cmd_vol.c - `pony vol`: volumes from the command line. No daemon: each
 * command assembles the volume from its members (whose superblocks hold
 * all state), does its work and closes it clean. This file holds the
 * dispatch, opening, and create / assemble / status / table / read /
 * write; cmd_vol_admin.c the failure handling; cmd_vol_expose.c FUSE.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pony/acall.h"
#include "pony/util.h"
#include "ponyfs.h"
#include "table.h"
#include "vol.h"

int vol_open_dev(const char *path, bool rdonly, struct bdev **ret)
{
	return cli_open_device(path, rdonly ? O_RDONLY : O_RDWR, true, ret);
}

static volatile sig_atomic_t vol_interrupted;

static void vol_on_signal(int sig)
{
	vol_interrupted = 1;
}

void vol_catch_interrupt(void)
{
	struct sigaction sa = { .sa_handler = vol_on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool vol_interrupt_pending(void)
{
	return vol_interrupted;
}

int vol_progress(uint64_t done, uint64_t total, void *arg)
{
	struct util_progress *p = arg;

	if (!p->total)                  /* not known before the work started */
		util_progress_set_total(p, total);
	util_progress_update(p, done);
	return vol_interrupted;         /* stop: the library saves its checkpoint */
}

int vol_parse_member(const char *cmd, const char *text, unsigned *ret)
{
	return cli_parse_unsigned(cmd, "--member", text, 0, 63, ret);
}

static void free_devs(struct bdev **devs, int n)
{
	for (int i = 0; i < n; i++)
		bdev_free(devs[i]);
}

static int vol_open_md(char **paths, int n, struct bdev **devs, struct vol_handle *h)
{
	struct volume_md_info info;
	int r = volume_md_assemble(devs, (unsigned)n, &h->v, &info);

	if (r >= 0) {
		if (info.dirty)
			fprintf(stderr, "pony: the md array was not shut down cleanly (%u chunks "
				"marked in its write-intent bitmap); md would resync them\n",
				info.bitmap_dirty);
		return 0;
	}
	free_devs(devs, n);
	switch (r) {
	case -EUCLEAN:
		return cli_error("the md array was not shut down cleanly and a member is missing: "
				 "its parity may be stale where writes were in flight (md refuses "
				 "it too: cannot start dirty degraded array)");
	case -EXDEV: return cli_error("the devices are members of different md arrays");
	case -ENODATA: return cli_error("no md v1.x superblock found on a member");
	case -EBADMSG: return cli_error("an md superblock is corrupt (bad checksum or field)");
	case -ENODEV: return cli_error("too many md members missing to assemble");
	case -EEXIST: return cli_error("two devices claim the same md role");
	default: return cli_error("cannot assemble the md array: %s", strerror(-r));
	}
}

static int table_open_dev(const char *path, struct bdev **ret, void *arg)
{
	return vol_open_dev(path, *(bool *)arg, ret) < 0 ? -EIO : 0;
}

/* A volume from a device-mapper table read from path. */
static int vol_open_table(const char *path, bool rdonly, struct vol_handle *h)
{
	char *text = NULL;
	size_t cap = 0;
	FILE *f = !strcmp(path, "-") ? stdin : fopen(path, "re");
	unsigned line = 0;
	ssize_t n;
	int r;

	if (!f)
		return cli_error("%s: %s", path, strerror(errno));
	n = getdelim(&text, &cap, 0, f);
	if (f != stdin)
		fclose(f);
	if (n < 0) {
		free(text);
		return cli_error("%s: empty table", path);
	}
	r = volume_table_parse(text, table_open_dev, &rdonly, &h->v, &line);
	free(text);
	if (r == -EIO)
		return CLI_EXIT_FAILURE;        /* the device's own message is out */
	if (r == -ENOSPC)
		return cli_error("%s:%u: the target does not fit its devices", path, line);
	if (r == -EOPNOTSUPP)
		return cli_error("%s:%u: target or option not supported", path, line);
	if (r < 0)
		return cli_error("%s:%u: bad table line (%s)", path, line, strerror(-r));
	return 0;
}

/* The VOLUME_SET_* flags of an open with flags (VOL_OPEN_*). */
static unsigned vol_set_flags(unsigned flags)
{
	if (flags & VOL_OPEN_RDONLY)
		return VOLUME_SET_RDONLY | VOLUME_SET_DEGRADED;
	return flags & VOL_OPEN_DEGRADED ? VOLUME_SET_DEGRADED : 0;
}

static int vol_open_paths(const char *cmd, char **paths, int n, unsigned flags,
			  struct vol_handle *h);

int vol_open(const char *cmd, char **paths, int n, unsigned flags, struct vol_handle *h)
{
	char **found = NULL;
	int r;

	/* NAME, UUID=, LABEL=: the members devdb knows, local or on NBD servers. */
	if (n == 1 && !(flags & VOL_OPEN_TABLE) && vol_is_named(paths[0])) {
		memset(h, 0, sizeof(*h));
		r = vol_find_members(paths[0], &found, &n);
		if (r)
			return r;
		paths = found;
	}
	r = vol_open_paths(cmd, paths, n, flags, h);
	for (int i = 0; found && i < n; i++)
		free(found[i]);
	free(found);
	return r;
}

static int vol_open_paths(const char *cmd, char **paths, int n, unsigned flags,
			  struct vol_handle *h)
{
	struct bdev *devs[64];
	char *used[64];
	int r;

	memset(h, 0, sizeof(*h));
	if (flags & VOL_OPEN_TABLE)
		return n == 1 ? vol_open_table(paths[0], flags & VOL_OPEN_RDONLY, h)
			      : cli_usage_error(cmd, "--table takes no member devices");
	if (n < 1)
		return cli_usage_error(cmd, "no member devices given");
	if (n > 64)
		return cli_usage_error(cmd, "at most 64 members");
	r = cli_open_members(paths, n, flags & VOL_OPEN_RDONLY ? O_RDONLY : O_RDWR, true,
			     flags & (VOL_OPEN_DEGRADED | VOL_OPEN_RDONLY), devs, used, &n);
	if (r)
		return r;
	paths = used;
	if (flags & VOL_OPEN_MD)
		return vol_open_md(paths, n, devs, h);
	r = volume_set_assemble(devs, (unsigned)n, vol_set_flags(flags), &h->set, &h->assembly);
	if (r < 0) {
		h->open_error = r;
		r = flags & VOL_OPEN_SILENT ? CLI_EXIT_FAILURE
					    : vol_assembly_error(r, &h->assembly, paths, (unsigned)n);
		/* The names go with the devices: what stays is which members were there. */
		for (unsigned m = 0; h->assembly.known && m < h->assembly.nmembers; m++) {
			if (h->assembly.members[m].device)
				h->assembly_present |= 1ull << m;
			h->assembly.members[m].device = NULL;
		}
		free_devs(devs, n);     /* after the message: it names them */
		return r;
	}
	h->v = volume_set_volume(h->set);
	if (!(flags & VOL_OPEN_QUIET)) {
		vol_print_absent(&h->assembly);
		vol_print_degraded(&h->assembly, flags & VOL_OPEN_RDONLY);
	}
	/* A member failing (or missing) while a hot spare is idle starts a rebuild
	 * onto the spare in the background; vol_close() waits for it. */
	vol_watch_spare(h->set, &h->spare_bar);
	return 0;
}

int vol_close(struct vol_handle *h)
{
	int r = 0;

	if (h->set) {
		vol_catch_interrupt();
		r = volume_set_wait(h->set);
		util_progress_done(&h->spare_bar);
		if (r < 0 && r != -ECANCELED)
			cli_error("rebuild onto a spare: %s", strerror(-r));
		if (r == -ECANCELED)
			cli_error("rebuild onto a spare stopped; 'pony vol rebuild' resumes it");
		r = volume_set_close(h->set);
	} else
		volume_free(h->v);
	h->set = NULL;
	h->v = NULL;
	return r < 0 ? cli_error("closing the volume: %s", strerror(-r)) : 0;
}

/* create */

static int parse_level(const char *s, enum volume_target_type *t)
{
	static const struct { const char *name; enum volume_target_type t; } levels[] = {
		{ "0", VOLUME_STRIPED }, { "raid0", VOLUME_STRIPED }, { "striped", VOLUME_STRIPED },
		{ "1", VOLUME_MIRROR }, { "raid1", VOLUME_MIRROR }, { "mirror", VOLUME_MIRROR },
		{ "4", VOLUME_RAID4 }, { "raid4", VOLUME_RAID4 }, { "5", VOLUME_RAID5 },
		{ "raid5", VOLUME_RAID5 }, { "6", VOLUME_RAID6 }, { "raid6", VOLUME_RAID6 },
		{ "10", VOLUME_RAID10 }, { "raid10", VOLUME_RAID10 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(levels); i++)
		if (!strcmp(s, levels[i].name)) {
			*t = levels[i].t;
			return 0;
		}
	return -EINVAL;
}

static int layout_for(enum volume_target_type t, const char *name, unsigned *ret)
{
	unsigned level = t == VOLUME_RAID10 ? 10 : t == VOLUME_RAID6 ? 6 : 5;

	if (t != VOLUME_RAID5 && t != VOLUME_RAID6 && t != VOLUME_RAID10) {
		*ret = 0;
		return name ? -EINVAL : 0;
	}
	return volume_layout_from_name(level, name ? name : t == VOLUME_RAID10 ? "n2" : "left-symmetric",
				ret);
}

static void create_usage(FILE *out)
{
	fprintf(out,
		"Usage: pony vol create -l LEVEL [OPTIONS] DEV...\n"
		"Writes pony's member superblocks on DEV... (image files or block devices)\n"
		"and makes a volume of them, with md's data and parity placement.\n\n"
		"  -l, --level L      raid0, raid1, raid4, raid5, raid6, raid10\n"
		"  -p, --layout L     md layout (left-symmetric, ...; raid10 n2, f2, o2)\n"
		"  -c, --chunk SIZE   chunk size (default 64K)\n"
		"  -N, --name NAME    the volume's name\n"
		"  -m, --metadata SIZE  also a metadata region of SIZE, three-way raid10\n"
		"                     (two-way with fewer than 3 members), 64K chunks\n"
		"      --assume-clean the members are zeroed: skip the initial parity sync\n"
		"      --md           write Linux md v1.2 superblocks instead (mdadm assembles\n"
		"                     it; the members should be zeroed or fully written)\n"
		"      --json         print the new volume's state as JSON\n"
		"  -f, --force        overwrite DEVs that hold a filesystem, a volume member\n"
		"                     or a partition table (refused without it)\n"
		"  -h, --help         this help\n"
		"A DEV in use by a running pony or mounted, or given twice, is always refused;\n"
		"members of different sizes are used up to the smallest, with a warning.\n");
}

static int create_md(struct bdev **devs, int n, const struct volume_region_spec *rs,
		     const char *name, bool json)
{
	static const unsigned md_level[] = {
		[VOLUME_STRIPED] = 0, [VOLUME_MIRROR] = 1, [VOLUME_RAID4] = 4, [VOLUME_RAID5] = 5,
		[VOLUME_RAID6] = 6, [VOLUME_RAID10] = 10,
	};
	struct volume_md_info info;
	struct volume *v;
	int r = volume_md_create(devs, (unsigned)n, md_level[rs->type], rs->layout, rs->chunk, name,
				 &v, &info);

	if (r < 0) {
		free_devs(devs, n);
		return cli_error("cannot create the md array: %s", strerror(-r));
	}
	if (json) {
		struct vol_handle h = { .v = v };

		vol_json_report(&h, "create", -1, NULL);
	} else {
		printf("created md raid%u array (v1.2) of %d members, %llu bytes\n", info.level, n,
		       (unsigned long long)info.array_size);
	}
	volume_free(v);
	return CLI_EXIT_OK;
}

static int vol_create_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "level", required_argument, NULL, 'l' }, { "layout", required_argument, NULL, 'p' },
		{ "chunk", required_argument, NULL, 'c' }, { "name", required_argument, NULL, 'N' },
		{ "metadata", required_argument, NULL, 'm' },
		{ "assume-clean", no_argument, NULL, 'A' }, { "md", no_argument, NULL, 'M' },
		{ "json", no_argument, NULL, 'J' }, { "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct cli_targets targets = { .cmd = "pony vol create" };
	struct util_progress sync_bar;
	bool md = false, json = false;
	struct volume_region_spec regions[2] = { { .cls = VOLUME_CLASS_DATA, .chunk = 65536 } };
	struct volume_set_params p = { .regions = regions + 1, .nregions = 1 };
	const char *level = NULL, *layout = NULL;
	uint64_t meta = 0;
	struct bdev *devs[64];
	struct volume_set *s;
	int c, n, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "l:p:c:N:m:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': targets.force = true; break;
		case 'l': level = optarg; break;
		case 'p': layout = optarg; break;
		case 'c':
			if (cli_parse_size("pony vol create", "--chunk", optarg, 4096, 1u << 30, 4096,
					   &regions[0].chunk))
				return CLI_EXIT_USAGE;
			break;
		case 'N': p.name = optarg; break;
		case 'm':
			if (cli_parse_size("pony vol create", "--metadata", optarg, 1 << 20, UINT64_MAX,
					   512, &meta))
				return CLI_EXIT_USAGE;
			break;
		case 'A': p.assume_clean = true; break;
		case 'M': md = true; break;
		case 'J': json = true; break;
		case 'h': create_usage(stdout); return CLI_EXIT_OK;
		default: create_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (!level)
		return cli_usage_error("pony vol create", "--level raid0|1|4|5|6|10 is required");
	if (parse_level(level, &regions[0].type) < 0)
		return cli_usage_error("pony vol create", "bad level '%s' (raid0, raid1, raid4, raid5, "
				       "raid6 or raid10)", level);
	if (layout_for(regions[0].type, layout, &regions[0].layout) < 0)
		return cli_usage_error("pony vol create", "bad layout '%s' for %s", layout, level);
	n = argc - optind;
	if (n < 1 || n > 64)
		return cli_usage_error("pony vol create", "give 1 to 64 member devices");
	regions[1] = regions[0];
	if (meta) {
		regions[0] = (struct volume_region_spec){
			.cls = VOLUME_CLASS_METADATA, .type = VOLUME_RAID10, .chunk = 65536,
			.layout = (n >= 3 ? 3u : 2u) | 1u << 8, .size = meta,
		};
		if (n < 2)
			return cli_usage_error("pony vol create", "a metadata region needs 2 members");
		p.regions = regions;
		p.nregions = 2;
	}
	r = cli_targets_check(&targets, argv + optind, n);
	if (r)
		return r;
	for (int i = 0; i < n; i++)
		if (vol_open_dev(argv[optind + i], false, &devs[i]) < 0) {
			free_devs(devs, i);
			return CLI_EXIT_FAILURE;
		}
	if (md)
		return create_md(devs, n, &regions[1], p.name, json);
	util_progress_init(&sync_bar, "initial sync", 0);
	p.progress = vol_progress;
	p.progress_arg = &sync_bar;
	r = volume_set_create(devs, (unsigned)n, &p, &s);
	util_progress_done(&sync_bar);
	if (r < 0) {
		free_devs(devs, n);
		if (r == -ENOSPC)
			return cli_error("the members are too small for that volume");
		if (r == -EINVAL || r == -ENODEV)
			return cli_error("%s cannot be made of %d members with these options", level, n);
		return cli_error("create: %s", strerror(-r));
	}
	if (json) {
		struct vol_handle h = { .set = s, .v = volume_set_volume(s) };

		vol_json_report(&h, "create", -1, NULL);
	} else {
		printf("created %s volume of %d members, %llu bytes%s\n",
		       volume_target_name(p.regions[p.nregions - 1].type), n,
		       (unsigned long long)volume_size(volume_set_volume(s)),
		       meta ? " (with a raid10 metadata region first)" : "");
	}
	r = volume_set_close(s);
	return r < 0 ? cli_error("create: %s", strerror(-r)) : CLI_EXIT_OK;
}

/* assemble and status */

/* Copies the whole volume to path ("-": stdout). */
static int dump_volume(struct volume *v, const char *path)
{
	size_t bs = 1 << 20;
	_cleanup_(freep) uint8_t *buf = malloc(bs);
	_cleanup_(closep) int fd = -1;

	fd = !strcmp(path, "-") ? dup(1) : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !buf)
		return cli_error("%s: %s", path, strerror(errno));
	for (uint64_t off = 0; off < volume_size(v); off += bs) {
		size_t n = (size_t)MIN((uint64_t)bs, volume_size(v) - off);
		int r = volume_read(v, buf, n, off);

		if (r < 0)
			return cli_error("reading the volume at %llu: %s", (unsigned long long)off,
					 strerror(-r));
		if (write(fd, buf, n) != (ssize_t)n)
			return cli_error("%s: %s", path, strerror(errno));
	}
	return 0;
}

static void assemble_usage(FILE *out, const char *name)
{
	bool status = !strcmp(name, "status");

	fprintf(out,
		"Usage: pony vol %s [OPTIONS] DEV...|NAME|UUID=U|LABEL=L\n"
		"%s the volume whose members are DEV... (any order) and prints its\n"
		"state. Stale and truncated members are refused (named on stderr).\n"
		"NAME, UUID= and LABEL= find the members in the device database.\n\n"
		"      --md           the members carry Linux md v1.x superblocks\n"
		"  -t, --table FILE   a device-mapper table instead of members (devices by path)\n"
		"  -o, --output FILE  copy the volume's contents to FILE ('-': stdout)\n"
		"%s"
		"      --json         machine-readable status\n"
		"  -h, --help         this help\n",
		name, status ? "Reads, without changing anything," : "Assembles",
		status ? "" : "      --degraded     start even with members missing, stale or truncated\n"
			      "                     (they go stale; 'pony vol add' rebuilds them)\n"
			      "  -N, --name NAME    record the volume as NAME (default: its label) in\n"
			      "                     the device database: every vol command takes NAME\n");
	if (status)
		fprintf(out, "\nThe state line: clean, degraded (N missing), rebuilding N%%.\n"
			"Exit status, as mdadm --detail --test: 0 clean; 1 degraded or rebuilding;\n"
			"2 failed: fewer members than the level needs (also bad usage); 4 the\n"
			"members cannot be read as a volume.\n");
}

static int vol_assemble_common(int argc, char **argv, bool rdonly)
{
	static const struct option longopts[] = {
		{ "md", no_argument, NULL, 'M' }, { "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'J' }, { "table", required_argument, NULL, 't' },
		{ "degraded", no_argument, NULL, 'D' }, { "name", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	const char *output = NULL, *table = NULL, *name = NULL;
	unsigned flags = rdonly ? VOL_OPEN_RDONLY : 0;
	bool json = false;
	struct vol_handle h;
	int c, r, state = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, rdonly ? "o:t:h" : "o:t:N:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'N':
			if (rdonly || !*optarg || strchr(optarg, '/') || strchr(optarg, '='))
				return cli_usage_error("pony vol", "--name: %s", rdonly ? "assemble's option" :
						       "a word without '/' or '='");
			name = optarg;
			break;
		case 'M': flags |= VOL_OPEN_MD | VOL_OPEN_RDONLY; break;     /* md: look, never touch */
		case 't': table = optarg; flags |= VOL_OPEN_TABLE | VOL_OPEN_RDONLY; break;
		case 'o': output = optarg; break;
		case 'J': json = true; break;
		case 'D': flags |= VOL_OPEN_DEGRADED; break;
		case 'h': assemble_usage(stdout, argv[0]); return CLI_EXIT_OK;
		default: assemble_usage(stderr, argv[0]); return CLI_EXIT_USAGE;
		}
	}
	r = table ? vol_open("pony vol", (char **)&table, 1, flags, &h)
		  : vol_open("pony vol", argv + optind, argc - optind, flags, &h);
	if (r)
		return rdonly ? vol_status_exit_open(r, &h) : r;
	/* A pony volume assembled is recorded by name, as mdadm.conf's ARRAY lines. */
	if (!rdonly && h.set)
		r = vol_record(&h, name, argv + optind, argc - optind);
	if (output && !r)
		r = dump_volume(h.v, output);
	if (!r && (!output || strcmp(output, "-")))
		state = vol_print_status(&h, json);
	if (vol_close(&h))
		return rdonly ? VOL_STATUS_ERROR : CLI_EXIT_FAILURE;
	if (r)
		return rdonly ? VOL_STATUS_ERROR : r;
	return rdonly ? state : CLI_EXIT_OK;
}

static int vol_assemble_run(int argc, char **argv)
{
	return vol_assemble_common(argc, argv, false);
}

/* status: as mdadm --detail --test, the exit says the state. */
static int vol_status_run(int argc, char **argv)
{
	return vol_assemble_common(argc, argv, true);
}

/*
 * The table as JSON through table.c: {"table": [{"start", "length",
 * "line", "args": [the target and its arguments]}]}, a row a line of it.
 */
static int table_json(const char *t)
{
	struct cli_table *tb = cli_table_new("table", true);

	cli_table_column(tb, "START", CLI_COL_NUMBER);
	cli_table_column(tb, "LENGTH", CLI_COL_NUMBER);
	cli_table_column(tb, "LINE", 0);
	cli_table_column(tb, "ARGS", CLI_COL_ARRAY);
	while (*t) {
		size_t n = strcspn(t, "\n");
		char line[4096], *w;
		unsigned long long start = 0, len = 0;
		struct cli_table_line *ln;
		int used = 0;

		snprintf(line, sizeof(line), "%.*s", (int)MIN(n, sizeof(line) - 1), t);
		t += n + (t[n] == '\n');
		if (sscanf(line, "%llu %llu %n", &start, &len, &used) < 2)
			continue;
		ln = cli_table_line(tb, NULL);
		cli_table_set_u64(ln, 0, start);
		cli_table_set_u64(ln, 1, len);
		cli_table_set(ln, 2, "%s", line);
		/* the arguments one a line, as an array column takes them */
		for (w = line + used; (w = strchr(w, ' ')); )
			*w = '\n';
		cli_table_set(ln, 3, "%s", line + used);
	}
	return cli_table_print(tb);
}

static int vol_table_run(int argc, char **argv)
{
	bool md = false, json = false;
	struct vol_handle h;
	char *t;
	int r, i = 1;

	if (cli_wants_help(argc, argv)) {
		printf("Usage: pony vol table [--md] [--json] DEV...|NAME|UUID=U|LABEL=L\n"
		       "Prints the volume's table in device-mapper syntax (--json: one\n"
		       "object per line, sectors, the target and its arguments split).\n");
		return CLI_EXIT_OK;
	}
	for (; i < argc && (!strcmp(argv[i], "--md") || !strcmp(argv[i], "--json")); i++)
		*(argv[i][2] == 'm' ? &md : &json) = true;
	r = vol_open("pony vol table", argv + i, argc - i,
		     VOL_OPEN_RDONLY | VOL_OPEN_QUIET | (md ? VOL_OPEN_MD : 0), &h);
	if (r)
		return r;
	t = volume_table_format(h.v);
	r = !t ? CLI_EXIT_FAILURE : json ? table_json(t) : fputs(t, stdout) == EOF ? CLI_EXIT_FAILURE
										   : CLI_EXIT_OK;
	free(t);
	vol_close(&h);
	return r;
}

/* read / write: the volume's bytes, for scripts and the demo */

/* read() until n bytes or the end: pipes hand out less than asked. */
static ssize_t read_full(int fd, uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int vol_copy(struct vol_handle *h, int fd, bool write_mode, uint64_t off, uint64_t len)
{
	/* Whole stripes at a time: writes then need no read-modify-write. */
	size_t bs = (size_t)ROUND_UP(4u << 20, volume_full_stripe(h->v, 0));
	_cleanup_(freep) uint8_t *buf = util_aligned_alloc(bs);
	uint64_t end = len == UINT64_MAX ? volume_size(h->v) : off + len;

	if (!buf)
		return cli_error("out of memory");
	if (off > volume_size(h->v) || end > volume_size(h->v) || end < off)
		return cli_error("the range is past the volume's end (%llu bytes)",
				 (unsigned long long)volume_size(h->v));
	while (off < end) {
		size_t n = (size_t)MIN((uint64_t)bs, end - off);
		ssize_t got = n;
		int r;

		if (write_mode) {
			got = read_full(fd, buf, n);
			if (got < 0)
				return cli_error("reading input: %s", strerror(errno));
			if (got == 0)
				break;
			r = volume_write(h->v, buf, (size_t)got, off);
		} else {
			r = volume_read(h->v, buf, n, off);
			if (r >= 0 && write(fd, buf, n) != (ssize_t)n)
				return cli_error("writing output: %s", strerror(errno));
		}
		if (r < 0)
			return cli_error("volume %s at %llu: %s", write_mode ? "write" : "read",
					 (unsigned long long)off, strerror(-r));
		off += (uint64_t)got;
	}
	return 0;
}

static int vol_io_run(int argc, char **argv, bool write_mode)
{
	static const struct option longopts[] = {
		{ "offset", required_argument, NULL, 'O' }, { "length", required_argument, NULL, 'L' },
		{ "file", required_argument, NULL, 'f' }, { "md", no_argument, NULL, 'M' },
		{ "degraded", no_argument, NULL, 'D' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	uint64_t off = 0, len = UINT64_MAX;
	const char *file = "-";
	unsigned flags = write_mode ? 0 : VOL_OPEN_RDONLY;
	struct vol_handle h;
	int c, r, fd;

	optind = 1;
	while ((c = getopt_long(argc, argv, "O:L:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'O':
		case 'L':
			if (cli_parse_size(argv[0], c == 'O' ? "--offset" : "--length", optarg, 0,
					   UINT64_MAX, 1, c == 'O' ? &off : &len))
				return CLI_EXIT_USAGE;
			break;
		case 'f': file = optarg; break;
		case 'M': flags |= VOL_OPEN_MD; break;
		case 'D': flags |= VOL_OPEN_DEGRADED; break;
		case 'h':
			printf("Usage: pony vol %s [-O OFFSET] [-L LENGTH] [-f FILE]%s DEV...|NAME|UUID=U|LABEL=L\n"
			       "%s the volume's bytes %s FILE (default: standard %s).\n%s",
			       argv[0], write_mode ? " [--degraded]" : "",
			       write_mode ? "Writes" : "Reads", write_mode ? "from" : "to",
			       write_mode ? "input" : "output",
			       write_mode ? "--degraded: write even with members absent (they go stale).\n"
					  : "Members may be absent: a read changes nothing.\n");
			return CLI_EXIT_OK;
		default: return CLI_EXIT_USAGE;
		}
	}
	r = vol_open("pony vol", argv + optind, argc - optind, flags, &h);
	if (r)
		return r;
	fd = !strcmp(file, "-") ? dup(write_mode ? 0 : 1)
		: open(file, write_mode ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		vol_close(&h);
		return cli_error("%s: %s", file, strerror(errno));
	}
	r = vol_copy(&h, fd, write_mode, off, len);
	close(fd);
	return vol_close(&h) ? CLI_EXIT_FAILURE : r;
}

static int vol_read_run(int argc, char **argv)
{
	return vol_io_run(argc, argv, false);
}

static int vol_write_run(int argc, char **argv)
{
	return vol_io_run(argc, argv, true);
}

static const struct cli_command vol_create = {
	"create", "make a volume of member devices (pony superblocks)", vol_create_run };
static const struct cli_command vol_assemble = {
	"assemble", "assemble members (pony or --md), check, print state", vol_assemble_run };
static const struct cli_command vol_status = {
	"status", "print a volume's state without changing it", vol_status_run };
static const struct cli_command vol_table = {
	"table", "print the volume's table in device-mapper syntax", vol_table_run };
static const struct cli_command vol_read = { "read", "copy volume bytes out", vol_read_run };
static const struct cli_command vol_write = { "write", "copy bytes into the volume", vol_write_run };

static const struct cli_command *const vol_commands[] = {
	&vol_create, &vol_assemble, &vol_status, &cli_vol_detail, &cli_vol_monitor, &vol_table,
	&cli_vol_fail, &cli_vol_add,
	&cli_vol_replace, &cli_vol_readd, &cli_vol_rebuild, &cli_vol_scrub, &cli_vol_badblocks, &cli_vol_expose,
	&cli_vol_stop, &cli_vol_serve, &vol_read, &vol_write,
};

static int vol_run(int argc, char **argv)
{
	return cli_dispatch("pony vol", vol_commands, ARRAY_SIZE(vol_commands), argc, argv);
}

const struct cli_command cli_vol_command = {
	.name = "vol",
	.summary = "volumes: RAID and block mapping (md layouts, dm tables)",
	.run = vol_run,
};
