/*
 * chunks.c - metadata space that grows into the data region, as btrfs
 * allocates metadata chunks from its one pool. The database file and its
 * WAL each start in their fixed range of the metadata region; when one
 * needs more room, a chunk of free data blocks becomes its next extent.
 * SQLite must know where its files live before it can read anything, so
 * the list of chunks is kept outside it too: the chunk table, two copies
 * after the superblock, each with a generation and a CRC32C; the newer
 * valid copy counts (docs/ponyfs-format.md).
 *
 * Crash safety: a chunk's blocks leave the free table in a committed
 * transaction that also records them in the meta_chunks table, and only
 * then is the chunk table written and the VFS allowed to use them. So
 * the chunk table never names blocks the database thinks free, and a
 * crash in between leaves a chunk in meta_chunks that the table lacks:
 * mount adds it (never the other way round). Chunks are never given back.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CTAB_MAGIC "PONYCHK"
/* A chunk smaller than this is not worth an entry of the table. */
#define CHUNK_MIN_BLOCKS 16u

/* Chunk table copy, little-endian (docs/ponyfs-format.md). Never reorder. */
struct ctab_entry_disk {
/*00*/	le64 pblock;                    /* first data-region block */
/*08*/	le32 nblocks;
/*0c*/	uint8_t file;                   /* PONYFS_SQLITE_DB or PONYFS_SQLITE_WAL */
/*0d*/	uint8_t reserved[3];
};
_Static_assert(sizeof(struct ctab_entry_disk) == 16, "on-disk size");

struct ctab_disk {
/*00*/	uint8_t magic[8];
/*08*/	le32 crc32c;                    /* of all 4096 bytes, this field zero */
/*0c*/	le32 count;
/*10*/	le64 generation;
/*18*/	uint8_t uuid[16];               /* the filesystem's */
/*28*/	uint8_t reserved[24];
/*40*/	struct ctab_entry_disk e[PONYFS_CHUNKS_MAX];
};
_Static_assert(sizeof(struct ctab_disk) == PONYFS_CTAB_SIZE, "on-disk size");

static uint32_t ctab_crc(const struct ctab_disk *d)
{
	return ponyfs_block_crc(d, sizeof(*d), offsetof(struct ctab_disk, crc32c));
}

/* A copy that is whole, ours and sane; -EUCLEAN otherwise. */
static int ctab_decode(const struct ctab_disk *d, const struct ponyfs_sb *sb, struct ponyfs_chunks *ret)
{
	uint32_t n = le32_to_cpu(d->count);

	if (memcmp(d->magic, CTAB_MAGIC, 8) || le32_to_cpu(d->crc32c) != ctab_crc(d) ||
	    memcmp(d->uuid, sb->uuid, 16) || n > PONYFS_CHUNKS_MAX)
		return -EUCLEAN;
	ret->gen = le64_to_cpu(d->generation);
	ret->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct ponyfs_chunk *c = &ret->c[i];

		c->pblock = le64_to_cpu(d->e[i].pblock);
		c->nblocks = le32_to_cpu(d->e[i].nblocks);
		c->file = d->e[i].file;
		if (c->file > PONYFS_SQLITE_WAL || !c->nblocks || c->pblock + c->nblocks > sb->data_blocks)
			return -EUCLEAN;
	}
	return 0;
}

int ponyfs_chunks_read(struct bdev *meta, const struct ponyfs_sb *sb, struct ponyfs_chunks *ret)
{
	_cleanup_(freep) struct ctab_disk *d = malloc(sizeof(*d));
	struct ponyfs_chunks *c = calloc(2, sizeof(*c));
	int best = -1, r = d && c ? 0 : -ENOMEM;

	memset(ret, 0, sizeof(*ret));
	if (r >= 0 && !(sb->flags & PONYFS_FEAT_META_CHUNKS)) {
		free(c);
		return 0;               /* an image from before chunks: fixed metadata only */
	}
	for (int i = 0; r >= 0 && i < 2; i++) {
		r = bdev_pread(meta, d, sizeof(*d), sb->ctab_off + (uint64_t)i * PONYFS_CTAB_SIZE);
		if (r >= 0 && ctab_decode(d, sb, &c[i]) >= 0 && (best < 0 || c[i].gen > c[best].gen))
			best = i;
	}
	if (r >= 0 && best < 0)
		r = -EUCLEAN;           /* neither copy is whole: not ours to guess */
	if (r >= 0)
		*ret = c[best];
	free(c);
	return r;
}

