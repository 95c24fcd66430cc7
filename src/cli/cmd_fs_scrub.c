/*
 * cmd_fs_scrub.c - bad blocks back to files and the passive scrub, asked
 * of a pony mount's daemon through its ioctls (docs/scrub.md):
 * `pony fs resolve MNT VOLUME_OFFSET|MEMBER:SECTOR` says what lives at one
 * address, `pony fs badblocks MNT` lists every known bad or repaired
 * region with what lives there, and `pony fs scrub start|status|stop MNT`
 * runs the daemon's background pass over the volume.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "table.h"
#include "pony/fuse.h"
#include "pony/util.h"

static const char *const what_names[] = { "free", "file", "metadata", "parity", "none" };
static const char *const meta_names[] = { "superblock", "chunk table", "database", "WAL", "unused" };
static const char *const role_names[] = { "data", "copy", "P", "Q" };
static const char *const source_names[] = {
	"member bad-block log", "read", "scrub", "scrub checksum",
};

static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n ? names[v] : "unknown";
}

/* A failed ioctl's errno as a sentence about the mount. */
static int scrub_error(const char *cmd, const char *mnt, int err)
{
	switch (err) {
	case ENOTCONN: return cli_path_error(mnt, err);
	case ENOTTY: return cli_error("%s: %s: not a pony mount", cmd, mnt);
	case EOPNOTSUPP: return cli_error("%s: %s: this mount's filesystem has no bad-block map "
					  "or scrub (not ponyfs)", cmd, mnt);
	case EPROTONOSUPPORT: return cli_error("%s: %s: the mount's daemon speaks another "
					       "version of these ioctls", cmd, mnt);
	case ERANGE: return cli_error("%s: %s: the address is outside the volume", cmd, mnt);
	case ENODEV: return cli_error("%s: %s: not on a pony volume: it has no members", cmd, mnt);
	case EBUSY: return cli_error("%s: %s: a scrub is already running", cmd, mnt);
	case EROFS: return cli_error("%s: %s: mounted read-only: scrub repairs, so it needs a "
				     "read-write mount", cmd, mnt);
	default: return cli_error("%s: %s: %s", cmd, mnt, strerror(err));
	}
}

static int mount_open(const char *cmd, const char *mnt, int *ret_fd)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return cli_path_error(mnt, errno);
	*ret_fd = fd;
	return 0;
}

/* Member index's device as the mount opened it ("" when unknown). */
static void member_device(int fd, uint32_t index, char *buf, size_t size)
{
	struct ponyfuse_layout_member_arg m = { .version = PONYFUSE_LAYOUT_VERSION, .index = index };

	buf[0] = 0;
	if (index != UINT32_MAX && ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &m) == 0)
		snprintf(buf, size, "%s", m.device);
}

/* What lives at a resolved address, for people: "file offset 4096 of inode
 * 12: /a /b", "metadata, database page 3", "free (data block 7)" ... */
static void resolve_what(const struct ponyfuse_resolve_arg *a, char *buf, size_t size)
{
	const char *p = a->paths;
	size_t n = 0;

	switch (a->what) {
	case 0: snprintf(buf, size, "free (data block %" PRIu64 ")", a->block); break;
	case 1:
		n = (size_t)snprintf(buf, size, "file offset %" PRIu64 " of inode %" PRIu64 ":",
				     a->file_offset, a->ino);
		for (uint32_t i = 0; i < a->npaths && *p && n < size; i++, p += strlen(p) + 1)
			n += (size_t)snprintf(buf + n, size - n, " %s", p);
		if (!a->npaths && n < size)
			snprintf(buf + n, size - n, " (no path: an unlinked file still open)");
		break;
	case 2:
		n = (size_t)snprintf(buf, size, "metadata, %s", name_of(meta_names, 5, a->meta));
		if ((a->meta == 2 || a->meta == 3) && n < size)
			snprintf(buf + n, size - n, " %s %" PRIu64, a->meta == 2 ? "page" : "frame",
				 a->page);
		break;
	case 3:
		snprintf(buf, size, "parity of the stripe row at volume %" PRIu64 "+%" PRIu64,
			 a->volume_offset, a->row_length);
		break;
	default: snprintf(buf, size, "in no region of the filesystem"); break;
	}
}

