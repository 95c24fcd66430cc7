/*
 * sqlite_vfs.c - an sqlite3_vfs that stores one database and its WAL on
 * ponyfs's regions, so SQLite's transactions are ponyfs's metadata
 * transactions. Each file is a list of extents: its fixed range of the
 * metadata region first, then the chunks the filesystem took from the data
 * region when the file needed room (chunks.c), so the file can grow while
 * it is open (ponyfs_sqlite_extend()). Only the version-1 file methods
 * exist: WAL runs without shared memory because the connection uses
 * locking_mode=EXCLUSIVE, and nothing else opens the database. xSync
 * flushes the regions written since the last one. Writes that are not
 * whole sectors (WAL frames are 24 + 4096 bytes) are done
 * read-modify-write, so a bdev only ever sees whole sectors; extents start
 * and end on sectors, so no sector spans two.
 * Appends to the WAL wait in a buffer until the next sync (or read, or a
 * write elsewhere): a commit's frames reach the bdev as one write with
 * two partial sectors, not two read-modify-writes a frame, which was most
 * of the system calls of an fsync. SQLite asks for nothing to be on the
 * disk before xSync, so nothing is promised later than before.
 * The VFS also says how much of the WAL is in use (the end of its last
 * frame since SQLite last started it over), which space.c measures.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SECTOR 512u
#define WAL_BUF (256u << 10)    /* bytes of WAL appends held until a sync */
#define WAL_HDR 32u             /* SQLite's WAL header, rewritten at each restart */
#define WAL_FRAME (24u + 4096u) /* a frame: its header and a page */

/* A file's extents, with where each starts in the file. */
struct pmap {
	unsigned n;
	uint64_t len;                   /* the file's room: the extents' sum */
	struct ponyfs_sqlite_extent e[PONYFS_SQLITE_EXTENTS];
	uint64_t start[PONYFS_SQLITE_EXTENTS];
};

/* One database file and its WAL: where they live and their current sizes. */
struct pvfs {
	sqlite3_vfs vfs;                /* first: SQLite hands this back */
	char name[48];
	struct bdev *dev[2];            /* PONYFS_SQLITE_META, PONYFS_SQLITE_DATA */
	bool dirty[2];                  /* written since the last sync */
	struct pmap map[2];             /* PONYFS_SQLITE_DB, PONYFS_SQLITE_WAL */
	uint64_t size[2];
	uint8_t *wbuf;                  /* WAL bytes [wbuf_off, +wbuf_len) not yet written */
	uint64_t wbuf_off;
	size_t wbuf_len;
	uint64_t wal_end;               /* end of the furthest WAL write since its header */
	bool wal_recycled;              /* checkpointed whole: the next frame restarts it */
	int last_errno;                 /* of the last failed bdev call */
};

struct pfile {
	sqlite3_file base;              /* first: SQLite's view */
	struct pvfs *pv;
	int which;                      /* PONYFS_SQLITE_DB or PONYFS_SQLITE_WAL */
};

/* r of a bdev call; a failure is remembered for ponyfs_sqlite_io_errno()
 * (and SQLite's xGetLastError), so the caller learns the device's errno. */
static int io_result(struct pvfs *pv, int r)
{
	if (r < 0)
		pv->last_errno = -r;
	return r;
}

/*
 * Reads whole sectors of dev. Metadata in the data region's chunks is read
 * checked against the volume's parity (bdev_read_checked()): its pages have no
 * checksum, and SQLite would take a flipped bit in a WAL frame for the
 * WAL's end and drop every commit after it.
 */
static int sectors_read(struct bdev *dev, bool checked, void *buf, size_t len, uint64_t off)
{
	return checked ? bdev_read_checked(dev, buf, len, off) : bdev_pread(dev, buf, len, off);
}