/* Writes c as the next generation, over the older copy, and flushes. */
int ponyfs_chunks_write(struct bdev *meta, const struct ponyfs_sb *sb, struct ponyfs_chunks *c)
{
	_cleanup_(freep) struct ctab_disk *d = calloc(1, sizeof(*d));
	uint64_t gen = c->gen + 1;
	int r;

	if (!d)
		return -ENOMEM;
	memcpy(d->magic, CTAB_MAGIC, 8);
	d->count = cpu_to_le32(c->n);
	d->generation = cpu_to_le64(gen);
	memcpy(d->uuid, sb->uuid, 16);
	for (unsigned i = 0; i < c->n; i++) {
		d->e[i].pblock = cpu_to_le64(c->c[i].pblock);
		d->e[i].nblocks = cpu_to_le32((uint32_t)c->c[i].nblocks);
		d->e[i].file = c->c[i].file;
	}
	d->crc32c = cpu_to_le32(ctab_crc(d));
	r = bdev_pwrite(meta, d, sizeof(*d), sb->ctab_off + (gen % 2) * PONYFS_CTAB_SIZE);
	if (r >= 0)
		r = bdev_flush(meta);
	if (r >= 0)
		c->gen = gen;
	return r;
}

/* mkfs: an empty table in one copy, the other zeroed (not a table). */
int ponyfs_chunks_init(struct bdev *meta, const struct ponyfs_sb *sb)
{
	_cleanup_(freep) uint8_t *zero = calloc(1, 2 * PONYFS_CTAB_SIZE);
	struct ponyfs_chunks c = { 0 };
	int r;

	if (!zero)
		return -ENOMEM;
	r = bdev_pwrite(meta, zero, 2 * PONYFS_CTAB_SIZE, sb->ctab_off);
	return r < 0 ? r : ponyfs_chunks_write(meta, sb, &c);
}

static struct ponyfs_sqlite_extent chunk_extent(const struct ponyfs_chunk *c)
{
	return (struct ponyfs_sqlite_extent){ .dev = PONYFS_SQLITE_DATA, .off = c->pblock * BS,
					      .len = c->nblocks * BS };
}

/* Where the two files live: their fixed ranges, then their chunks in order. */
static void chunks_maps(const struct ponyfs_sb *sb, const struct ponyfs_chunks *c,
			struct ponyfs_sqlite_map *db, struct ponyfs_sqlite_map *wal)
{
	db->n = wal->n = 1;
	db->e[0] = (struct ponyfs_sqlite_extent){ .dev = PONYFS_SQLITE_META, .off = sb->db_off,
						  .len = sb->db_bytes };
	wal->e[0] = (struct ponyfs_sqlite_extent){ .dev = PONYFS_SQLITE_META,
						   .off = sb->db_off + sb->db_bytes, .len = sb->wal_bytes };
	for (unsigned i = 0; i < c->n; i++) {
		struct ponyfs_sqlite_map *m = c->c[i].file == PONYFS_SQLITE_WAL ? wal : db;

		m->e[m->n++] = chunk_extent(&c->c[i]);
	}
}

int ponyfs_meta_open(struct bdev *meta, struct bdev *data, const struct ponyfs_sb *sb,
		     struct ponyfs_chunks *ret_chunks, sqlite3 **ret)
{
	struct bdev *const devs[2] = { meta, data };
	struct ponyfs_sqlite_map *maps = calloc(2, sizeof(*maps));
	int r = maps ? ponyfs_chunks_read(meta, sb, ret_chunks) : -ENOMEM;

	if (r >= 0) {
		chunks_maps(sb, ret_chunks, &maps[0], &maps[1]);
		r = ponyfs_sqlite_open(devs, &maps[0], &maps[1], ret);
	}
	free(maps);
	return r;
}

int ponyfs_sqlite_open_sb(struct bdev *meta, struct bdev *data, const struct ponyfs_sb *sb,
			  sqlite3 **ret)
{
	struct ponyfs_chunks *c = malloc(sizeof(*c));
	int r = c ? ponyfs_meta_open(meta, data, sb, c, ret) : -ENOMEM;

	free(c);
	return r;
}

