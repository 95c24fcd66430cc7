/*
 * txn.c - ponyfs's metadata transaction and the commit timer. One SQLite
 * transaction is open while the filesystem changes; committing it first
 * flushes the data region (ordering rule 1: data before the metadata that
 * points at it), then makes freed blocks reusable, then COMMITs, which
 * syncs the WAL. The timer commits on its own (rule 5): FUSE never passes
 * syncfs on, so without it nothing would become durable but fsync.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "internal.h"

static const char *const stmt_sql[ST_COUNT] = {
	[ST_INODE_GET] = "SELECT mode, uid, gid, nlink, size, atime, mtime, ctime, btime, rdev, "
			 "crypt FROM inodes WHERE ino = ?1",
	/* ST_INODE_GET and the block count of its extents: a full stat in one step. */
	[ST_INODE_GET_BLOCKS] = "SELECT mode, uid, gid, nlink, size, atime, mtime, ctime, btime, rdev, "
				"(SELECT coalesce(sum(nblocks), 0) FROM extents WHERE ino = ?1) "
				"FROM inodes WHERE ino = ?1",
	/* Before a create: the parent's mode and group, and whether the name is taken. */
	/* The name under its directory's next cookie, read from the
	 * directory's row (not by UPDATE ... RETURNING: SQLite collects
	 * RETURNING rows in a temporary b-tree, made at every call). One row
	 * of VALUES, not INSERT ... SELECT: SQLite gives a statement that may
	 * insert many rows a statement journal, a copy of every page it
	 * changes (2% of an untar's daemon CPU); no parent: a NULL cookie. */
	[ST_DENTRY_ADD] = "INSERT INTO dentries (parent, name, ino, cookie) "
		"VALUES (?1, ?2, ?3, (SELECT next_cookie FROM inodes WHERE ino = ?1))",
	[ST_CREATE_CHECK] = "SELECT mode, gid, EXISTS (SELECT 1 FROM dentries WHERE parent = ?1 "
			    "AND name = ?2) FROM inodes WHERE ino = ?1",
	[ST_INODE_SIZE_TIMES] = "UPDATE inodes SET size = ?2, mtime = ?3, ctime = ?4 WHERE ino = ?1",
	[ST_DENTRY_GET] = "SELECT d.ino, i.mode, i.nlink FROM dentries d JOIN inodes i ON i.ino = d.ino "
			  "WHERE d.parent = ?1 AND d.name = ?2",
	[ST_EXT_PREV] = "SELECT foff, nblocks, pblock, csums, flags FROM extents "
			"WHERE ino = ?1 AND foff <= ?2 ORDER BY foff DESC LIMIT 1",
	[ST_EXT_RANGE] = "SELECT foff, nblocks, pblock, csums, flags FROM extents "
			 "WHERE ino = ?1 AND foff >= ?2 AND foff < ?3 ORDER BY foff",
	/* A delete's batch, the last extents first (namei.c). */
	[ST_EXT_LAST] = "SELECT foff, nblocks, pblock FROM extents WHERE ino = ?1 "
			"ORDER BY foff DESC LIMIT ?2",
	[ST_EXT_DEL] = "DELETE FROM extents WHERE ino = ?1 AND foff = ?2",
	[ST_EXT_INS] = "INSERT INTO extents (ino, foff, nblocks, pblock, csums, flags) "
		       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[ST_FREE_FROM] = "SELECT pblock, nblocks FROM free WHERE pblock >= ?1 ORDER BY pblock LIMIT 1",
	[ST_FREE_DEL] = "DELETE FROM free WHERE pblock = ?1",
	[ST_FREE_INS] = "INSERT INTO free (pblock, nblocks) VALUES (?1, ?2)",
	[ST_FREE_PREV] = "SELECT pblock, nblocks FROM free WHERE pblock < ?1 "
			 "ORDER BY pblock DESC LIMIT 1",
	[ST_FREE_AT] = "SELECT nblocks FROM free WHERE pblock = ?1",
	/* A name's inode with its row and block count: a lookup in one step
	 * (namei.c; the columns after the second are ST_INODE_GET's). */
	[ST_LOOKUP] = "SELECT d.ino, (SELECT coalesce(sum(nblocks), 0) FROM extents e "
		      "WHERE e.ino = d.ino), i.mode, i.uid, i.gid, i.nlink, i.size, i.atime, "
		      "i.mtime, i.ctime, i.btime, i.rdev FROM dentries d JOIN inodes i ON "
		      "i.ino = d.ino WHERE d.parent = ?1 AND d.name = ?2",
	[ST_READDIR] = "SELECT d.name, d.ino, i.mode, d.cookie FROM dentries d JOIN inodes i ON "
		       "i.ino = d.ino WHERE d.parent = ?1 AND d.cookie > ?2 ORDER BY d.cookie "
		       "LIMIT ?3",
	/* readdirplus: ST_READDIR's columns, the block count, ST_INODE_GET's. */
	[ST_READDIR_PLUS] = "SELECT d.name, d.ino, i.mode, d.cookie, (SELECT coalesce(sum(nblocks), "
			    "0) FROM extents e WHERE e.ino = d.ino), i.mode, i.uid, i.gid, i.nlink, "
			    "i.size, i.atime, i.mtime, i.ctime, i.btime, i.rdev FROM dentries d "
			    "JOIN inodes i ON i.ino = d.ino WHERE d.parent = ?1 AND d.cookie > ?2 "
			    "ORDER BY d.cookie LIMIT ?3",
};

