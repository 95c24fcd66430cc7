/*
 * cmd_fs_layout.c - `pony fs layout FILE`: where a file's bytes live, asked
 * of the mount's daemon through its layout ioctls (docs/layout.md): each
 * extent's file offset, length, state and data-region offset, and on a
 * pony volume each piece's member (device, UUID) and member offset, which
 * is what a person needs to read the file by hand with dd. Printed through
 * table.c (libsmartcols), --json too.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "table.h"
#include "pony/fuse.h"
#include "pony/util.h"
#include "pony/volume.h"

#define CMD "pony fs layout"

static const char *const state_names[] = {
	[PONYFUSE_LAYOUT_DATA] = "data", [PONYFUSE_LAYOUT_UNWRITTEN] = "unwritten",
	[PONYFUSE_LAYOUT_HOLE] = "hole", [PONYFUSE_LAYOUT_DIRTY] = "dirty",
};
static const char *const role_names[] = {
	[PONYFUSE_PIECE_DATA] = "data", [PONYFUSE_PIECE_COPY] = "copy",
	[PONYFUSE_PIECE_P] = "P", [PONYFUSE_PIECE_Q] = "Q",
};
static const char *const member_states[] = { "working", "failed", "rebuilding" };

static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n && names[v] ? names[v] : "unknown";
}

/* The volume's members, fetched once (PONYFUSE_IOC_LAYOUT_MEMBER). */
struct members {
	uint32_t n;
	struct ponyfuse_layout_member_arg *m;
};

int cli_layout_error(const char *path, int err)
{
	switch (err) {
	case ENOTTY: return cli_error("%s: not on a pony mount", path);
	case EISDIR: return cli_error("%s: is a directory: only files have layouts", path);
	case EOPNOTSUPP: return cli_error("%s: this mount's filesystem has no layouts", path);
	case EPROTONOSUPPORT: return cli_error("%s: the mount's daemon speaks another layout "
					       "version", path);
	case EACCES: return cli_error("%s is encrypted: keys never leave the mount; read it "
				      "through the mount", path);
	case EXDEV: return cli_error("%s: a member's name now leads to a device with another "
				     "member's superblock: not written", path);
	default: return cli_path_error(path, err);
	}
}

static int members_get(int fd, const char *path, struct members *ret)
{
	struct ponyfuse_layout_member_arg first = { .version = PONYFUSE_LAYOUT_VERSION };

	if (ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &first) < 0)
		return cli_layout_error(path, errno);
	ret->n = first.nmembers;
	ret->m = calloc(first.nmembers, sizeof(*ret->m));
	if (!ret->m)
		return cli_error("out of memory");
	ret->m[0] = first;
	for (uint32_t i = 1; i < ret->n; i++) {
		ret->m[i] = (struct ponyfuse_layout_member_arg){ .version = PONYFUSE_LAYOUT_VERSION,
								  .index = i };
		if (ioctl(fd, PONYFUSE_IOC_LAYOUT_MEMBER, &ret->m[i]) < 0)
			return cli_layout_error(path, errno);
	}
	return 0;
}

/* A member's UUID as text, or "" when it has none. */
static void member_uuid(const struct ponyfuse_layout_member_arg *m, char buf[VOLUME_UUID_STRLEN])
{
	if (m->has_uuid)
		volume_uuid_format(m->uuid, buf);
	else
		buf[0] = 0;
}

/*
 * The output, all through table.c as one: a record of the file (FILE,
 * SIZE, BLOCK_SIZE, ENCRYPTED); on a volume a record of it (LEVEL, LAYOUT,
 * CHUNK, FULL_STRIPE, REGION_OFFSET, MEMBERS) and a table of its members
 * (MEMBER, DEVICE, UUID, STATE); then the extents, a tree whose child
 * lines are each extent's pieces. --json: one object, {"file": [...],
 * "volume": [...], "members": [...], "extents": [{..., "children":
 * [pieces]}]}, where extents and pieces have a column each of their own
 * (VOLUME_OFFSET, CRC32C: each block's as stored; ROLE, MEMBER, DEVICE,
 * UUID, MEMBER_OFFSET) that people read as one WHERE.
 */
