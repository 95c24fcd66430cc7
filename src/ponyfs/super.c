/*
 * super.c - making, mounting and unmounting ponyfs: the superblock, the
 * schema, the slices that put both regions on one image, orphan cleanup at
 * mount (files unlinked while open when the power went) and the final
 * commit at unmount.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static const char schema_sql[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
	"CREATE TABLE inodes (ino INTEGER PRIMARY KEY AUTOINCREMENT,"
	" mode INTEGER NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
	" nlink INTEGER NOT NULL, size INTEGER NOT NULL,"
	" atime INTEGER NOT NULL, mtime INTEGER NOT NULL,"
	" ctime INTEGER NOT NULL, btime INTEGER NOT NULL,"
	" rdev INTEGER NOT NULL DEFAULT 0, next_cookie INTEGER NOT NULL DEFAULT 3, target BLOB,"
	" crypt BLOB);"
	"CREATE INDEX inodes_crypt ON inodes (ino) WHERE crypt IS NOT NULL;"
	"CREATE TABLE dentries (parent INTEGER NOT NULL, name BLOB NOT NULL,"
	" ino INTEGER NOT NULL, cookie INTEGER NOT NULL,"
	" PRIMARY KEY (parent, name)) WITHOUT ROWID;"
	"CREATE UNIQUE INDEX dentries_cookie ON dentries (parent, cookie);"
	"CREATE INDEX dentries_ino ON dentries (ino);"
	"CREATE TABLE extents (ino INTEGER NOT NULL, foff INTEGER NOT NULL,"
	" nblocks INTEGER NOT NULL, pblock INTEGER NOT NULL, csums BLOB NOT NULL,"
	" flags INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY (ino, foff)) WITHOUT ROWID;"
	"CREATE TABLE xattrs (ino INTEGER NOT NULL, name BLOB NOT NULL, value BLOB NOT NULL,"
	" PRIMARY KEY (ino, name)) WITHOUT ROWID;"
	"CREATE TABLE free (pblock INTEGER PRIMARY KEY, nblocks INTEGER NOT NULL);"
	"CREATE TABLE meta_chunks (seq INTEGER PRIMARY KEY, file INTEGER NOT NULL,"
	" pblock INTEGER NOT NULL, nblocks INTEGER NOT NULL);"
	"CREATE INDEX extents_pblock ON extents (pblock);"
	"PRAGMA user_version = 5;";

/* Version 1 to 2: extents.flags, 0 (written) for every existing row. */
static const char upgrade_v1_sql[] =
	"ALTER TABLE extents ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;";
/* Version 2 to 3: meta_chunks, empty (no metadata chunk was ever taken). */
static const char upgrade_v2_sql[] =
	"CREATE TABLE IF NOT EXISTS meta_chunks (seq INTEGER PRIMARY KEY, file INTEGER NOT NULL,"
	" pblock INTEGER NOT NULL, nblocks INTEGER NOT NULL);"
	"PRAGMA user_version = 3;";
/* Version 3 to 4: inodes.crypt, NULL (nothing was encrypted), and its index. */
static const char upgrade_v3_sql[] =
	"ALTER TABLE inodes ADD COLUMN crypt BLOB;"
	"CREATE INDEX inodes_crypt ON inodes (ino) WHERE crypt IS NOT NULL;"
	"PRAGMA user_version = 4;";
/* Version 4 to 5: index extents_pblock, so a volume block resolves to its
 * file (resolve.c) without a scan. */
static const char upgrade_v4_sql[] =
	"CREATE INDEX IF NOT EXISTS extents_pblock ON extents (pblock);"
	"PRAGMA user_version = 5;";

/* A region of a one-image ponyfs: a slice named as its place in the image. */
static int slice_new(struct bdev *parent, uint64_t off, uint64_t len, struct bdev **ret)
{
	char name[64];

	snprintf(name, sizeof(name), "%.40s+%llu", parent->name, (unsigned long long)off);
	return bdev_slice_new(parent, off, len, false, name, ret);
}

/* -- superblock ----------------------------------------------------------- */

uint32_t ponyfs_block_crc(const void *buf, size_t len, size_t off)
{
	static const uint8_t zero[4];
	uint32_t c = util_crc32c(0, buf, off);

	c = util_crc32c(c, zero, sizeof(zero));
	return util_crc32c(c, (const uint8_t *)buf + off + 4, len - off - 4);
}

static uint32_t sb_crc(const struct ponyfs_sb_disk *d)
{
	return ponyfs_block_crc(d, sizeof(*d), offsetof(struct ponyfs_sb_disk, crc32c));
}