/*
 * Mount: the chunks meta_chunks records are the chunk table's, in the same
 * order, plus those a crash kept from reaching the table (growth commits
 * them first): those are added, and the table written when the mount may.
 */
int ponyfs_chunks_reconcile_locked(struct ponyfs *fs)
{
	struct ponyfs_chunks *c = &fs->chunks;
	sqlite3_stmt *s = NULL;
	unsigned seen = 0, added = 0;
	int r = ponyfs_prepare(fs, "SELECT seq, file, pblock, nblocks FROM meta_chunks ORDER BY seq", &s);

	while (r >= 0 && (r = ponyfs_step_row(fs, s)) > 0) {
		struct ponyfs_chunk k = {
			.pblock = (uint64_t)sqlite3_column_int64(s, 2),
			.nblocks = (uint64_t)sqlite3_column_int64(s, 3),
			.file = (uint8_t)sqlite3_column_int64(s, 1),
		};
		bool sane = (uint64_t)sqlite3_column_int64(s, 0) == seen && k.file <= PONYFS_SQLITE_WAL &&
			    k.nblocks && k.pblock + k.nblocks <= fs->sb.data_blocks &&
			    seen < PONYFS_CHUNKS_MAX && (fs->sb.flags & PONYFS_FEAT_META_CHUNKS);

		if (sane && seen < c->n)
			sane = k.pblock == c->c[seen].pblock && k.nblocks == c->c[seen].nblocks &&
			       k.file == c->c[seen].file;
		if (!sane) {
			r = -EUCLEAN;
			break;
		}
		if (seen++ < c->n)
			continue;
		c->c[c->n++] = k;
		added++;
		r = ponyfs_sqlite_extend(fs->db, k.file, &(struct ponyfs_sqlite_extent){
			.dev = PONYFS_SQLITE_DATA, .off = k.pblock * BS, .len = k.nblocks * BS });
	}
	if (s)
		sqlite3_reset(s);
	if (r >= 0 && seen < c->n)
		r = -EUCLEAN;           /* a chunk the database never took from free space */
	if (r == -EUCLEAN)
		ponyfs_log(fs, LOG_ERR, "the chunk table and the meta_chunks table disagree "
			   "(chunk %u): run pony fsck", seen);
	if (r >= 0 && added && !fs->read_only)
		r = ponyfs_chunks_write(fs->meta, &fs->sb, c);
	if (r >= 0 && added)
		ponyfs_log(fs, LOG_NOTICE, "added %u metadata chunks to the chunk table that an "
			   "interrupted growth had not written there", added);
	return r;
}

/* How much a file grows by: a quarter of the metadata region (1 MiB to
 * 256 MiB), but no more than a sixteenth of the data region. */
static uint64_t chunk_want(const struct ponyfs *fs)
{
	uint64_t fixed = (fs->sb.db_bytes + fs->sb.wal_bytes) / BS;
	uint64_t want = MIN(MAX(fixed / 4, 256u), 65536u);

	return MAX(MIN(want, fs->sb.data_blocks / 16), (uint64_t)CHUNK_MIN_BLOCKS);
}

/* A run of at least CHUNK_MIN_BLOCKS free blocks, the highest that holds
 * want (metadata gathers at the end, data at the start), else the largest. */
static int chunk_find(struct ponyfs *fs, uint64_t want, uint64_t *ret_p, uint64_t *ret_n)
{
	int64_t p = 0, n = 0;
	int r = ponyfs_sql_int(fs, &p, "SELECT pblock FROM free WHERE nblocks >= ?1 "
			       "ORDER BY pblock DESC LIMIT 1", 1, (int64_t)want);

	if (r == -ENOENT)
		r = ponyfs_sql_int(fs, &p, "SELECT pblock FROM free ORDER BY nblocks DESC LIMIT 1", 0);
	if (r >= 0)
		r = ponyfs_sql_int(fs, &n, "SELECT nblocks FROM free WHERE pblock = ?1", 1, p);
	if (r == -ENOENT || (r >= 0 && (uint64_t)n < CHUNK_MIN_BLOCKS))
		return -ENOSPC;
	*ret_p = (uint64_t)p;
	*ret_n = (uint64_t)n;
	return r;
}

