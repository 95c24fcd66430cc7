/*
 * resolve.c - what lives at an address of the volume (docs/scrub.md): a
 * file's block (its inode, file offset and every path, hard links
 * included), a metadata page (the superblock, the chunk table, an SQLite
 * page or WAL frame, in the metadata region or a metadata chunk), a free
 * block, or parity. Bad-block logs and scrub findings name member bytes;
 * volume_unmap() turns those into volume bytes, and the extents_pblock
 * index (schema 5) turns a data block into its extent with one b-tree
 * descent: the extent with the greatest pblock <= block, if it reaches it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pony/volume.h"

/* Every way up from ?1 to the root, at most ?2 of them (loops end at 2048 levels). */
const char ponyfs_paths_sql[] =
	"WITH RECURSIVE up(cur, path, depth) AS ("
	" SELECT parent, X'2F' || name, 0 FROM dentries WHERE ino = ?1"
	" UNION ALL SELECT d.parent, X'2F' || d.name || up.path, up.depth + 1"
	" FROM dentries d JOIN up ON d.ino = up.cur WHERE up.cur != 1 AND up.depth < 2048)"
	" SELECT CAST(path AS BLOB) FROM up WHERE cur = 1 LIMIT ?2";

void ponyfs_name_put(FILE *out, const uint8_t *name, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (name[i] < 0x20 || name[i] == 0x7f || name[i] == '\\')
			fprintf(out, "\\x%02x", name[i]);
		else
			fputc(name[i], out);
	}
}

/* ino's paths into r->paths, as many as fit, and how many there are. */
static int resolve_paths(struct ponyfs *fs, uint64_t ino, struct vfs_resolve *r)
{
	sqlite3_stmt *s;
	size_t used = 0;
	int rc = ponyfs_prepare(fs, ponyfs_paths_sql, &s);

	if (rc < 0)
		return rc;
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, 65536);
	while ((rc = ponyfs_step_row(fs, s)) > 0) {
		char line[PATH_MAX * 4];
		FILE *out = fmemopen(line, sizeof(line), "w");
		long n;

		if (!out)
			break;
		ponyfs_name_put(out, sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0));
		n = ftell(out);
		fclose(out);
		r->npaths++;
		if (n > 0 && used + (size_t)n + 1 <= sizeof(r->paths)) {
			memcpy(r->paths + used, line, (size_t)n);
			r->paths[used + (size_t)n] = 0;
			used += (size_t)n + 1;
		}
	}
	sqlite3_reset(s);
	return rc;
}

/* Byte x of the database file (file 0) or the WAL (1) as a page or frame, from 1. */
static void resolve_meta_file(struct vfs_resolve *r, unsigned file, uint64_t x)
{
	r->what = VFS_RESOLVE_METADATA;
	r->meta = file ? VFS_META_WAL : VFS_META_DATABASE;
	/* A WAL: a 32-byte header, then frames of a 24-byte header and a page. */
	r->page = file ? (x < 32 ? 0 : (x - 32) / (24 + BS) + 1) : x / BS + 1;
}

/* Byte x of the metadata region. */
static void resolve_meta_byte(const struct ponyfs *fs, uint64_t x, struct vfs_resolve *r)
{
	const struct ponyfs_sb *sb = &fs->sb;

	r->what = VFS_RESOLVE_METADATA;
	if (x < PONYFS_SB_SIZE)
		r->meta = VFS_META_SUPERBLOCK;
	else if (sb->ctab_off && x >= sb->ctab_off && x < sb->ctab_off + 2 * PONYFS_CTAB_SIZE)
		r->meta = VFS_META_CHUNK_TABLE;
	else if (x >= sb->db_off && x < sb->db_off + sb->db_bytes)
		resolve_meta_file(r, 0, x - sb->db_off);
	else if (x >= sb->db_off + sb->db_bytes && x < sb->db_off + sb->db_bytes + sb->wal_bytes)
		resolve_meta_file(r, 1, x - sb->db_off - sb->db_bytes);
	else
		r->meta = VFS_META_UNUSED;
}

/* Byte in of data block b when a metadata chunk holds it: true. */
static bool resolve_chunk(const struct ponyfs *fs, uint64_t b, uint64_t in, struct vfs_resolve *r)
{
	uint64_t before[2] = { fs->sb.db_bytes, fs->sb.wal_bytes };

	for (unsigned i = 0; i < fs->chunks.n; i++) {
		const struct ponyfs_chunk *c = &fs->chunks.c[i];
		unsigned f = c->file ? 1 : 0;

		if (b >= c->pblock && b < c->pblock + c->nblocks) {
			resolve_meta_file(r, f, before[f] + (b - c->pblock) * BS + in);
			return true;
		}
		before[f] += c->nblocks * BS;
	}
	return false;
}