struct layout_out {
	const char *path;
	bool json;
	const struct members *mb;
	struct cli_table *tables[4];     /* file, volume, members, extents */
	size_t ntables;
	struct cli_table *extents;       /* the last of tables */
};

enum { EX_FILE_OFFSET, EX_LENGTH, EX_STATE, EX_WHERE };          /* people */
enum { EJ_FILE_OFFSET, EJ_LENGTH, EJ_STATE, EJ_VOLUME_OFFSET, EJ_CRC32C, EJ_ROLE, EJ_MEMBER,
       EJ_DEVICE, EJ_UUID, EJ_MEMBER_OFFSET };                   /* JSON */

static struct cli_table *members_table(const struct layout_out *o)
{
	struct cli_table *t = cli_table_new("members", o->json);
	char uuid[VOLUME_UUID_STRLEN];

	cli_table_column(t, "MEMBER", CLI_COL_NUMBER);
	cli_table_column(t, "DEVICE", 0);
	cli_table_column(t, "UUID", 0);
	cli_table_column(t, "STATE", 0);
	for (uint32_t i = 0; i < o->mb->n; i++) {
		const struct ponyfuse_layout_member_arg *m = &o->mb->m[i];
		struct cli_table_line *ln = cli_table_line(t, NULL);

		member_uuid(m, uuid);
		cli_table_set_u64(ln, 0, i);
		cli_table_set(ln, 1, m->device[0] ? "%s" : NULL, m->device);
		cli_table_set(ln, 2, uuid[0] ? "%s" : NULL, uuid);
		cli_table_set(ln, 3, "%s", name_of(member_states, 3, m->state));
	}
	return t;
}

/* The records and tables before the extents, and the extents' empty tree. */
static void layout_begin(struct layout_out *o, const struct ponyfuse_layout_arg *a)
{
	static const char *const text_cols[] = { "FILE_OFFSET", "LENGTH", "STATE", "WHERE" };
	static const char *const json_cols[] = { "FILE_OFFSET", "LENGTH", "STATE", "VOLUME_OFFSET",
						 "CRC32C", "ROLE", "MEMBER", "DEVICE", "UUID",
						 "MEMBER_OFFSET" };
	const struct ponyfuse_layout_member_arg *g = o->mb->n ? &o->mb->m[0] : NULL;
	struct cli_record *r = cli_record_new("file", o->json);
	size_t ncols = o->json ? ARRAY_SIZE(json_cols) : ARRAY_SIZE(text_cols);

	cli_record_set(r, "FILE", 0, "%s", o->path);
	cli_record_set_u64(r, "SIZE", a->size);
	cli_record_set_u64(r, "BLOCK_SIZE", a->block_size);
	cli_record_set_bool(r, "ENCRYPTED", a->flags & PONYFUSE_LAYOUT_ENCRYPTED);
	o->tables[o->ntables++] = cli_record_table(r);
	if (g) {
		r = cli_record_new("volume", o->json);
		cli_record_set(r, "LEVEL", 0, "%s", g->level);
		cli_record_set(r, "LAYOUT", 0, g->layout[0] ? "%s" : NULL, g->layout);
		cli_record_set_u64(r, "CHUNK", g->chunk);
		cli_record_set_u64(r, "FULL_STRIPE", g->full_stripe);
		cli_record_set_u64(r, "REGION_OFFSET", g->region_offset);
		cli_record_set_u64(r, "MEMBERS", o->mb->n);
		o->tables[o->ntables++] = cli_record_table(r);
		o->tables[o->ntables++] = members_table(o);
	}
	o->extents = cli_table_new("extents", o->json);
	for (size_t c = 0; c < ncols; c++) {
		const char *name = o->json ? json_cols[c] : text_cols[c];
		unsigned flags = c == EX_FILE_OFFSET ? CLI_COL_TREE : 0;

		if (c == EX_LENGTH || (o->json && (c == EJ_FILE_OFFSET || c == EJ_VOLUME_OFFSET ||
						   c == EJ_MEMBER || c == EJ_MEMBER_OFFSET)))
			flags |= CLI_COL_NUMBER;
		if (o->json && c == EJ_CRC32C)
			flags |= CLI_COL_ARRAY | CLI_COL_NUMBER;
		cli_table_column(o->extents, name, flags);
	}
	o->tables[o->ntables++] = o->extents;
}