int64_t ponyfs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The one way an SQLite result becomes an errno on a mounted filesystem:
 * the code's errno (ponyfs_sqlite_errno()), and for an I/O error the
 * errno the bdev gave (the VFS hands it to SQLite's xGetLastError), so a
 * vanished device reads ENODEV, not EIO. SQLite rolls the whole open
 * transaction back on an I/O error, even a read's, and on some others:
 * the changes it held were acknowledged, so the filesystem stops there.
 */
int ponyfs_sql_err(struct ponyfs *fs, int rc)
{
	int r = ponyfs_sqlite_errno(rc), sys;

	if (r >= 0)
		return r;
	if ((rc & 0xff) == SQLITE_IOERR && r == -EIO) {
		sys = ponyfs_sqlite_io_errno(fs->db);
		if (sys > 0)
			r = -sys;
	}
	if (fs->in_txn && sqlite3_get_autocommit(fs->db)) {
		fs->in_txn = false;
		fs->txn_ops = 0;
		ponyfs_fail_locked(fs, r, "SQLite rolled back the open transaction");
	}
	return r;
}

int ponyfs_prepare_all(struct ponyfs *fs)
{
	for (int i = 0; i < ST_COUNT; i++) {
		int rc = sqlite3_prepare_v3(fs->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					    &fs->st[i], NULL);
		if (rc != SQLITE_OK)
			return ponyfs_sql_err(fs, rc);
	}
	return 0;
}

void ponyfs_finalize_all(struct ponyfs *fs)
{
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(fs->st[i]);
		fs->st[i] = NULL;
	}
	for (int i = 0; i < PONYFS_STMT_CACHE; i++) {
		sqlite3_finalize(fs->sc[i].st);
		fs->sc[i].sql = NULL;
		fs->sc[i].st = NULL;
	}
}

/*
 * Parsing SQL costs more than running it (a third of the daemon's time in
 * a create/rename storm), so every statement is prepared once. The SQL is
 * always a literal: its address names it, no hashing of the text.
 */
int ponyfs_prepare(struct ponyfs *fs, const char *sql, sqlite3_stmt **ret)
{
	size_t h = ((uintptr_t)sql >> 3) * 0x9e3779b97f4a7c15ull >> 57;
	int rc;

	for (size_t i = 0; i < PONYFS_STMT_CACHE; i++) {
		size_t k = (h + i) % PONYFS_STMT_CACHE;

		if (fs->sc[k].sql == sql) {
			sqlite3_reset(fs->sc[k].st);
			sqlite3_clear_bindings(fs->sc[k].st);
			*ret = fs->sc[k].st;
			return 0;
		}
		if (fs->sc[k].sql)
			continue;
		rc = sqlite3_prepare_v3(fs->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &fs->sc[k].st, NULL);
		if (rc != SQLITE_OK)
			return ponyfs_sql_err(fs, rc);
		fs->sc[k].sql = sql;
		*ret = fs->sc[k].st;
		return 0;
	}
	return -ENOMEM;
}