int ponyfs_sb_read(struct bdev *meta, struct ponyfs_sb *ret)
{
	_cleanup_(freep) struct ponyfs_sb_disk *d = malloc(sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	if (bdev_size(meta) < PONYFS_SB_SIZE)
		return -EINVAL;
	r = bdev_pread(meta, d, sizeof(*d), 0);
	if (r < 0)
		return r;
	if (memcmp(d->magic, PONYFS_MAGIC, 8))
		return -EINVAL;         /* not a ponyfs */
	if (le32_to_cpu(d->crc32c) != sb_crc(d))
		return -EUCLEAN;
	if (le32_to_cpu(d->version) != PONYFS_VERSION)
		return -EPROTONOSUPPORT;
	if (le32_to_cpu(d->block_size) != BS || (le32_to_cpu(d->flags) & ~PONYFS_FEATURES))
		return -EPROTONOSUPPORT;
	memcpy(ret->uuid, d->uuid, 16);
	ret->flags = le32_to_cpu(d->flags);
	ret->meta_bytes = le64_to_cpu(d->meta_bytes);
	ret->db_bytes = le64_to_cpu(d->db_bytes);
	ret->wal_bytes = le64_to_cpu(d->wal_bytes);
	ret->data_blocks = le64_to_cpu(d->data_blocks);
	memcpy(ret->label, d->label, sizeof(ret->label));
	ret->label[sizeof(ret->label) - 1] = 0;
	/* Before chunks the database followed the superblock. */
	ret->db_off = PONYFS_SB_SIZE;
	ret->ctab_off = 0;
	if (ret->flags & ~PONYFS_FEAT_META_CHUNKS)
		return -EPROTONOSUPPORT;        /* a feature of a newer pony */
	if (ret->flags & PONYFS_FEAT_META_CHUNKS) {
		ret->db_off = le64_to_cpu(d->db_off);
		ret->ctab_off = le64_to_cpu(d->ctab_off);
		if (ret->ctab_off < PONYFS_SB_SIZE || ret->ctab_off % 512 ||
		    ret->ctab_off + 2 * PONYFS_CTAB_SIZE > ret->db_off)
			return -EUCLEAN;
	}
	if (ret->db_off % BS || ret->db_off + ret->db_bytes + ret->wal_bytes > ret->meta_bytes ||
	    ret->db_off + ret->db_bytes < ret->db_off || ret->meta_bytes > bdev_size(meta))
		return -EUCLEAN;
	return 0;
}

static int sb_write(struct bdev *meta, const struct ponyfs_sb *sb)
{
	_cleanup_(freep) struct ponyfs_sb_disk *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	memcpy(d->magic, PONYFS_MAGIC, 8);
	d->version = cpu_to_le32(PONYFS_VERSION);
	memcpy(d->uuid, sb->uuid, 16);
	d->block_size = cpu_to_le32(BS);
	d->meta_bytes = cpu_to_le64(sb->meta_bytes);
	d->db_bytes = cpu_to_le64(sb->db_bytes);
	d->wal_bytes = cpu_to_le64(sb->wal_bytes);
	d->data_blocks = cpu_to_le64(sb->data_blocks);
	d->flags = cpu_to_le32(sb->flags);
	if (sb->flags & PONYFS_FEAT_META_CHUNKS) {
		d->ctab_off = cpu_to_le64(sb->ctab_off);
		d->db_off = cpu_to_le64(sb->db_off);
	}
	d->mkfs_time = cpu_to_le64((uint64_t)time(NULL));
	memcpy(d->label, sb->label, sizeof(d->label));
	d->crc32c = cpu_to_le32(sb_crc(d));
	r = bdev_pwrite(meta, d, sizeof(*d), 0);
	return r < 0 ? r : bdev_flush(meta);
}

/* -- mkfs --------------------------------------------------------------------- */

static int mkfs_schema(sqlite3 *db, const struct ponyfs_sb *sb)
{
	char sql[512];
	int64_t now = ponyfs_now();
	int rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, schema_sql, NULL, NULL, NULL);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO inodes (ino, mode, uid, gid, nlink, size, atime, mtime, ctime, btime) "
		 "VALUES (1, %d, %u, %u, 2, 0, %lld, %lld, %lld, %lld);"
		 "INSERT INTO free (pblock, nblocks) VALUES (0, %llu);"
		 "INSERT INTO meta VALUES ('format_version', 1), ('data_blocks', %llu);",
		 S_IFDIR | 0755, (unsigned)geteuid(), (unsigned)getegid(), (long long)now,
		 (long long)now, (long long)now, (long long)now,
		 (unsigned long long)sb->data_blocks, (unsigned long long)sb->data_blocks);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	return ponyfs_sqlite_errno(rc);
}