/* Reads or writes any byte range of dev through whole sectors. */
static int sector_io(struct bdev *dev, bool checked, void *buf, size_t len, uint64_t off,
		     bool write)
{
	uint64_t start = off & ~(uint64_t)(SECTOR - 1);
	uint64_t end = ROUND_UP(off + len, SECTOR);
	_cleanup_(freep) uint8_t *tmp = NULL;
	int r;

	if (start == off && end == off + len)
		return write ? bdev_pwrite(dev, buf, len, off) : sectors_read(dev, checked, buf, len, off);
	tmp = malloc(end - start);
	if (!tmp)
		return -ENOMEM;
	if (write) {
		/* Only the partial first and last sectors need their old bytes. */
		r = sectors_read(dev, checked, tmp, SECTOR, start);
		if (r >= 0 && end - start > SECTOR)
			r = sectors_read(dev, checked, tmp + (end - start - SECTOR), SECTOR,
					 end - SECTOR);
		if (r < 0)
			return r;
		memcpy(tmp + (off - start), buf, len);
		return bdev_pwrite(dev, tmp, end - start, start);
	}
	r = sectors_read(dev, checked, tmp, end - start, start);
	if (r >= 0)
		memcpy(buf, tmp + (off - start), len);
	return r;
}

/* The extent holding file offset off (off < m->len). */
static unsigned map_find(const struct pmap *m, uint64_t off)
{
	unsigned lo = 0, hi = m->n;

	while (hi - lo > 1) {
		unsigned mid = (lo + hi) / 2;

		if (m->start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Reads or writes [off, off+len) of file which (inside its room), extent by extent. */
static int file_io(struct pvfs *pv, int which, void *buf, size_t len, uint64_t off, bool write)
{
	const struct pmap *m = &pv->map[which];
	uint8_t *p = buf;
	int r = 0;

	for (unsigned i = map_find(m, off); r >= 0 && len; i++) {
		const struct ponyfs_sqlite_extent *e = &m->e[i];
		uint64_t skip = off - m->start[i];
		size_t n = (size_t)MIN((uint64_t)len, e->len - skip);

		r = io_result(pv, sector_io(pv->dev[e->dev], e->dev == PONYFS_SQLITE_DATA, p, n,
					      e->off + skip, write));
		pv->dirty[e->dev] |= write;
		p += n;
		off += n;
		len -= n;
	}
	return r;
}

/* Writes what waits in the WAL buffer; the buffer is empty after, even on failure. */
static int wal_buf_write(struct pvfs *pv)
{
	size_t len = pv->wbuf_len;

	if (!len)
		return 0;
	pv->wbuf_len = 0;
	return file_io(pv, PONYFS_SQLITE_WAL, pv->wbuf, len, pv->wbuf_off, true);
}

/* Holds a WAL write that continues the buffered ones; false: write it now. */
static bool wal_buf_add(struct pvfs *pv, const void *buf, size_t amt, uint64_t ofs)
{
	if (!pv->wbuf)
		pv->wbuf = malloc(WAL_BUF);
	if (!pv->wbuf || amt > WAL_BUF)
		return false;
	if (pv->wbuf_len && (ofs != pv->wbuf_off + pv->wbuf_len || pv->wbuf_len + amt > WAL_BUF))
		return false;
	if (!pv->wbuf_len)
		pv->wbuf_off = ofs;
	memcpy(pv->wbuf + pv->wbuf_len, buf, amt);
	pv->wbuf_len += amt;
	return true;
}

/* SQLite writes the WAL header at 0 when it starts the log over; frames follow. */
static void wal_track(struct pvfs *pv, uint64_t ofs, uint64_t end)
{
	if (ofs == 0)
		pv->wal_end = 0;
	pv->wal_end = MAX(pv->wal_end, end);
	pv->wal_recycled = false;
}

static int pf_close(sqlite3_file *f)
{
	struct pfile *p = (struct pfile *)f;

	return p->which == PONYFS_SQLITE_WAL && wal_buf_write(p->pv) < 0 ? SQLITE_IOERR_WRITE
									: SQLITE_OK;
}

static int pf_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 ofs)
{
	struct pfile *p = (struct pfile *)f;
	uint64_t size = p->pv->size[p->which], have = 0;

	if (ofs < 0 || amt < 0)
		return SQLITE_IOERR_READ;
	if (p->which == PONYFS_SQLITE_WAL && wal_buf_write(p->pv) < 0)
		return SQLITE_IOERR_READ;
	if ((uint64_t)ofs < size)
		have = MIN((uint64_t)amt, size - (uint64_t)ofs);
	if (have && file_io(p->pv, p->which, buf, have, (uint64_t)ofs, false) < 0)
		return SQLITE_IOERR_READ;
	if (have < (uint64_t)amt) {
		memset((uint8_t *)buf + have, 0, (size_t)amt - have);
		return SQLITE_IOERR_SHORT_READ;
	}
	return SQLITE_OK;
}

static int pf_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 ofs)
{
	struct pfile *p = (struct pfile *)f;
	struct pvfs *pv = p->pv;
	uint64_t end = (uint64_t)ofs + (uint64_t)amt;
	bool wal = p->which == PONYFS_SQLITE_WAL;

	if (ofs < 0 || amt < 0)
		return SQLITE_IOERR_WRITE;
	if (end > pv->map[p->which].len)
		return SQLITE_FULL;
	if (wal)
		wal_track(pv, (uint64_t)ofs, end);
	if (wal && wal_buf_add(pv, buf, (size_t)amt, (uint64_t)ofs))
		goto done;
	if (wal && wal_buf_write(pv) < 0)
		return SQLITE_IOERR_WRITE;
	if (wal && wal_buf_add(pv, buf, (size_t)amt, (uint64_t)ofs))
		goto done;
	if (file_io(pv, p->which, (void *)buf, (size_t)amt, (uint64_t)ofs, true) < 0)
		return SQLITE_IOERR_WRITE;
done:
	if (end > pv->size[p->which])
		pv->size[p->which] = end;
	return SQLITE_OK;
}

/* An empty WAL is one whose first sector holds no magic. */
static int wal_clear(struct pvfs *pv)
{
	uint8_t zero[SECTOR] = { 0 };

	if (wal_buf_write(pv) < 0)
		return SQLITE_IOERR_WRITE;
	pv->size[PONYFS_SQLITE_WAL] = 0;
	pv->wal_end = 0;
	return file_io(pv, PONYFS_SQLITE_WAL, zero, SECTOR, 0, true) < 0 ? SQLITE_IOERR_WRITE
									 : SQLITE_OK;
}

static int pf_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct pfile *p = (struct pfile *)f;
	bool wal = p->which == PONYFS_SQLITE_WAL;

	if (size < 0)
		return SQLITE_IOERR_TRUNCATE;
	if (wal && wal_buf_write(p->pv) < 0)
		return SQLITE_IOERR_TRUNCATE;
	if (wal && size == 0)
		return wal_clear(p->pv);
	if ((uint64_t)size < p->pv->size[p->which])
		p->pv->size[p->which] = (uint64_t)size;
	return SQLITE_OK;
}