/*
 * Where an address is and what lives there, as named fields: one home for
 * resolve's record and badblocks's table (whose columns they are). Fields
 * that do not apply (no member on one image; a block only of a file or
 * free space...) are NULL: no line in a record, JSON null in a table.
 * DESCRIPTION says it all for people ("file offset 4096 of inode 12: /a").
 */
enum addr_field {
	AF_VOLUME_OFFSET, AF_MEMBER, AF_DEVICE, AF_MEMBER_OFFSET, AF_MEMBER_SECTOR, AF_ROLE,
	AF_WHAT, AF_BLOCK, AF_INODE, AF_FILE_OFFSET, AF_NPATHS, AF_PATHS, AF_PART, AF_PAGE,
	AF_FRAME, AF_ROW_LENGTH, AF_DESCRIPTION, AF__N
};
static const struct {
	const char *name;
	unsigned flags;
	bool in_table;          /* a column of badblocks's table for people too */
} addr_fields[AF__N] = {
	[AF_VOLUME_OFFSET] = { "VOLUME_OFFSET", CLI_COL_NUMBER, true },
	[AF_MEMBER] = { "MEMBER", CLI_COL_NUMBER, true },
	[AF_DEVICE] = { "DEVICE", 0, true },
	[AF_MEMBER_OFFSET] = { "MEMBER_OFFSET", CLI_COL_NUMBER, false },
	[AF_MEMBER_SECTOR] = { "MEMBER_SECTOR", CLI_COL_NUMBER, true },
	[AF_ROLE] = { "ROLE", 0, true },
	[AF_WHAT] = { "WHAT", 0, false },
	[AF_BLOCK] = { "BLOCK", CLI_COL_NUMBER, false },
	[AF_INODE] = { "INODE", CLI_COL_NUMBER, false },
	[AF_FILE_OFFSET] = { "FILE_OFFSET", CLI_COL_NUMBER, false },
	[AF_NPATHS] = { "NPATHS", CLI_COL_NUMBER, false },
	[AF_PATHS] = { "PATHS", CLI_COL_ARRAY, false },
	[AF_PART] = { "PART", 0, false },
	[AF_PAGE] = { "PAGE", CLI_COL_NUMBER, false },
	[AF_FRAME] = { "FRAME", CLI_COL_NUMBER, false },
	[AF_ROW_LENGTH] = { "ROW_LENGTH", CLI_COL_NUMBER, false },
	[AF_DESCRIPTION] = { "DESCRIPTION", 0, true },   /* last: the longest */
};

struct addr_values {
	char *v[AF__N];         /* each field's text, or NULL; PATHS one a line */
	bool failed;            /* out of memory on the way */
};

static void addr_set(struct addr_values *o, enum addr_field f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void addr_set(struct addr_values *o, enum addr_field f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&o->v[f], fmt, ap) < 0) {
		o->v[f] = NULL;
		o->failed = true;
	}
	va_end(ap);
}

static void addr_values_free(struct addr_values *o)
{
	for (int f = 0; f < AF__N; f++)
		free(o->v[f]);
}

