/*
 * badblocks.c - the bad and repaired regions a mount knows (docs/scrub.md):
 * the members' bad-block logs, as the volume keeps them, and the errors the
 * daemon saw itself, checksum mismatches while serving reads and scrub's
 * findings. Each error is recorded once per address and source, and
 * logged once, naming the file (its paths) or metadata it hit; the list
 * is what `pony fs badblocks` pages through, each entry resolved
 * (resolve.c) when asked, so a path renamed since is named as it is now.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pony/volume.h"

#define BAD_MAX 4096            /* entries kept; later errors are logged, not kept */
#define LOG_MAX 64              /* per member: bad-block log entries read */

uint64_t ponyfs_volume_byte(const struct ponyfs *fs, uint64_t block)
{
	struct volume_segment_info seg;
	unsigned segno;

	if (ponyfs_region_segment(fs, VOLUME_CLASS_DATA, &segno, &seg) == 0)
		return seg.start + block * BS;
	return fs->sb.meta_bytes + block * BS;
}

/* The entry of (source, vol_off), or NULL. */
static struct ponyfs_bad *bad_find(struct ponyfs *fs, uint32_t source, uint64_t vol_off)
{
	for (size_t i = 0; i < fs->nbad; i++)
		if (fs->bad[i].source == source && fs->bad[i].vol_off == vol_off)
			return &fs->bad[i];
	return NULL;
}

bool ponyfs_bad_add_locked(struct ponyfs *fs, const struct ponyfs_bad *b)
{
	struct ponyfs_bad *old = bad_find(fs, b->source, b->vol_off);

	if (old) {
		old->repaired = b->repaired;
		old->count++;
		return false;
	}
	if (fs->nbad == fs->cap_bad) {
		size_t cap = fs->cap_bad ? fs->cap_bad * 2 : 16;
		struct ponyfs_bad *n = cap <= BAD_MAX ? realloc(fs->bad, cap * sizeof(*n)) : NULL;

		if (!n)
			return true;    /* not kept; still logged */
		fs->bad = n;
		fs->cap_bad = cap;
	}
	fs->bad[fs->nbad] = *b;
	fs->bad[fs->nbad++].count = 1;
	return true;
}

/* "/a, /b" or "inode N (no path)" for a log line. */
static void who(const struct vfs_resolve *r, char *buf, size_t size)
{
	size_t used = 0;
	const char *p = r->paths;

	buf[0] = 0;
	for (uint32_t i = 0; i < r->npaths && *p && used < size; i++, p += strlen(p) + 1)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", p);
	if (!buf[0])
		snprintf(buf, size, "inode %llu (no path)", (unsigned long long)r->ino);
}

void ponyfs_bad_describe_locked(struct ponyfs *fs, const struct ponyfs_bad *b, char *buf,
				size_t size)
{
	static const char *const parts[] = { "superblock", "chunk table", "database", "WAL", "unused" };
	struct vfs_resolve *r = calloc(1, sizeof(*r));
	char paths[512];

	snprintf(buf, size, "unknown");
	if (!r)
		return;
	r->volume_offset = b->vol_off;
	if (b->member != VFS_NO_MEMBER) {
		r->flags = VFS_RESOLVE_BY_MEMBER;
		r->member = b->member;
		r->member_offset = b->member_offset;
	}
	if (ponyfs_resolve_locked(fs, r) == 0) {
		switch (r->what) {
		case VFS_RESOLVE_FILE:
			who(r, paths, sizeof(paths));
			snprintf(buf, size, "file %s offset %llu", paths,
				 (unsigned long long)r->file_offset);
			break;
		case VFS_RESOLVE_METADATA:
			snprintf(buf, size, "metadata (%s %s %llu)", parts[MIN(r->meta, 4u)],
				 r->meta == VFS_META_WAL ? "frame" : "page", (unsigned long long)r->page);
			break;
		case VFS_RESOLVE_FREE:
			snprintf(buf, size, "free data block %llu", (unsigned long long)r->block);
			break;
		case VFS_RESOLVE_PARITY:
			snprintf(buf, size, "parity of volume bytes %llu+%llu",
				 (unsigned long long)r->volume_offset, (unsigned long long)r->row_length);
			break;
		default:
			snprintf(buf, size, "no region of the filesystem");
		}
	}
	free(r);
}