/* Durable: every region written since the last sync is flushed. */
static int pf_sync(sqlite3_file *f, int flags)
{
	struct pfile *p = (struct pfile *)f;
	struct pvfs *pv = p->pv;

	if (p->which == PONYFS_SQLITE_WAL && wal_buf_write(pv) < 0)
		return SQLITE_IOERR_WRITE;
	for (int d = 0; d < 2; d++) {
		if (!pv->dirty[d])
			continue;
		if (io_result(pv, bdev_flush(pv->dev[d])) < 0)
			return SQLITE_IOERR_FSYNC;
		pv->dirty[d] = false;
	}
	return SQLITE_OK;
}

static int pf_file_size(sqlite3_file *f, sqlite3_int64 *ret)
{
	struct pfile *p = (struct pfile *)f;

	*ret = (sqlite3_int64)p->pv->size[p->which];
	return SQLITE_OK;
}

/* The connection is the only one ever (locking_mode=EXCLUSIVE): locks always succeed. */
static int pf_lock(sqlite3_file *f, int level)
{
	return SQLITE_OK;
}

static int pf_check_reserved(sqlite3_file *f, int *ret)
{
	*ret = 0;
	return SQLITE_OK;
}

static int pf_file_control(sqlite3_file *f, int op, void *arg)
{
	return SQLITE_NOTFOUND;
}