static void addr_values_get(int fd, const struct ponyfuse_resolve_arg *a, struct addr_values *o)
{
	char dev[256], what[sizeof(a->paths) + 128];
	const char *p = a->paths;
	size_t n = 0;

	*o = (struct addr_values){ 0 };
	addr_set(o, AF_VOLUME_OFFSET, "%" PRIu64, a->volume_offset);
	if (a->member != UINT32_MAX) {
		member_device(fd, a->member, dev, sizeof(dev));
		addr_set(o, AF_MEMBER, "%" PRIu32, a->member);
		if (dev[0])
			addr_set(o, AF_DEVICE, "%s", dev);
		addr_set(o, AF_MEMBER_OFFSET, "%" PRIu64, a->member_offset);
		addr_set(o, AF_MEMBER_SECTOR, "%" PRIu64, a->member_offset / 512);
		addr_set(o, AF_ROLE, "%s", name_of(role_names, 4, a->role));
	}
	addr_set(o, AF_WHAT, "%s", name_of(what_names, 5, a->what));
	if (a->what == 0 || a->what == 1)
		addr_set(o, AF_BLOCK, "%" PRIu64, a->block);
	if (a->what == 1) {
		addr_set(o, AF_INODE, "%" PRIu64, a->ino);
		addr_set(o, AF_FILE_OFFSET, "%" PRIu64, a->file_offset);
		addr_set(o, AF_NPATHS, "%" PRIu32, a->npaths);
		/* The paths one a line, as an array column takes them. */
		for (uint32_t i = 0; i < a->npaths && p[n]; i++)
			n += strlen(p + n) + 1;
		o->v[AF_PATHS] = calloc(1, n ? n : 1);
		if (!o->v[AF_PATHS])
			o->failed = true;
		for (size_t i = 0; i + 1 < n && o->v[AF_PATHS]; i++)
			o->v[AF_PATHS][i] = p[i] ? p[i] : '\n';
	} else if (a->what == 2) {
		addr_set(o, AF_PART, "%s", name_of(meta_names, 5, a->meta));
		if (a->meta == 2 || a->meta == 3)
			addr_set(o, a->meta == 2 ? AF_PAGE : AF_FRAME, "%" PRIu64, a->page);
	} else if (a->what == 3) {
		addr_set(o, AF_ROW_LENGTH, "%" PRIu64, a->row_length);
	}
	resolve_what(a, what, sizeof(what));
	addr_set(o, AF_DESCRIPTION, "%s", what);
}

static int member_find(int fd, const char *text)
{
	struct ponyfuse_layout_member_arg m = { .version = PONYFUSE_LAYOUT_VERSION };
	char *end;
	unsigned long i = strtoul(text, &end, 10);

	if (*text && !*end && text[0] != '-') {
		m.index = (uint32_t)MIN(i, (unsigned long)UINT32_MAX);
		return ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &m) == 0 ? (int)m.index : -1;
	}
	for (m.index = 0; ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &m) == 0 && m.index < m.nmembers;
	     m.index++) {
		if (!strcmp(m.device, text))
			return (int)m.index;
		m.version = PONYFUSE_LAYOUT_VERSION;
	}
	return -1;
}

/* VOLUME_OFFSET or MEMBER:SECTOR into a. */
static int address_parse(int fd, const char *cmd, const char *text, struct ponyfuse_resolve_arg *a)
{
	const char *colon = strrchr(text, ':');
	char *end;
	int m;

	errno = 0;
	if (!colon) {
		a->volume_offset = strtoull(text, &end, 0);
		if (errno || *end || !*text || text[0] == '-')
			return cli_usage_error(cmd, "bad address '%s': a volume byte offset or "
					       "MEMBER:SECTOR is wanted", text);
		return 0;
	}
	a->flags = PONYFUSE_RESOLVE_BY_MEMBER;
	a->member_offset = strtoull(colon + 1, &end, 0) * 512;
	if (errno || *end || !colon[1] || colon[1] == '-')
		return cli_usage_error(cmd, "bad sector in '%s': MEMBER:SECTOR (512-byte sectors "
				       "of the member's device) is wanted", text);
	char member[512];

	snprintf(member, sizeof(member), "%.*s", (int)(colon - text), text);
	m = member_find(fd, member);
	if (m < 0)
		return cli_usage_error(cmd, "bad member '%s' in '%s': neither a member index nor "
				       "a member device of this mount", member, text);
	a->member = (uint32_t)m;
	return 0;
}

/* --json and --help only; the remaining arguments from *ret_optind. -1: help printed. */
static int json_opts(const char *cmd, const char *help, int argc, char **argv, bool *json)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': *json = true; break;
		case 'h': fputs(help, stdout); return -1;
		default: return cli_usage_error(cmd, "bad option");
		}
	}
	return 0;
}

/*
 * resolve's answer, a record (table.c) of the address fields: a FIELD
 * VALUE line each that applies for people, {"address": [{...}]} as JSON
 * (paths an array).
 */