int ponyfs_mkfs(struct bdev *meta, struct bdev *data, const struct ponyfs_mkfs_options *opts)
{
	struct ponyfs_sb sb = { 0 };
	sqlite3 *db = NULL;
	uint64_t room = bdev_size(meta) & ~(uint64_t)(BS - 1);
	bool fixed = opts && opts->fixed_metadata;
	int r;

	if (room < PONYFS_SB_SIZE + (2u << 20) || bdev_size(data) < 16 * BS)
		return -ENOSPC;
	if (opts && opts->label && strlen(opts->label) >= sizeof(sb.label))
		return -EINVAL;
	util_uuid_generate(sb.uuid);
	sb.meta_bytes = room;
	/* The chunk table's two copies sit between the superblock and the database. */
	sb.flags = fixed ? 0 : PONYFS_FEAT_META_CHUNKS;
	sb.ctab_off = fixed ? 0 : PONYFS_SB_SIZE;
	sb.db_off = fixed ? PONYFS_SB_SIZE : PONYFS_SB_SIZE + 2 * PONYFS_CTAB_SIZE;
	sb.wal_bytes = opts && opts->wal_bytes ? ROUND_UP(opts->wal_bytes, BS)
					       : ROUND_UP(MAX((room - sb.db_off) / 4, 512u << 10), BS);
	if (sb.wal_bytes + sb.db_off + (1u << 20) > room)
		return -ENOSPC;
	sb.db_bytes = room - sb.db_off - sb.wal_bytes;
	sb.data_blocks = bdev_size(data) / BS;
	if (opts && opts->label)
		strcpy(sb.label, opts->label);
	/* A fresh WAL and database: old contents must not look like either. */
	r = bdev_pwrite(meta, (uint8_t[512]){ 0 }, 512, sb.db_off);
	if (r >= 0)
		r = bdev_pwrite(meta, (uint8_t[512]){ 0 }, 512, sb.db_off + sb.db_bytes);
	if (r >= 0 && !fixed)
		r = ponyfs_chunks_init(meta, &sb);
	if (r >= 0)
		r = sb_write(meta, &sb);
	if (r >= 0)
		r = ponyfs_sqlite_open_sb(meta, data, &sb, &db);
	if (r >= 0)
		r = mkfs_schema(db, &sb);
	ponyfs_sqlite_close(db);
	return r < 0 ? r : bdev_flush(meta);
}

/* -- mount -------------------------------------------------------------------- */

void ponyfs_destroy(struct vfs *v);

void ponyfs_destroy(struct vfs *v)
{
	struct ponyfs *fs = ponyfs_of(v);

	ponyfs_timer_stop(fs);
	ponyfs_scrub_stop(fs);          /* its position saved, committed below */
	pthread_mutex_lock(&fs->lock);
	if (!fs->read_only && ponyfs_writeback_all_locked(fs, false) >= 0)
		ponyfs_commit_locked(fs);
	if (fs->in_txn)
		ponyfs_exec(fs, "ROLLBACK");
	while (fs->handles) {
		struct ponyfs_handle *h = fs->handles;

		fs->handles = h->next;
		free(h);
	}
	while (fs->dirty)
		ponyfs_inode_drop_locked(fs, fs->dirty);
	for (size_t i = 0; i < ARRAY_SIZE(fs->hash); i++)
		while (fs->hash[i])
			ponyfs_inode_drop_locked(fs, fs->hash[i]);
	ponyfs_crypt_done(fs);
	pthread_mutex_unlock(&fs->lock);
	ponyfs_streams_done(fs);
	ponyfs_pages_done(fs);
	ponyfs_gather_done(fs);
	ponyfs_finalize_all(fs);
	ponyfs_rows_done(fs);
	ponyfs_sqlite_close(fs->db);
	ponyfs_gates_close(fs);
	for (size_t i = 0; i < ARRAY_SIZE(fs->owned); i++)
		bdev_free(fs->owned[i]);
	free(fs->pending);
	ponyfs_lease_fini(fs);
	free(fs->bad);
	pthread_cond_destroy(&fs->timer_cond);
	pthread_mutex_destroy(&fs->lock);
	pthread_rwlock_destroy(&fs->reuse_lock);
	pthread_cond_destroy(&fs->stream_cond);
	pthread_mutex_destroy(&fs->stream_lock);
	free(fs);
}