static int pf_sector_size(sqlite3_file *f)
{
	return SECTOR;
}

/* Whole sectors are written read-modify-write, so bytes beside a write survive it. */
static int pf_device_characteristics(sqlite3_file *f)
{
	return SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

static const sqlite3_io_methods pf_methods = {
	.iVersion = 1,
	.xClose = pf_close,
	.xRead = pf_read,
	.xWrite = pf_write,
	.xTruncate = pf_truncate,
	.xSync = pf_sync,
	.xFileSize = pf_file_size,
	.xLock = pf_lock,
	.xUnlock = pf_lock,
	.xCheckReservedLock = pf_check_reserved,
	.xFileControl = pf_file_control,
	.xSectorSize = pf_sector_size,
	.xDeviceCharacteristics = pf_device_characteristics,
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static int pv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
	struct pvfs *pv = (struct pvfs *)vfs;
	struct pfile *p = (struct pfile *)f;

	memset(p, 0, sizeof(*p));
	/* Only the database and its WAL have a home; journals and temporary
	 * files are never needed (journal_mode=WAL, temp_store=MEMORY). */
	if (flags & SQLITE_OPEN_MAIN_DB)
		p->which = PONYFS_SQLITE_DB;
	else if (flags & SQLITE_OPEN_WAL)
		p->which = PONYFS_SQLITE_WAL;
	else
		return SQLITE_CANTOPEN;
	p->pv = pv;
	p->base.pMethods = &pf_methods;
	if (out)
		*out = flags;
	return SQLITE_OK;
}

static int pv_delete(sqlite3_vfs *vfs, const char *name, int sync)
{
	struct pvfs *pv = (struct pvfs *)vfs;

	if (ends_with(name, "-wal"))
		return wal_clear(pv);
	return SQLITE_OK;
}

static int pv_access(sqlite3_vfs *vfs, const char *name, int flags, int *ret)
{
	struct pvfs *pv = (struct pvfs *)vfs;

	if (ends_with(name, "-wal"))
		*ret = pv->size[PONYFS_SQLITE_WAL] > 0;
	else if (ends_with(name, "-journal"))
		*ret = 0;
	else
		*ret = pv->size[PONYFS_SQLITE_DB] > 0;
	return SQLITE_OK;
}

static int pv_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	snprintf(out, (size_t)n, "%s", name);
	return SQLITE_OK;
}

static int pv_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	sqlite3_vfs *dflt = sqlite3_vfs_find(NULL);

	return dflt->xRandomness(dflt, n, out);
}

static int pv_sleep(sqlite3_vfs *vfs, int usec)
{
	sqlite3_vfs *dflt = sqlite3_vfs_find(NULL);

	return dflt->xSleep(dflt, usec);
}

static int pv_current_time(sqlite3_vfs *vfs, double *ret)
{
	sqlite3_vfs *dflt = sqlite3_vfs_find(NULL);

	return dflt->xCurrentTime(dflt, ret);
}

static int pv_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	return ((struct pvfs *)vfs)->last_errno;
}

/* The sizes at open: from the database header and the WAL's magic (docs/ponyfs-format.md). */
static int pv_load_sizes(struct pvfs *pv)
{
	uint8_t h[SECTOR];
	uint32_t magic, page_size, pages;
	int r = file_io(pv, PONYFS_SQLITE_DB, h, SECTOR, 0, false);

	if (r < 0)
		return r;
	if (!memcmp(h, "SQLite format 3", 16)) {
		page_size = util_get_be16(h + 16);
		if (page_size == 1)
			page_size = 65536;
		pages = util_get_be32(h + 28);
		/* A checkpoint that ran out of room may have written page 1 and
		 * not the pages it counts; the WAL still holds them all. */
		pv->size[PONYFS_SQLITE_DB] = MIN((uint64_t)page_size * pages, pv->map[0].len);
	}
	r = file_io(pv, PONYFS_SQLITE_WAL, h, SECTOR, 0, false);
	if (r < 0)
		return r;
	magic = util_get_be32(h);
	if (magic == 0x377f0682 || magic == 0x377f0683)
		pv->size[PONYFS_SQLITE_WAL] = pv->map[PONYFS_SQLITE_WAL].len;
	return 0;
}