static int resolve_print(int fd, const struct ponyfuse_resolve_arg *a, bool json)
{
	struct cli_record *rec = cli_record_new("address", json);
	const char *paths[ARRAY_SIZE(a->paths) / 2 + 1];
	struct addr_values o;
	size_t n = 0;
	int r;

	addr_values_get(fd, a, &o);
	for (int f = 0; f < AF__N; f++) {
		char *v = o.v[f];

		if (!v)
			continue;
		if (f != AF_PATHS) {
			cli_record_set(rec, addr_fields[f].name, addr_fields[f].flags, "%s", v);
			continue;
		}
		for (char *line = *v ? v : NULL, *next; line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = 0;
			paths[n++] = line;
		}
		cli_record_set_list(rec, addr_fields[f].name, paths, n);
	}
	r = o.failed ? cli_error("out of memory") : cli_record_print(TAKE_PTR(rec));
	cli_record_free(rec);
	addr_values_free(&o);
	return r;
}

#define RESOLVE "pony fs resolve"
static int fs_resolve_run(int argc, char **argv)
{
	struct ponyfuse_resolve_arg *a = calloc(1, sizeof(*a));
	_cleanup_(closep) int fd = -1;
	bool json = false;
	int r = a ? json_opts(RESOLVE, "Usage: " RESOLVE " MNT VOLUME_OFFSET|MEMBER:SECTOR [--json]\n"
			      "What lives at one address of the pony mount MNT's volume: a file\n"
			      "(its inode, file offset and every path), metadata (which part, the\n"
			      "SQLite page or WAL frame), free space, or parity. VOLUME_OFFSET is a\n"
			      "byte of the volume (on one image: of the image); MEMBER:SECTOR a\n"
			      "512-byte sector of a member's device, MEMBER its index or device.\n",
			      argc, argv, &json) : cli_error("out of memory");

	if (!r && optind != argc - 2)
		r = cli_usage_error(RESOLVE, "MNT and an address are needed");
	if (!r)
		r = mount_open(RESOLVE, argv[optind], &fd);
	if (!r)
		r = address_parse(fd, RESOLVE, argv[optind + 1], a);
	if (!r) {
		a->version = PONYFUSE_SCRUB_VERSION;
		if (ioctl(fd, PONYFUSE_IOC_RESOLVE, a) < 0)
			r = scrub_error(RESOLVE, argv[optind], errno);
	}
	if (!r)
		r = resolve_print(fd, a, json);
	free(a);
	return r < 0 ? CLI_EXIT_OK : r;
}

#define BADBLOCKS "pony fs badblocks"
/*
 * The bad-block table: SOURCE, REPAIRED, LENGTH, then the address fields,
 * for people those that fit a line (DESCRIPTION last, the longest), as
 * JSON all of them: {"badblocks": [{"source": ..., "paths": [...]}, ...]}.
 */
enum { BB_SOURCE, BB_REPAIRED, BB_LENGTH, BB__N };

static struct cli_table *badblocks_table(bool json)
{
	struct cli_table *t = cli_table_new("badblocks", json);

	cli_table_column(t, "SOURCE", 0);
	cli_table_column(t, "REPAIRED", CLI_COL_BOOL);
	cli_table_column(t, "LENGTH", CLI_COL_NUMBER);
	for (int f = 0; f < AF__N; f++)
		if (json || addr_fields[f].in_table)
			cli_table_column(t, addr_fields[f].name, addr_fields[f].flags);
	return t;
}

/* One known bad region as a row: where it is and what lives there. */
static int badblocks_row(struct cli_table *t, int fd, const struct ponyfuse_badblock_arg *a,
			 bool json)
{
	struct cli_table_line *ln = cli_table_line(t, NULL);
	struct addr_values o;
	int col = BB__N;

	cli_table_set(ln, BB_SOURCE, "%s", name_of(source_names, 4, a->source));
	cli_table_set_bool(ln, BB_REPAIRED, a->repaired);
	cli_table_set_u64(ln, BB_LENGTH, a->length);
	addr_values_get(fd, &a->where, &o);
	for (int f = 0; f < AF__N; f++)
		if (json || addr_fields[f].in_table)
			cli_table_set(ln, col++, o.v[f] ? "%s" : NULL, o.v[f]);
	addr_values_free(&o);
	return o.failed ? cli_error("out of memory") : 0;
}