/* Files unlinked while open when the filesystem went down are deleted now. */
static int mount_orphans(struct ponyfs *fs)
{
	int64_t ino;
	int r = 0;

	while (r >= 0 && ponyfs_sql_int(fs, &ino, "SELECT ino FROM inodes WHERE nlink = 0 LIMIT 1", 0) >= 0) {
		r = ponyfs_txn_begin_locked(fs);
		if (r >= 0)
			r = ponyfs_inode_delete_locked(fs, (uint64_t)ino, false);
	}
	return r < 0 ? r : ponyfs_commit_locked(fs);
}

/*
 * An older database gets what the schema added since (version 1:
 * extents.flags; version 2: meta_chunks; version 3: inodes.crypt; version
 * 4: index extents_pblock): a read-write mount commits the change (the
 * image is version 5 from then on), a read-only one makes it in a transaction it never commits, so the
 * image stays as it was.
 */
static int mount_upgrade(struct ponyfs *fs, int64_t version, bool read_only)
{
	int r = ponyfs_exec(fs, "BEGIN");

	if (r >= 0 && version == 1)
		r = ponyfs_exec(fs, upgrade_v1_sql);
	if (r >= 0 && version <= 2)
		r = ponyfs_exec(fs, upgrade_v2_sql);
	if (r >= 0 && version <= 3)
		r = ponyfs_exec(fs, upgrade_v3_sql);
	if (r >= 0)
		r = ponyfs_exec(fs, upgrade_v4_sql);
	if (r >= 0 && !read_only)
		r = ponyfs_exec(fs, "COMMIT");
	return r;
}

static int mount_check(struct ponyfs *fs, bool read_only)
{
	int64_t v = 0, free_blocks = 0, runs = 0;
	int r = ponyfs_sql_int(fs, &v, "PRAGMA user_version", 0);

	if (r >= 0 && v >= 1 && v < PONYFS_SCHEMA_VERSION)
		r = mount_upgrade(fs, v, read_only);
	else if (r >= 0 && v != PONYFS_SCHEMA_VERSION)
		r = v > PONYFS_SCHEMA_VERSION ? -EPROTONOSUPPORT : -EUCLEAN;
	if (r >= 0)
		r = ponyfs_prepare_all(fs);
	if (r >= 0)
		r = ponyfs_rows_init(fs);
	if (r >= 0)
		r = ponyfs_crypt_init_locked(fs);
	if (r >= 0)
		r = ponyfs_sql_int(fs, &free_blocks, "SELECT coalesce(sum(nblocks), 0) FROM free", 0);
	if (r >= 0)
		r = ponyfs_sql_int(fs, &runs, "SELECT count(*) FROM free", 0);
	fs->free_blocks = (uint64_t)free_blocks;
	fs->space.free_runs = (uint64_t)runs;
	fs->ninodes = UINT64_MAX;       /* counted at the first statfs */
	fs->ow_reserve = MIN(fs->sb.data_blocks / 64, (uint64_t)PONYFS_OW_RESERVE_MAX);
	if (r >= 0 && (fs->free_blocks > fs->sb.data_blocks))
		r = -EUCLEAN;
	return r;
}

/* A tenth of the machine's memory, as the kernel's dirty_background_ratio. */
static uint64_t default_dirty_max(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t n = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size / 10 : 0;

	return MAX(n, PONYFS_DIRTY_MIN);
}

int ponyfs_mount(struct bdev *meta, struct bdev *data, const struct ponyfs_options *opts,
		 struct vfs **ret)
{
	struct ponyfs *fs = calloc(1, sizeof(*fs));
	int r;