/* The member holding data block pblock's byte 0 on member m (or the first copy, m < 0). */
static void bad_member(struct ponyfs *fs, uint64_t vol_off, int m, struct ponyfs_bad *b)
{
	struct volume_piece p[8];
	int64_t n = fs->volume ? volume_map(fs->volume, vol_off, 1, p, ARRAY_SIZE(p)) : 0;

	b->member = VFS_NO_MEMBER;
	for (int64_t i = 0; i < MIN(n, (int64_t)ARRAY_SIZE(p)); i++)
		if (p[i].role != VOLUME_PIECE_NONE && (m < 0 ? i == 0 : p[i].member == (unsigned)m)) {
			b->member = p[i].member;
			b->member_offset = p[i].dev_start + p[i].dev_off;
			return;
		}
}

void ponyfs_bad_block_locked(struct ponyfs *fs, uint32_t source, uint64_t ino, uint64_t fblk,
			     uint64_t pblock, int m)
{
	static const char *const what[] = { "bad-block log", "read", "scrub", "scrub" };
	struct ponyfs_bad b = { .source = source, .vol_off = ponyfs_volume_byte(fs, pblock),
				.len = BS, .repaired = m >= 0 };
	struct vfs_resolve *r = calloc(1, sizeof(*r));
	char paths[512];

	bad_member(fs, b.vol_off, m, &b);
	if (!ponyfs_bad_add_locked(fs, &b) || !r) {
		free(r);
		return;
	}
	if (ponyfs_resolve_block_locked(fs, pblock, 0, r) < 0 || r->what != VFS_RESOLVE_FILE)
		r->ino = ino;
	who(r, paths, sizeof(paths));
	if (m >= 0)
		ponyfs_log(fs, LOG_WARNING, "inode %llu offset %llu: data block %llu failed its "
			   "checksum: repaired member %d from the volume's redundancy (%s); file %s",
			   (unsigned long long)ino, (unsigned long long)(fblk * BS),
			   (unsigned long long)pblock, m, what[source], paths);
	else
		ponyfs_log(fs, LOG_ERR, "inode %llu offset %llu: data block %llu failed its checksum"
			   ": %s (%s); lost: file %s", (unsigned long long)ino,
			   (unsigned long long)(fblk * BS), (unsigned long long)pblock,
			   m == -EOPNOTSUPP ? "no redundancy to repair it from" : "no copy matches",
			   what[source], paths);
	free(r);
}

/* Entry index of the members' bad-block logs into ret; false past them (*index: what is left). */
static bool log_entry(struct ponyfs *fs, uint32_t *index, struct vfs_badblock *ret)
{
	uint64_t offs[LOG_MAX], lens[LOG_MAX];

	for (unsigned seg = 0; fs->volume && seg < volume_segment_count(fs->volume); seg++)
		for (unsigned m = 0; m < volume_member_count(fs->volume, seg); m++) {
			unsigned n = volume_member_badblocks(fs->volume, seg, m, offs, lens, LOG_MAX);

			if (*index >= n) {
				*index -= n;
				continue;
			}
			ret->source = VFS_BAD_MEMBER_LOG;
			ret->repaired = 0;
			ret->length = lens[*index];
			ret->where.flags = VFS_RESOLVE_BY_MEMBER;
			ret->where.member = m;
			ret->where.member_offset = volume_member_start(fs->volume, seg, m) + offs[*index];
			return true;
		}
	return false;
}

static int badblock_locked(struct ponyfs *fs, uint32_t index, struct vfs_badblock *ret)
{
	const struct ponyfs_bad *b;

	memset(ret, 0, sizeof(*ret));
	if (!log_entry(fs, &index, ret)) {
		if (index >= fs->nbad)
			return -ENOENT;
		b = &fs->bad[index];
		ret->source = b->source;
		ret->repaired = b->repaired;
		ret->length = b->len;
		ret->where.volume_offset = b->vol_off;
		if (b->row) {           /* no member to blame, no one block to name */
			ret->where.what = VFS_RESOLVE_PARITY;
			ret->where.member = VFS_NO_MEMBER;
			ret->where.row_length = b->len;
			return 0;
		}
		if (b->member != VFS_NO_MEMBER) {
			ret->where.flags = VFS_RESOLVE_BY_MEMBER;
			ret->where.member = b->member;
			ret->where.member_offset = b->member_offset;
		}
	}
	return ponyfs_resolve_locked(fs, &ret->where);
}

int ponyfs_badblock(struct vfs *v, uint32_t index, struct vfs_badblock *ret)
{
	return PONYFS_LOCKED(ponyfs_of(v), badblock_locked(ponyfs_of(v), index, ret));
}
