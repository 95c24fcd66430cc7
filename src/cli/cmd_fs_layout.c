/*
 * cmd_fs_layout.c - `pony fs layout FILE`: where a file's bytes live, asked
 * of the mount's daemon through its layout ioctls (docs/layout.md): each
 * extent's file offset, length, state and data-region offset, and on a
 * pony volume each piece's member (device, UUID) and member offset, which
 * is what a person needs to read the file by hand with dd.
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

/* The output: people's lines, or JSON (same fields). */
struct layout_out {
	const char *path;
	struct util_json *j;
	const struct members *mb;
	struct cli_table *t;             /* people's output: extents, pieces below each */
};

static void json_members(const struct layout_out *o)
{
	char uuid[VOLUME_UUID_STRLEN];

	util_json_array_begin(o->j, "members");
	for (uint32_t i = 0; i < o->mb->n; i++) {
		const struct ponyfuse_layout_member_arg *m = &o->mb->m[i];

		member_uuid(m, uuid);
		util_json_object_begin(o->j, NULL);
		util_json_uint(o->j, "index", i);
		util_json_string(o->j, "device", m->device);
		util_json_string(o->j, "uuid", uuid);
		util_json_string(o->j, "state", name_of(member_states, 3, m->state));
		util_json_object_end(o->j);
	}
	util_json_array_end(o->j);
}

/* The file and its volume, then the extents array is opened. */
static void json_header(const struct layout_out *o, const struct ponyfuse_layout_arg *a)
{
	const struct ponyfuse_layout_member_arg *g = o->mb->n ? &o->mb->m[0] : NULL;

	util_json_object_begin(o->j, NULL);
	util_json_string(o->j, "file", o->path);
	util_json_uint(o->j, "size", a->size);
	util_json_uint(o->j, "block_size", a->block_size);
	util_json_bool(o->j, "encrypted", a->flags & PONYFUSE_LAYOUT_ENCRYPTED);
	if (g) {
		util_json_object_begin(o->j, "volume");
		util_json_string(o->j, "level", g->level);
		util_json_string(o->j, "layout", g->layout);
		util_json_uint(o->j, "chunk", g->chunk);
		util_json_uint(o->j, "full_stripe", g->full_stripe);
		util_json_uint(o->j, "region_offset", g->region_offset);
		json_members(o);
		util_json_object_end(o->j);
	}
	util_json_array_begin(o->j, "extents");
}

static void text_header(const struct layout_out *o, const struct ponyfuse_layout_arg *a)
{
	const struct ponyfuse_layout_member_arg *g = o->mb->n ? &o->mb->m[0] : NULL;
	char uuid[VOLUME_UUID_STRLEN];

	printf("%s: %" PRIu64 " bytes, %u-byte blocks%s\n", o->path, a->size, a->block_size,
	       a->flags & PONYFUSE_LAYOUT_ENCRYPTED ? ", encrypted (direct readers refuse it)" : "");
	if (g)
		printf("volume: %s%s%s, chunk %" PRIu64 ", full stripe %" PRIu64
		       ", data region at %" PRIu64 ", %u members\n", g->level, g->layout[0] ? " " : "",
		       g->layout, g->chunk, g->full_stripe, g->region_offset, o->mb->n);
	for (uint32_t i = 0; i < o->mb->n; i++) {
		const struct ponyfuse_layout_member_arg *m = &o->mb->m[i];

		member_uuid(m, uuid);
		printf("  member %u: %s%s%s %s\n", i, m->device[0] ? m->device : "(missing)",
		       uuid[0] ? " uuid " : "", uuid, name_of(member_states, 3, m->state));
	}
}

/* The extents' table: a line an extent, its pieces as child lines. */
static struct cli_table *extents_table(void)
{
	struct cli_table *t = cli_table_new("extents", false);

	cli_table_column(t, "FILE_OFFSET", CLI_COL_TREE);
	cli_table_column(t, "LENGTH", CLI_COL_RIGHT);
	cli_table_column(t, "STATE", 0);
	cli_table_column(t, "WHERE", 0);
	return t;
}