sqlite3_stmt *ponyfs_stmt(struct ponyfs *fs, enum ponyfs_stmt which)
{
	sqlite3_stmt *s = fs->st[which];

	/* The only statements that change extents: cached block counts go stale. */
	if (which == ST_EXT_INS || which == ST_EXT_DEL)
		ponyfs_rows_extents_changed(fs);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

int ponyfs_step_row(struct ponyfs *fs, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	/* The error is the step's; reset() repeats it, and must come first
	 * so the statement lets go of its pages before anything else runs. */
	sqlite3_reset(s);
	return ponyfs_sql_err(fs, rc);
}

int ponyfs_row_of(struct ponyfs *fs, const char *sql, uint64_t ino, sqlite3_stmt **ret)
{
	int r = ponyfs_prepare(fs, sql, ret);

	if (r < 0)
		return r;
	sqlite3_bind_int64(*ret, 1, (int64_t)ino);
	r = ponyfs_step_row(fs, *ret);
	if (r <= 0)
		sqlite3_reset(*ret);
	return r < 0 ? r : r == 0 ? -ENOENT : 0;
}

int ponyfs_step_done(struct ponyfs *fs, sqlite3_stmt *s)
{
	int r;

	while ((r = ponyfs_step_row(fs, s)) > 0)
		;
	sqlite3_reset(s);
	return r;
}

int ponyfs_exec(struct ponyfs *fs, const char *sql)
{
	return ponyfs_sql_err(fs, sqlite3_exec(fs->db, sql, NULL, NULL, NULL));
}

static int prepare_va(struct ponyfs *fs, sqlite3_stmt **ret, const char *sql, int n, va_list ap)
{
	int r = ponyfs_prepare(fs, sql, ret);

	if (r < 0)
		return r;
	for (int i = 1; i <= n; i++)
		sqlite3_bind_int64(*ret, i, va_arg(ap, int64_t));
	return 0;
}

int ponyfs_sql(struct ponyfs *fs, const char *sql, int n, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int r;

	va_start(ap, n);
	r = prepare_va(fs, &s, sql, n, ap);
	va_end(ap);
	if (r >= 0)
		r = ponyfs_step_done(fs, s);
	return r;
}

int ponyfs_sql_int(struct ponyfs *fs, int64_t *ret, const char *sql, int n, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int r;

	va_start(ap, n);
	r = prepare_va(fs, &s, sql, n, ap);
	va_end(ap);
	if (r >= 0) {
		r = ponyfs_step_row(fs, s);
		if (r > 0)
			*ret = sqlite3_column_int64(s, 0);
		r = r > 0 ? 0 : r == 0 ? -ENOENT : r;
		sqlite3_reset(s);
	}
	return r;
}

int ponyfs_txn_begin_locked(struct ponyfs *fs)
{
	int r;

	if (fs->broken)
		return fs->broken;
	if (fs->read_only)
		return -EROFS;
	if (fs->in_txn)
		return 0;
	/* Started with the first change, not at mount: a FUSE daemon forks
	 * after mounting, and threads do not survive fork. */
	if (fs->commit_ms && !fs->timer_running && !fs->stopping)
		ponyfs_timer_start(fs);
	r = ponyfs_sql(fs, "BEGIN", 0);
	if (r >= 0)
		fs->in_txn = true;
	return r;
}

/*
 * The filesystem cannot go on changing: a commit failed (the transaction's
 * outcome on disk is unknown), or SQLite dropped the open transaction.
 * Every later change and sync fails with err, the first such error, until
 * a remount; it is logged once and shown by the counters. close(2) does
 * not report it (a ponyfs mount sends no FLUSH), as ext4's close reports
 * no failed writeback: fsync(2) does.
 */
void ponyfs_fail_locked(struct ponyfs *fs, int err, const char *what)
{
	if (fs->broken)
		return;
	fs->broken = err;
	ponyfs_log(fs, LOG_ERR, "%s: %s (%s)", what, strerror(-err), ponyfs_errno_name(err));
	ponyfs_log(fs, LOG_CRIT, "the filesystem is read-only until it is remounted: "
		   "changes since the last commit are lost");
}

/*
 * Copies the WAL's pages into the database file. SQLite's automatic
 * checkpoints are off (their failures are not reported): ponyfs runs them
 * after commits and when it needs the WAL's room (space.c). When all of
 * the WAL was copied, the next transaction starts it over from the top.
 */
int ponyfs_checkpoint_locked(struct ponyfs *fs)
{
	int log = 0, done = 0, r;

	if (fs->in_txn)
		return -EBUSY;
	r = ponyfs_sql_err(fs, sqlite3_wal_checkpoint_v2(fs->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
							 &log, &done));
	if (r < 0) {
		ponyfs_log(fs, LOG_ERR, "checkpoint failed: %s (%s)", strerror(-r), ponyfs_errno_name(r));
		return r;
	}
	fs->stats.checkpoints++;
	if (log == done) {
		ponyfs_sqlite_wal_recycled(fs->db);
		fs->space.wal_frames = fs->space.wal_committed = 0;
		fs->space.stale = true;
	}
	return 0;
}

/* After a commit: a WAL that holds many pages is checkpointed (as SQLite's
 * own wal_autocheckpoint would, at 1000 pages), sooner when it is small.
 * The commit stands whatever the checkpoint does (the WAL holds it); a
 * failure is logged, and a change that needs the WAL's room meets it. */
static void commit_checkpoint(struct ponyfs *fs)
{
	uint64_t used = ponyfs_sqlite_wal_frames(fs->db, false);

	/* The WAL holds just what is committed now (space.c counts on it). */
	fs->space.wal_frames = fs->space.wal_committed = used;
	fs->space.wal_pending = 0;
	fs->space.stale = true;
	if (used >= MIN(1000u, ponyfs_sqlite_wal_frames(fs->db, true) / 4))
		ponyfs_checkpoint_locked(fs);
}

/*
 * Commits the open transaction (if any) after flushing the data it points
 * at. A failure leaves the filesystem broken (ponyfs_fail_locked) and is
 * returned with its own errno. Called through ponyfs_commit_locked()
 * (bound.c), which first writes back the files bound to the transaction.
 */
int ponyfs_txn_commit_locked(struct ponyfs *fs)
{
	int r = 0;

	if (fs->broken)
		return fs->broken;
	if (!fs->in_txn)
		return 0;
	/* From here on a failure is the commit's, whatever SQLite does with
	 * the transaction (an I/O error at COMMIT rolls it back). */
	fs->in_txn = false;
	fs->txn_ops = 0;
	if (fs->data_unflushed) {
		r = bdev_flush(fs->data);
		fs->stats.data_flushes++;
		fs->data_unflushed = r < 0;
	}
	if (r >= 0)
		r = ponyfs_free_apply_locked(fs);
	if (r >= 0)
		r = ponyfs_exec(fs, "COMMIT");
	if (r < 0) {
		ponyfs_fail_locked(fs, r, "commit failed");
		return fs->broken;
	}
	fs->stats.commits++;
	ponyfs_free_committed_locked(fs);
	commit_checkpoint(fs);
	return 0;
}

static void *timer_main(void *arg)
{
	struct ponyfs *fs = arg;
	struct timespec until;

	pthread_mutex_lock(&fs->lock);
	while (!fs->stopping) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += fs->commit_ms / 1000;
		until.tv_nsec += (long)(fs->commit_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		/* Once a tick, after its commit: slabs of an empty cache go back. */
		ponyfs_pages_trim(fs);
		pthread_cond_timedwait(&fs->timer_cond, &fs->lock, &until);
		if (fs->stopping || fs->broken)
			continue;
		/* Files replaced in place (truncated, still being rewritten) wait:
		 * committing them half-written is what rule 2 forbids. A failure
		 * has been logged and breaks the filesystem: the next call says so. */
		if (ponyfs_writeback_all_locked(fs, true) >= 0)
			ponyfs_commit_locked(fs);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

int ponyfs_timer_start(struct ponyfs *fs)
{
	int r;

	if (!fs->commit_ms)
		return 0;
	r = -pthread_create(&fs->timer, NULL, timer_main, fs);
	fs->timer_running = r == 0;
	return r;
}

void ponyfs_timer_stop(struct ponyfs *fs)
{
	/* Stopping even when it never ran: the unmount's last writeback must
	 * not start it (a mount that only read, and moved atimes, did). */
	pthread_mutex_lock(&fs->lock);
	fs->stopping = true;
	pthread_cond_signal(&fs->timer_cond);
	pthread_mutex_unlock(&fs->lock);
	if (!fs->timer_running)
		return;
	pthread_join(fs->timer, NULL);
	fs->timer_running = false;
}