static int fs_badblocks_run(int argc, char **argv)
{
	struct ponyfuse_badblock_arg *a = calloc(1, sizeof(*a));
	_cleanup_(closep) int fd = -1;
	struct cli_table *t = NULL;
	bool json = false;
	uint32_t i;
	int r = a ? json_opts(BADBLOCKS, "Usage: " BADBLOCKS " MNT [--json]\n"
			      "Every known bad or repaired region of the pony mount MNT: its members'\n"
			      "bad-block logs, the checksum mismatches its daemon saw while serving\n"
			      "reads, and scrub's findings; each with its member, member sector, volume\n"
			      "offset and what lives there (paths and file offsets, metadata, free).\n",
			      argc, argv, &json) : cli_error("out of memory");

	if (!r && optind != argc - 1)
		r = cli_usage_error(BADBLOCKS, "one mount point is needed");
	if (!r)
		r = mount_open(BADBLOCKS, argv[optind], &fd);
	if (!r)
		t = badblocks_table(json);
	for (i = 0; !r; i++) {
		*a = (struct ponyfuse_badblock_arg){ .version = PONYFUSE_SCRUB_VERSION, .index = i };
		if (ioctl(fd, PONYFUSE_IOC_BADBLOCK, a) < 0) {
			if (errno != ENOENT)
				r = scrub_error(BADBLOCKS, argv[optind], errno);
			break;
		}
		r = badblocks_row(t, fd, a, json);
	}
	/* none, for people: a sentence rather than a table of headings alone */
	if (!r && !i && !json)
		printf("no bad blocks known\n");
	else if (!r)
		r = cli_table_print(TAKE_PTR(t));
	free(a);
	cli_table_free(t);
	return r < 0 ? CLI_EXIT_OK : r;
}

static const char *const scrub_states[] = { "idle", "running", "stopped", "done", "failed" };

/*
 * The scrub's state, a record (table.c): STATE (idle, running, stopped,
 * done, failed), PERCENT, POSITION and TOTAL (volume bytes), ETA and
 * ELAPSED (seconds; ETA while running, once there is a rate), CHECKED,
 * REPAIRED and LOST (blocks), YIELDED_MS (of the run, waiting for the
 * mount's reads), ERROR (failed). --json: {"scrub": [{...}]}.
 */
static int scrub_print(const char *mnt, const struct ponyfuse_scrub_arg *a, bool json)
{
	struct cli_record *r = cli_record_new("scrub", json);
	unsigned pct = a->total ? (unsigned)(100 * (a->position > a->total ? a->total : a->position) /
					     a->total) : 0;
	bool eta = a->state == 1 && a->position && a->elapsed_ms;

	cli_record_set(r, "MOUNTPOINT", 0, "%s", mnt);
	cli_record_set(r, "STATE", 0, "%s", name_of(scrub_states, 5, a->state));
	cli_record_set_u64(r, "PERCENT", pct);
	cli_record_set_u64(r, "POSITION", a->position);
	cli_record_set_u64(r, "TOTAL", a->total);
	cli_record_set(r, "ETA", CLI_COL_NUMBER, eta ? "%.0f" : NULL,
		       (double)(a->total - a->position) * (double)a->elapsed_ms / 1000.0 /
		       (double)(a->position ? a->position : 1));
	cli_record_set_u64(r, "ELAPSED", a->elapsed_ms / 1000);
	cli_record_set_u64(r, "CHECKED", a->checked);
	cli_record_set_u64(r, "REPAIRED", a->repaired);
	cli_record_set_u64(r, "LOST", a->lost);
	cli_record_set_u64(r, "YIELDED_MS", a->yielded_ms);
	cli_record_set(r, "ERROR", 0, a->state == 4 ? "%s" : NULL, strerror(-a->error));
	return cli_record_print(r);
}

#define SCRUB "pony fs scrub"
/*
 * How long --wait sleeps before it asks again: a quarter of the time the
 * pass's rate so far says is left, between 1 ms and 100 ms. A fixed 100 ms
 * made a short pass look up to 100 ms longer than it was (a 0.15 s pass of
 * bench/ponyfs's scrub row returned at 0.2 s); a long one is still asked
 * ten times a second at most.
 */
static uint64_t wait_poll_ns(const struct ponyfuse_scrub_arg *a)
{
	uint64_t left_ms;

	if (!a->position || a->position >= a->total)
		return 1000000;
	left_ms = (uint64_t)((double)a->elapsed_ms * (double)(a->total - a->position) /
			     (double)a->position);
	return MIN(MAX(left_ms / 4, 1ull), 100ull) * 1000000;
}