static void print_piece(const struct layout_out *o, struct cli_table_line *extent,
			const struct ponyfuse_layout_piece *p)
{
	const struct ponyfuse_layout_member_arg *m = p->member < o->mb->n ? &o->mb->m[p->member] : NULL;
	struct cli_table_line *ln = cli_table_line(o->extents, extent);
	char uuid[VOLUME_UUID_STRLEN] = "";

	if (m)
		member_uuid(m, uuid);
	cli_table_set_u64(ln, EX_FILE_OFFSET, p->file_offset);
	cli_table_set_u64(ln, EX_LENGTH, p->length);
	if (!o->json) {
		cli_table_set(ln, EX_STATE, "%s", name_of(role_names, 4, p->role));
		cli_table_set(ln, EX_WHERE, "member %u %s%s%s at %" PRIu64, p->member,
			      m ? m->device : "?", uuid[0] ? " uuid " : "", uuid, p->member_offset);
		return;
	}
	cli_table_set(ln, EJ_ROLE, "%s", name_of(role_names, 4, p->role));
	cli_table_set_u64(ln, EJ_MEMBER, p->member);
	cli_table_set(ln, EJ_DEVICE, m && m->device[0] ? "%s" : NULL, m ? m->device : NULL);
	cli_table_set(ln, EJ_UUID, uuid[0] ? "%s" : NULL, uuid);
	cli_table_set_u64(ln, EJ_MEMBER_OFFSET, p->member_offset);
}

/* An extent's stored CRC32Cs, one a line (the array column's form). */
static char *extent_csums(const struct ponyfuse_layout_arg *a, const struct ponyfuse_layout_extent *e)
{
	uint64_t n = e->state == PONYFUSE_LAYOUT_DATA ? e->length / a->block_size : 0;
	char *text = malloc(n * 11 + 1);
	size_t len = 0;

	if (!text)
		return NULL;
	text[0] = 0;
	for (uint64_t i = 0; i < n && e->first_csum + i < a->ncsums; i++)
		len += (size_t)sprintf(text + len, "%s%" PRIu32, i ? "\n" : "",
				       a->csums[e->first_csum + i]);
	return text;
}

static int print_extent(const struct layout_out *o, const struct ponyfuse_layout_arg *a,
			const struct ponyfuse_layout_extent *e)
{
	bool placed = e->volume_offset != PONYFUSE_LAYOUT_NO_OFFSET;
	struct cli_table_line *ln = cli_table_line(o->extents, NULL);

	cli_table_set_u64(ln, EX_FILE_OFFSET, e->file_offset);
	cli_table_set_u64(ln, EX_LENGTH, e->length);
	cli_table_set(ln, EX_STATE, "%s", name_of(state_names, 4, e->state));
	if (!o->json) {
		cli_table_set(ln, EX_WHERE, placed ? "volume %" PRIu64 : "-", e->volume_offset);
	} else {
		char *csums = extent_csums(a, e);

		if (!csums)
			return cli_error("out of memory");
		cli_table_set(ln, EJ_VOLUME_OFFSET, placed ? "%" PRIu64 : NULL, e->volume_offset);
		cli_table_set(ln, EJ_CRC32C, csums[0] ? "%s" : NULL, csums);
		free(csums);
	}
	for (uint32_t i = 0; i < e->npieces && e->first_piece + i < a->npieces; i++)
		print_piece(o, ln, &a->pieces[e->first_piece + i]);
	return 0;
}