int ponyfs_resolve_block_locked(struct ponyfs *fs, uint64_t b, uint64_t in, struct vfs_resolve *r)
{
	sqlite3_stmt *s;
	int rc;

	r->block = b;
	if (resolve_chunk(fs, b, in, r))
		return 0;
	rc = ponyfs_prepare(fs, "SELECT ino, foff, pblock, nblocks FROM extents WHERE pblock <= ?1 "
			    "ORDER BY pblock DESC LIMIT 1", &s);
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(s, 1, (int64_t)b);
	rc = ponyfs_step_row(fs, s);
	if (rc > 0 && b < (uint64_t)sqlite3_column_int64(s, 2) + (uint64_t)sqlite3_column_int64(s, 3)) {
		r->what = VFS_RESOLVE_FILE;
		r->ino = (uint64_t)sqlite3_column_int64(s, 0);
		r->file_offset = ((uint64_t)sqlite3_column_int64(s, 1) + b -
				  (uint64_t)sqlite3_column_int64(s, 2)) * BS + in;
	} else if (rc >= 0) {
		r->what = VFS_RESOLVE_FREE;
	}
	sqlite3_reset(s);
	if (rc < 0)
		return rc;
	return r->what == VFS_RESOLVE_FILE ? resolve_paths(fs, r->ino, r) : 0;
}

/* A member byte to the volume byte it holds (P, Q: the row they protect). */
static int resolve_member(struct ponyfs *fs, struct vfs_resolve *r)
{
	struct volume_piece p;
	int rc;

	if (!fs->volume)
		return -ENODEV;
	rc = volume_unmap(fs->volume, r->member, r->member_offset, &p);
	if (rc == -ENOENT) {
		r->what = VFS_RESOLVE_NONE;
		return 1;
	}
	if (rc < 0)
		return rc;
	r->volume_offset = p.vol_off;
	r->role = p.role;
	if (p.role == VOLUME_PIECE_P || p.role == VOLUME_PIECE_Q) {
		r->what = VFS_RESOLVE_PARITY;
		r->row_length = p.len;
		return 1;
	}
	return 0;
}

/* The member byte holding volume byte r->volume_offset (its first copy). */
static int resolve_volume(struct ponyfs *fs, struct vfs_resolve *r)
{
	struct volume_piece p;
	int64_t n = volume_map(fs->volume, r->volume_offset, 1, &p, 1);

	if (n < 0)
		return -ERANGE;
	if (p.role == VOLUME_PIECE_NONE)
		return 0;
	r->member = p.member;
	r->member_offset = p.dev_start + p.dev_off;
	r->role = p.role;
	return 0;
}

int ponyfs_resolve_locked(struct ponyfs *fs, struct vfs_resolve *r)
{
	struct volume_segment_info seg;
	uint64_t x = r->volume_offset;
	unsigned segno;
	int rc;

	r->what = VFS_RESOLVE_NONE;
	r->npaths = 0;
	r->paths[0] = 0;
	if (!(r->flags & VFS_RESOLVE_BY_MEMBER))
		r->member = VFS_NO_MEMBER;
	if (!fs->volume) {              /* one image: the metadata region, then the data region */
		if (r->flags & VFS_RESOLVE_BY_MEMBER)
			return -ENODEV;
		if (x < fs->sb.meta_bytes) {
			resolve_meta_byte(fs, x, r);
			return 0;
		}
		x -= fs->sb.meta_bytes;
		if (x / BS >= fs->sb.data_blocks)
			return -ERANGE;
		return ponyfs_resolve_block_locked(fs, x / BS, x % BS, r);
	}
	rc = r->flags & VFS_RESOLVE_BY_MEMBER ? resolve_member(fs, r) : resolve_volume(fs, r);
	if (rc)
		return rc < 0 ? rc : 0;
	x = r->volume_offset;
	if (ponyfs_region_segment(fs, VOLUME_CLASS_METADATA, &segno, &seg) == 0 &&
	    x >= seg.start && x < seg.start + seg.len) {
		resolve_meta_byte(fs, x - seg.start, r);
		return 0;
	}
	if (ponyfs_region_segment(fs, VOLUME_CLASS_DATA, &segno, &seg) == 0 &&
	    x >= seg.start && x < seg.start + seg.len && (x - seg.start) / BS < fs->sb.data_blocks)
		return ponyfs_resolve_block_locked(fs, (x - seg.start) / BS, (x - seg.start) % BS, r);
	return 0;
}

int ponyfs_resolve(struct vfs *v, struct vfs_resolve *r)
{
	return PONYFS_LOCKED(ponyfs_of(v), ponyfs_resolve_locked(ponyfs_of(v), r));
}