static int scrub_opts(int argc, char **argv, uint64_t *rate, bool *wait, bool *json)
{
	static const struct option longopts[] = {
		{ "rate", required_argument, NULL, 'r' },
		{ "wait", no_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t mbs;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "r:wh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if ((r = cli_parse_uint(SCRUB, "--rate", optarg, 1, 1000000, &mbs)))
				return r;
			*rate = mbs * 1000000;
			break;
		case 'w': *wait = true; break;
		case 'j': *json = true; break;
		case 'h':
			printf("Usage: " SCRUB " start|status|stop MNT [--rate MB/s] [--wait] [--json]\n"
			       "The passive scrub of the pony mount MNT (docs/scrub.md): its daemon\n"
			       "reads every block of the metadata and of every file in volume order,\n"
			       "checks checksums, mirrors and parity, repairs from redundancy what it\n"
			       "can and names the files it cannot repair. It backs off while reads are\n"
			       "served, keeps its position in the filesystem (stop, unmount or a crash:\n"
			       "start goes on from there) and runs at most --rate MB/s (10^6 bytes;\n"
			       "default: no limit). Each action prints the scrub's state, a FIELD\n"
			       "VALUE line each: MOUNTPOINT, STATE (idle, running, stopped, done,\n"
			       "failed), PERCENT, POSITION, TOTAL (bytes), ETA, ELAPSED (seconds),\n"
			       "CHECKED, REPAIRED, LOST (blocks), YIELDED_MS (the run's time spent\n"
			       "waiting for the mount's reads), ERROR. --json: as JSON,\n"
			       "{\"scrub\": [{\"state\": ..., ...}]}. --wait: start returns when the\n"
			       "pass is over, with its state. Exit 1 when the pass failed.\n");
			return -1;
		default: return cli_usage_error(SCRUB, "bad option");
		}
	}
	return 0;
}

static int fs_scrub_run(int argc, char **argv)
{
	struct ponyfuse_scrub_arg a = { .version = PONYFUSE_SCRUB_VERSION };
	_cleanup_(closep) int fd = -1;
	uint64_t rate = 0;
	bool wait = false, json = false;
	const char *op, *mnt;
	int r = scrub_opts(argc, argv, &rate, &wait, &json);

	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	if (optind != argc - 2)
		return cli_usage_error(SCRUB, "start, status or stop and a mount point are needed");
	op = argv[optind];
	mnt = argv[optind + 1];
	if (!strcmp(op, "start"))
		a.op = 1;
	else if (!strcmp(op, "stop"))
		a.op = 2;
	else if (strcmp(op, "status"))
		return cli_usage_error(SCRUB, "unknown action '%s': start, status or stop", op);
	if (rate && a.op != 1)
		return cli_usage_error(SCRUB, "--rate is for start");
	if (wait && a.op != 1)
		return cli_usage_error(SCRUB, "--wait is for start");
	r = mount_open(SCRUB, mnt, &fd);
	if (r)
		return r;
	a.rate = rate;
	if (ioctl(fd, PONYFUSE_IOC_SCRUB, &a) < 0)
		return scrub_error(SCRUB, mnt, errno);
	while (wait && a.state == 1) {
		uint64_t ns = wait_poll_ns(&a);

		nanosleep(&(struct timespec){ .tv_nsec = (long)ns }, NULL);
		a = (struct ponyfuse_scrub_arg){ .version = PONYFUSE_SCRUB_VERSION };
		if (ioctl(fd, PONYFUSE_IOC_SCRUB, &a) < 0)
			return scrub_error(SCRUB, mnt, errno);
	}
	r = scrub_print(mnt, &a, json);
	return r ? r : a.state == 4 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

const struct cli_command cli_fs_resolve_command = {
	.name = "resolve",
	.summary = "what lives at a volume offset or member sector: file, metadata, free",
	.run = fs_resolve_run,
};
const struct cli_command cli_fs_badblocks_command = {
	.name = "badblocks",
	.summary = "every known bad or repaired region, with the files it hits",
	.run = fs_badblocks_run,
};
const struct cli_command cli_fs_scrub_command = {
	.name = "scrub",
	.summary = "the passive scrub: start, status, stop",
	.run = fs_scrub_run,
};