static void pvfs_free(struct pvfs *pv)
{
	if (!pv)
		return;
	sqlite3_vfs_unregister(&pv->vfs);
	free(pv->wbuf);
	free(pv);
}

/*
 * SQLite result codes (extended or not) as -errno: the one table. A mounted
 * filesystem goes through ponyfs_sql_err(), which adds the device's own
 * errno for I/O errors and notices a transaction SQLite dropped.
 */
int ponyfs_sqlite_errno(int rc)
{
	if (rc == SQLITE_IOERR_NOMEM)
		return -ENOMEM;
	switch (rc & 0xff) {
	case SQLITE_OK: case SQLITE_ROW: case SQLITE_DONE: return 0;
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_CORRUPT: case SQLITE_NOTADB: return -EUCLEAN;
	case SQLITE_CONSTRAINT: return -EEXIST;
	case SQLITE_CANTOPEN: return -ENOENT;
	case SQLITE_READONLY: return -EROFS;
	case SQLITE_TOOBIG: return -E2BIG;
	default: return -EIO;
	}
}

static int exec_all(sqlite3 *db, const char *sql)
{
	return ponyfs_sqlite_errno(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

/* A handle's vfs, kept so close can unregister it. */
static struct pvfs *db_pvfs(sqlite3 *db)
{
	sqlite3_vfs *v = NULL;

	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &v) != SQLITE_OK)
		return NULL;
	return (struct pvfs *)v;
}

/* An extent on one of the two regions, inside it and on whole sectors. */
static bool extent_ok(struct bdev *const devs[2], const struct ponyfs_sqlite_extent *e)
{
	return e->dev < 2 && devs[e->dev] && !(e->off % SECTOR) && !(e->len % SECTOR) && e->len &&
	       e->off + e->len <= bdev_size(devs[e->dev]) && e->off + e->len > e->off;
}

static int map_add(struct pmap *m, struct bdev *const devs[2], const struct ponyfs_sqlite_extent *e)
{
	if (m->n >= PONYFS_SQLITE_EXTENTS || !extent_ok(devs, e))
		return -EINVAL;
	m->e[m->n] = *e;
	m->start[m->n] = m->len;
	m->len += e->len;
	m->n++;
	return 0;
}

static int map_init(struct pmap *m, struct bdev *const devs[2], const struct ponyfs_sqlite_map *from)
{
	int r = from->n ? 0 : -EINVAL;

	memset(m, 0, sizeof(*m));
	for (unsigned i = 0; r >= 0 && i < from->n; i++)
		r = map_add(m, devs, &from->e[i]);
	return r;
}