/* Takes n blocks from the end of the free run at p, in a transaction of their own. */
static int chunk_take(struct ponyfs *fs, int which, uint64_t p, uint64_t run, uint64_t n)
{
	int r = ponyfs_txn_begin_locked(fs);

	if (r >= 0 && n == run)
		r = ponyfs_sql(fs, "DELETE FROM free WHERE pblock = ?1", 1, (int64_t)p);
	else if (r >= 0)
		r = ponyfs_sql(fs, "UPDATE free SET nblocks = ?2 WHERE pblock = ?1", 2, (int64_t)p,
			       (int64_t)(run - n));
	if (r >= 0)
		r = ponyfs_sql(fs, "INSERT INTO meta_chunks (seq, file, pblock, nblocks) "
			       "VALUES (?1, ?2, ?3, ?4)", 4, (int64_t)fs->chunks.n, (int64_t)which,
			       (int64_t)(p + run - n), (int64_t)n);
	if (r >= 0)
		r = ponyfs_commit_locked(fs);
	return r;
}

/*
 * Grows the database file or the WAL (which) by a chunk of free data
 * blocks, not touching those promised to cached data or kept by the
 * overwrite reserve. Commits the open transaction first. -ENOSPC when
 * there is no run worth a chunk, the table is full, or the image has no
 * chunk table (made before chunks).
 */
static int chunk_grow(struct ponyfs *fs, int which)
{
	uint64_t keep = fs->reserved + (fs->ow_reserve - fs->ow_written);
	uint64_t avail = fs->free_blocks > keep ? fs->free_blocks - keep : 0;
	uint64_t want = MIN(chunk_want(fs), avail), p, run, n;
	struct ponyfs_chunk *c = &fs->chunks.c[fs->chunks.n];
	int r;

	if (!(fs->sb.flags & PONYFS_FEAT_META_CHUNKS) || fs->read_only ||
	    fs->chunks.n >= PONYFS_CHUNKS_MAX || want < CHUNK_MIN_BLOCKS)
		return -ENOSPC;
	r = ponyfs_commit_locked(fs);
	if (r >= 0)
		r = chunk_find(fs, want, &p, &run);
	if (r < 0)
		return r;
	n = MIN(want, run);
	r = chunk_take(fs, which, p, run, n);
	if (r < 0)
		return r;
	fs->free_blocks -= n;
	fs->space.free_runs -= n == run;
	*c = (struct ponyfs_chunk){ .pblock = p + run - n, .nblocks = n, .file = (uint8_t)which };
	fs->chunks.n++;
	/* Committed: from here a crash finds the chunk in meta_chunks. */
	r = ponyfs_chunks_write(fs->meta, &fs->sb, &fs->chunks);
	if (r >= 0)
		r = ponyfs_sqlite_extend(fs->db, which, &(struct ponyfs_sqlite_extent){
			.dev = PONYFS_SQLITE_DATA, .off = c->pblock * BS, .len = n * BS });
	if (r < 0) {
		fs->chunks.n--;         /* unused; the next mount adds it back */
		ponyfs_log(fs, LOG_ERR, "metadata chunk at data block %llu: the chunk table could "
			   "not be written: %s", (unsigned long long)c->pblock, strerror(-r));
		return r;
	}
	ponyfs_log(fs, LOG_NOTICE, "metadata space grown: the %s takes data blocks %llu-%llu "
		   "(%llu KiB, chunk %u of at most %u)", which == PONYFS_SQLITE_WAL ? "WAL" : "database",
		   (unsigned long long)c->pblock, (unsigned long long)(c->pblock + n - 1),
		   (unsigned long long)(n * BS >> 10), fs->chunks.n, PONYFS_CHUNKS_MAX);
	return 0;
}

int ponyfs_chunk_grow_locked(struct ponyfs *fs, int which)
{
	/* A chunk is taken from the free table directly, not through the
	 * allocator that steps over leased blocks: the leases are revoked. */
	if (fs->leases.nheld)
		ponyfs_lease_expire_locked(fs, true);
	return chunk_grow(fs, which);
}