static void print_piece(const struct layout_out *o, struct cli_table_line *extent,
			const struct ponyfuse_layout_piece *p)
{
	const struct ponyfuse_layout_member_arg *m = p->member < o->mb->n ? &o->mb->m[p->member] : NULL;
	char uuid[VOLUME_UUID_STRLEN] = "";

	if (m)
		member_uuid(m, uuid);
	if (!o->j) {
		struct cli_table_line *ln = cli_table_line(o->t, extent);

		cli_table_set_u64(ln, 0, p->file_offset);
		cli_table_set_u64(ln, 1, p->length);
		cli_table_set(ln, 2, "%s", name_of(role_names, 4, p->role));
		cli_table_set(ln, 3, "member %u %s%s%s at %" PRIu64, p->member, m ? m->device : "?",
			      uuid[0] ? " uuid " : "", uuid, p->member_offset);
		return;
	}
	util_json_object_begin(o->j, NULL);
	util_json_string(o->j, "role", name_of(role_names, 4, p->role));
	util_json_uint(o->j, "member", p->member);
	util_json_string(o->j, "device", m ? m->device : "");
	util_json_string(o->j, "uuid", uuid);
	util_json_uint(o->j, "member_offset", p->member_offset);
	util_json_uint(o->j, "file_offset", p->file_offset);
	util_json_uint(o->j, "length", p->length);
	util_json_object_end(o->j);
}

static void print_extent(const struct layout_out *o, const struct ponyfuse_layout_arg *a,
			 const struct ponyfuse_layout_extent *e)
{
	bool placed = e->volume_offset != PONYFUSE_LAYOUT_NO_OFFSET;
	uint64_t ncsums = e->state == PONYFUSE_LAYOUT_DATA ? e->length / a->block_size : 0;

	struct cli_table_line *ln = NULL;

	if (!o->j) {
		ln = cli_table_line(o->t, NULL);
		cli_table_set_u64(ln, 0, e->file_offset);
		cli_table_set_u64(ln, 1, e->length);
		cli_table_set(ln, 2, "%s", name_of(state_names, 4, e->state));
		if (placed)
			cli_table_set(ln, 3, "volume %" PRIu64, e->volume_offset);
		else
			cli_table_set(ln, 3, "-");
	} else {
		util_json_object_begin(o->j, NULL);
		util_json_uint(o->j, "file_offset", e->file_offset);
		util_json_uint(o->j, "length", e->length);
		util_json_string(o->j, "state", name_of(state_names, 4, e->state));
		if (placed)
			util_json_uint(o->j, "volume_offset", e->volume_offset);
		util_json_array_begin(o->j, "crc32c");
		for (uint64_t i = 0; i < ncsums && e->first_csum + i < a->ncsums; i++)
			util_json_uint(o->j, NULL, a->csums[e->first_csum + i]);
		util_json_array_end(o->j);
		util_json_array_begin(o->j, "pieces");
	}
	for (uint32_t i = 0; i < e->npieces && e->first_piece + i < a->npieces; i++)
		print_piece(o, ln, &a->pieces[e->first_piece + i]);
	if (o->j) {
		util_json_array_end(o->j);
		util_json_object_end(o->j);
	}
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
		if (first && o->j)
			json_header(o, a);
		else if (first) {
			text_header(o, a);
			o->t = extents_table();
		}
		for (uint32_t i = 0; i < a->nextents; i++)
			print_extent(o, a, &a->extents[i]);
		if ((a->flags & PONYFUSE_LAYOUT_COMPLETE) || a->next <= off)
			break;
		off = a->next;
	}
	if (!r && o->j) {
		util_json_array_end(o->j);
		util_json_object_end(o->j);
		util_json_end(o->j);
	} else if (!r) {
		r = cli_table_print(TAKE_PTR(o->t));
	}
	cli_table_free(o->t);
	free(a);
	return r;
}

static int fs_layout_run(int argc, char **argv)
{
	struct members mb = { 0 };
	struct util_json j;
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
	if (json) {
		util_json_init(&j, stdout);
		o.j = &j;
	}
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