/* OFF:LEN, each a byte count. */
static int parse_range(const char *text, uint64_t *off, uint64_t *len)
{
	char *colon = strchr(text, ':'), *end;

	if (!colon)
		return cli_usage_error(CMD, "--range wants OFF:LEN");
	errno = 0;
	*off = strtoull(text, &end, 0);
	if (errno || end != colon || text[0] == '-')
		return cli_usage_error(CMD, "bad offset in --range '%s'", text);
	*len = strtoull(colon + 1, &end, 0);
	if (errno || *end || !colon[1] || colon[1] == '-')
		return cli_usage_error(CMD, "bad length in --range '%s'", text);
	return 0;
}

/* Asks page after page and prints each; the first page decides the header. */
static int layout_walk(int fd, struct layout_out *o, struct members *mb, uint64_t off,
		       uint64_t len)
{
	struct ponyfuse_layout_arg *a = malloc(sizeof(*a));
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	int r = a ? 0 : cli_error("out of memory");

	for (bool first = true; !r; first = false) {
		*a = (struct ponyfuse_layout_arg){ .version = PONYFUSE_LAYOUT_VERSION, .offset = off,
						   .length = end - off };
		if (ioctl(fd, PONYFUSE_IOC_LAYOUT, a) < 0) {
			r = cli_layout_error(o->path, errno);
			break;
		}
		if (first && (a->flags & PONYFUSE_LAYOUT_ON_VOLUME))
			r = members_get(fd, o->path, mb);
		if (r)
			break;
		if (first)
			layout_begin(o, a);
		for (uint32_t i = 0; i < a->nextents && !r; i++)
			r = print_extent(o, a, &a->extents[i]);
		if (r)
			break;
		if ((a->flags & PONYFUSE_LAYOUT_COMPLETE) || a->next <= off)
			break;
		off = a->next;
	}
	free(a);
	if (!r)
		return cli_tables_print(o->tables, o->ntables);
	for (size_t i = 0; i < o->ntables; i++)
		cli_table_free(o->tables[i]);
	return r;
}

static int fs_layout_run(int argc, char **argv)
{
	struct members mb = { 0 };
	struct layout_out o = { 0 };
	uint64_t off = 0, len = UINT64_MAX;
	bool json = false;
	int c, r;

	static const struct option longopts[] = {
		{ "range", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "r:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (parse_range(optarg, &off, &len))
				return CLI_EXIT_USAGE;
			break;
		case 'j': json = true; break;
		case 'h':
			printf("Usage: " CMD " [--range OFF:LEN] [--json] FILE\n"
			       "Where FILE's bytes live (docs/layout.md), asked of its pony mount:\n"
			       "each extent's file offset, length, state (data, unwritten: reads as\n"
			       "zeros, hole, dirty: cached in the daemon, not yet on disk) and offset\n"
			       "in the data region; on a pony volume each piece of it, data and its\n"
			       "copies or P and Q, with its member (device, UUID) and the byte offset\n"
			       "on that member's device. --json adds each block's CRC32C as stored.\n"
			       "An encrypted file's layout says so: its blocks are ciphertext.\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error(CMD, "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error(CMD, "one FILE is needed");
	o.path = argv[optind];
	_cleanup_(closep) int fd = open(o.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return cli_path_error(o.path, errno);
	o.json = json;
	o.mb = &mb;
	r = layout_walk(fd, &o, &mb, off, len);
	free(mb.m);
	return r ? r : CLI_EXIT_OK;
}

const struct cli_command cli_fs_layout_command = {
	.name = "layout",
	.summary = "where a file's bytes live: extents and volume members",
	.run = fs_layout_run,
};