int ponyfs_sqlite_open(struct bdev *const devs[2], const struct ponyfs_sqlite_map *db,
		       const struct ponyfs_sqlite_map *wal, sqlite3 **ret)
{
	static unsigned long seq;
	struct pvfs *pv = calloc(1, sizeof(*pv));
	sqlite3 *h = NULL;
	int r;

	if (!pv)
		return -ENOMEM;
	pv->dev[0] = devs[0];
	pv->dev[1] = devs[1];
	r = map_init(&pv->map[PONYFS_SQLITE_DB], devs, db);
	if (r >= 0)
		r = map_init(&pv->map[PONYFS_SQLITE_WAL], devs, wal);
	if (r >= 0 && (pv->map[0].len < 4 * 4096 || pv->map[1].len < 64 * 4096))
		r = -EINVAL;
	if (r < 0) {
		free(pv);
		return r;
	}
	snprintf(pv->name, sizeof(pv->name), "ponyfs-%lu", __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	pv->vfs = (sqlite3_vfs){
		.iVersion = 1,
		.szOsFile = sizeof(struct pfile),
		.mxPathname = 64,
		.zName = pv->name,
		.pAppData = pv,
		.xOpen = pv_open,
		.xDelete = pv_delete,
		.xAccess = pv_access,
		.xFullPathname = pv_full_pathname,
		.xRandomness = pv_randomness,
		.xSleep = pv_sleep,
		.xCurrentTime = pv_current_time,
		.xGetLastError = pv_last_error,
	};
	r = pv_load_sizes(pv);
	if (r < 0 || (r = ponyfs_sqlite_errno(sqlite3_vfs_register(&pv->vfs, 0))) < 0) {
		free(pv);
		return r;
	}
	r = ponyfs_sqlite_errno(sqlite3_open_v2("ponyfs.db", &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					 SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, pv->name));
	/* A new database becomes a WAL database in its first transaction; the
	 * journal that one needs is kept in memory (nothing to lose yet). */
	if (r >= 0 && !pv->size[PONYFS_SQLITE_DB])
		r = exec_all(h, "PRAGMA journal_mode=MEMORY;");
	/* No automatic checkpoints: ponyfs checkpoints after its commits, when
	 * it needs the WAL's room, and sees whether they worked (space.c). */
	if (r >= 0)
		r = exec_all(h, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA page_size=4096;"
			     "PRAGMA temp_store=MEMORY; PRAGMA synchronous=FULL;"
			     "PRAGMA journal_mode=WAL; PRAGMA cache_size=-" PONYFS_META_CACHE_KIB ";"
			     "PRAGMA wal_autocheckpoint=0;");
	if (r >= 0)   /* the database is read once here: a corrupt one fails now */
		r = exec_all(h, "SELECT count(*) FROM sqlite_schema;");
	if (r < 0) {
		sqlite3_close(h);
		pvfs_free(pv);
		return r;
	}
	*ret = h;
	return 0;
}

int ponyfs_sqlite_extend(sqlite3 *db, int which, const struct ponyfs_sqlite_extent *e)
{
	struct pvfs *pv = db_pvfs(db);
	int r = pv ? map_add(&pv->map[which], pv->dev, e) : -EINVAL;

	/* The WAL's size is its whole room while it holds a log (pv_load_sizes). */
	if (r >= 0 && which == PONYFS_SQLITE_WAL && pv->size[which])
		pv->size[which] = pv->map[which].len;
	return r;
}

uint64_t ponyfs_sqlite_room(sqlite3 *db, int which)
{
	struct pvfs *pv = db_pvfs(db);

	return pv ? pv->map[which].len : 0;
}

uint64_t ponyfs_sqlite_wal_frames(sqlite3 *db, bool room)
{
	struct pvfs *pv = db_pvfs(db);
	uint64_t end = !pv ? 0 : room ? pv->map[PONYFS_SQLITE_WAL].len : pv->wal_recycled ? 0 : pv->wal_end;

	if (end <= WAL_HDR)
		return 0;
	return room ? (end - WAL_HDR) / WAL_FRAME : DIV_ROUND_UP(end - WAL_HDR, WAL_FRAME);
}

void ponyfs_sqlite_wal_recycled(sqlite3 *db)
{
	struct pvfs *pv = db_pvfs(db);

	if (pv)
		pv->wal_recycled = true;
}

int ponyfs_sqlite_io_errno(sqlite3 *db)
{
	struct pvfs *pv = db_pvfs(db);
	int e = pv ? pv->last_errno : 0;

	if (pv)
		pv->last_errno = 0;
	return e;
}

void ponyfs_sqlite_close(sqlite3 *db)
{
	struct pvfs *pv;

	if (!db)
		return;
	pv = db_pvfs(db);
	sqlite3_close(db);
	pvfs_free(pv);
}