	if (!fs)
		return -ENOMEM;
	fs->vfs.ops = &ponyfs_ops;
	fs->report = opts ? opts->report : NULL;
	fs->report_arg = opts ? opts->report_arg : NULL;
	fs->volume = opts ? opts->volume : NULL;
	fs->dirty_max = opts && opts->dirty_max ? opts->dirty_max : default_dirty_max();
	pthread_mutex_init(&fs->lock, NULL);
	pthread_rwlock_init(&fs->reuse_lock, NULL);
	pthread_mutex_init(&fs->stream_lock, NULL);
	pthread_cond_init(&fs->stream_cond, NULL);
	pthread_cond_init(&fs->timer_cond, NULL);
	r = ponyfs_gates_open(fs, meta, data);
	if (r >= 0)
		r = ponyfs_sb_read(meta, &fs->sb);
	if (r >= 0)
		ponyfs_name_init(fs);
	if (r >= 0 && fs->sb.data_blocks > bdev_size(data) / BS)
		r = -EINVAL;            /* a wrong or truncated data region */
	fs->read_only = opts && opts->read_only;
	fs->atime_mode = opts ? opts->atime : PONYFS_ATIME_RELATIVE;
	fs->nodiratime = opts && opts->nodiratime;
	if (r >= 0)
		r = ponyfs_meta_open(fs->meta, fs->data, &fs->sb, &fs->chunks, &fs->db);
	if (r >= 0 && opts && opts->meta_cache) {
		char sql[64];

		snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%llu",
			 (unsigned long long)MAX(opts->meta_cache / 1024, 64u));
		r = ponyfs_exec(fs, sql);
	}
	if (r >= 0)
		r = mount_check(fs, fs->read_only);
	if (r >= 0)
		r = ponyfs_chunks_reconcile_locked(fs);
	/* An empty WAL: from here on its use is known (space.c). */
	if (r >= 0 && !fs->read_only)
		r = ponyfs_checkpoint_locked(fs);
	if (r >= 0)
		ponyfs_space_init_locked(fs);
	if (r >= 0 && !fs->read_only)
		r = mount_orphans(fs);
	/* Only now: the orphans' transaction above must not start the commit
	 * timer, whose thread would stay behind in the parent when a FUSE
	 * daemon forks (no timer commits, and unmount hung joining it). */
	fs->commit_ms = opts ? opts->commit_ms : 0;
	fs->leases.ms = opts ? opts->layout_lease_ms : 0;
	if (r < 0) {
		fs->read_only = true;   /* nothing to write back from a failed mount */
		ponyfs_destroy(&fs->vfs);
		return r;
	}
	*ret = &fs->vfs;
	return 0;
}

/* -- one image, two regions ---------------------------------------------------- */

static uint64_t image_meta_bytes(uint64_t size)
{
	uint64_t m = ROUND_UP(MAX(size / 16, 4ull << 20), 1ull << 20);

	return MIN(m, 4ull << 30);
}

static int image_split(struct bdev *dev, uint64_t meta_bytes, struct bdev **meta, struct bdev **data)
{
	uint64_t data_bytes = (bdev_size(dev) - meta_bytes) & ~(uint64_t)(BS - 1);
	int r;

	if (meta_bytes >= bdev_size(dev))
		return -ENOSPC;
	r = slice_new(dev, 0, meta_bytes, meta);
	if (r >= 0) {
		r = slice_new(dev, meta_bytes, data_bytes, data);
		if (r < 0)
			bdev_free(*meta);
	}
	return r;
}

int ponyfs_mkfs_image(struct bdev *dev, const struct ponyfs_mkfs_options *opts)
{
	_cleanup_(bdev_freep) struct bdev *meta = NULL;
	_cleanup_(bdev_freep) struct bdev *data = NULL;
	uint64_t m = image_meta_bytes(bdev_size(dev));
	int r;

	if (bdev_size(dev) < 2 * m)
		return -ENOSPC;
	r = image_split(dev, m, &meta, &data);
	return r < 0 ? r : ponyfs_mkfs(meta, data, opts);
}

int ponyfs_image_regions(struct bdev *dev, struct bdev **ret_meta, struct bdev **ret_data)
{
	struct ponyfs_sb sb;
	int r = ponyfs_sb_read(dev, &sb);

	return r < 0 ? r : image_split(dev, sb.meta_bytes, ret_meta, ret_data);
}

int ponyfs_mount_image(struct bdev *dev, const struct ponyfs_options *opts, struct vfs **ret)
{
	struct bdev *meta = NULL, *data = NULL;
	struct vfs *v;
	int r = ponyfs_image_regions(dev, &meta, &data);

	if (r >= 0)
		r = ponyfs_mount(meta, data, opts, &v);
	if (r < 0) {
		bdev_free(meta);
		bdev_free(data);
		return r;
	}
	ponyfs_of(v)->owned[0] = meta;
	ponyfs_of(v)->owned[1] = data;
	*ret = v;
	return 0;
}

void ponyfs_get_stats(struct vfs *v, struct ponyfs_stats *ret)
{
	struct ponyfs *fs = ponyfs_of(v);

	pthread_mutex_lock(&fs->lock);
	*ret = fs->stats;
	ret->meta_chunks = fs->chunks.n;
	ret->cache_slab_bytes = ponyfs_pages_mapped(fs);
	pthread_mutex_unlock(&fs->lock);
}

uint64_t ponyfs_dirty_bytes(struct vfs *v)
{
	struct ponyfs *fs = ponyfs_of(v);
	uint64_t n;

	pthread_mutex_lock(&fs->lock);
	n = fs->dirty_bytes;
	pthread_mutex_unlock(&fs->lock);
	return n;
}
