/*
 * daemon.c - the soak's child: ponyfs mounted on a RAID6 pony volume whose
 * members are fault bdevs, the way `pony mount` stands on image files.
 * Writers replace files (rename-over, truncate-and-rewrite), delete them
 * and make them durable (fsync, syncfs), recording each step in the shared
 * model before and after the call; a filler fills the data region and
 * then the metadata space until ENOSPC and empties them again; the main
 * thread injects faults on this cycle's victims: a member that vanishes,
 * unreadable ranges, bits flipped on the medium. It runs until the
 * supervisor's SIGKILL.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "pony/bdev.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "soak.h"

struct daemon {
	const struct soak_config *cfg;
	struct soak_shared *sh;
	struct vfs *fs;
	struct bdev *fault[SOAK_MEMBERS];       /* owned by the volume */
	uint64_t dir[SOAK_WRITERS], fill_dir;
	/*
	 * A syncfs makes whatever is there durable, a file truncated for a
	 * rewrite and not yet rewritten too (as on ext4): held for writing by
	 * syncfs, for reading by each truncate-and-rewrite, so the model's
	 * "never empty without an fsync" stays a check of ponyfs alone.
	 */
	pthread_rwlock_t rewrite_lock;
};

struct writer {
	struct daemon *d;
	unsigned id;
	uint64_t rng;
	uint8_t *buf;
};

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* An error no call may return here: EIO and friends on a volume within its redundancy. */
static void unexpected(struct daemon *d, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void unexpected(struct daemon *d, int r, const char *fmt, ...)
{
	struct soak_shared *sh = d->sh;
	int zero = 0;
	va_list ap;

	if (!__atomic_compare_exchange_n(&sh->unexpected_errno, &zero, -r, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return;
	va_start(ap, fmt);
	vsnprintf(sh->unexpected_what, sizeof(sh->unexpected_what), fmt, ap);
	va_end(ap);
	util_log(LOG_ERR, "soak: unexpected: %s", sh->unexpected_what);
}

/* -ENOSPC is the answer of a full filesystem; anything else is a finding. */
static bool call_ok(struct daemon *d, int r, const char *what, const char *name)
{
	__atomic_add_fetch(&d->sh->ops, 1, __ATOMIC_RELAXED);
	if (r == -ENOSPC)
		__atomic_add_fetch(&d->sh->enospc, 1, __ATOMIC_RELAXED);
	else if (r < 0 && r != -ENOENT)
		unexpected(d, r, "%s %s: %s", what, name, strerror(-r));
	return r >= 0;
}

/* syncfs: everything this writer had acknowledged before the call is durable after it. */
static void writer_syncfs(struct writer *w)
{
	struct soak_slot *slots = w->d->sh->slot[w->id];
	uint64_t acked[SOAK_SLOTS];

	for (unsigned i = 0; i < SOAK_SLOTS; i++)
		acked[i] = slots[i].acked;
	int r;

	pthread_rwlock_wrlock(&w->d->rewrite_lock);
	r = VFS_CALL(w->d->fs, syncfs);
	pthread_rwlock_unlock(&w->d->rewrite_lock);
	if (!call_ok(w->d, r, "syncfs", "/"))
		return;
	for (unsigned i = 0; i < SOAK_SLOTS; i++)
		if (acked[i] > slots[i].durable)
			store(&slots[i].durable, acked[i]);
}

static void writer_step(struct writer *w)
{
	struct daemon *d = w->d;
	unsigned j = (unsigned)(next_rand(&w->rng) % SOAK_SLOTS), op = (unsigned)(next_rand(&w->rng) % 100);
	struct soak_slot *s = &d->sh->slot[w->id][j];
	uint64_t v = s->started + 1, dir = d->dir[w->id];
	bool sync = next_rand(&w->rng) % 4 == 0;
	char name[32], tmp[40];
	size_t len;
	int r;

	if (v - s->durable >= SOAK_RING - 2) {
		writer_syncfs(w);
		if (v - s->durable >= SOAK_RING - 2) {
			usleep(10000);  /* calls failing on a full filesystem: try later */
			return;
		}
	}
	soak_slot_name(w->id, j, name, sizeof(name));
	if (op < 10)
		s->kind[v % SOAK_RING] = SOAK_KIND_GONE;
	else if (op >= 60 && !s->exists)
		s->kind[v % SOAK_RING] = SOAK_KIND_NEW;
	else
		s->kind[v % SOAK_RING] = SOAK_KIND_FILE;
	store(&s->started, v);
	s->exists = false;      /* unknown until the call says */
	if (op < 10) {
		r = soak_unlink(d->fs, dir, name);
		if (r == -ENOENT)
			r = 0;
		if (r >= 0 && sync)
			r = soak_fsync_dir(d->fs, dir);
		if (!call_ok(d, r, "unlink", name))
			return;
	} else {
		len = soak_version_len(w->id, j, v);
		soak_version_fill(w->id, j, v, w->buf, len);
		if (op < 60) {          /* write a new file, rename it over the old */
			snprintf(tmp, sizeof(tmp), "%s.tmp", name);
			r = soak_put(d->fs, dir, tmp, w->buf, len, false, false, NULL);
			if (r >= 0)
				r = soak_rename(d->fs, dir, tmp, name);
			else
				soak_unlink(d->fs, dir, tmp);
			if (r >= 0 && sync)
				r = soak_fsync_dir(d->fs, dir);
		} else {                /* truncate and rewrite in place */
			pthread_rwlock_rdlock(&d->rewrite_lock);
			/* A file replaced in place is held out of commits until
			 * its last close (rule 2): short writes or not, all or
			 * nothing. A new one has no such rule. */
			r = soak_put(d->fs, dir, name, w->buf, len, true, sync,
				     s->kind[v % SOAK_RING] == SOAK_KIND_NEW ?
				     &s->kind[v % SOAK_RING] : NULL);
			pthread_rwlock_unlock(&d->rewrite_lock);
		}
		if (!call_ok(d, r, op < 60 ? "rename-over" : "rewrite", name)) {
			if (op >= 60)   /* the application saw the error: the file holds what got in */
				s->kind[v % SOAK_RING] = SOAK_KIND_TORN;
			return;
		}
	}
	s->exists = op >= 10;
	store(&s->acked, v);
	if (sync)
		store(&s->durable, v);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	for (unsigned n = 1;; n++) {
		writer_step(w);
		if (n % 64 == 0)
			writer_syncfs(w);
	}
	return NULL;
}

/* Fills the data region with big files, then the metadata space with names
 * and xattrs, until ENOSPC; holds it full a moment; deletes everything. */
static void fill_phase(struct daemon *d, uint64_t *rng)
{
	static uint8_t chunk[1u << 20];
	struct vfs_ctx c;
	char name[32], xname[32], xval[100];
	unsigned nbig = 0, nsmall = 0;
	int r = 0;

	vfs_ctx_self(&c);
	memset(chunk, 0x5a, sizeof(chunk));
	memset(xval, 'x', sizeof(xval));
	__atomic_add_fetch(&d->sh->faults.full_phases, 1, __ATOMIC_RELAXED);
	util_log(LOG_INFO, "soak: filling the filesystem");
	while (r >= 0) {
		struct vfs_entry e;
		uint64_t fh;

		snprintf(name, sizeof(name), "big%u", nbig++);
		r = VFS_CALL(d->fs, create, &c, d->fill_dir, name, 0644, O_CREAT | O_WRONLY, &e, &fh);
		if (r < 0)
			break;
		for (off_t off = 0; r >= 0 && off < (64 << 20); off += sizeof(chunk)) {
			ssize_t n = VFS_CALL(d->fs, write, e.ino, fh, chunk, sizeof(chunk), off);

			r = n < 0 ? (int)n : 0;
		}
		VFS_CALL(d->fs, release, e.ino, fh);
		VFS_FORGET(d->fs, e.ino, 1);
	}
	call_ok(d, r, "fill data", name);
	util_log(LOG_INFO, "soak: data full after %u files (%s), filling metadata", nbig, strerror(-r));
	for (r = 0; r >= 0 && nsmall < 20000;) {
		struct vfs_entry e;

		snprintf(name, sizeof(name), "m%u", nsmall);
		r = VFS_CALL(d->fs, mknod, &c, d->fill_dir, name, S_IFREG | 0644, 0, &e);
		if (r < 0)
			break;
		nsmall++;
		for (unsigned x = 0; r >= 0 && x < 8; x++) {
			snprintf(xname, sizeof(xname), "user.soak%u", x);
			r = VFS_CALL(d->fs, setxattr, &c, e.ino, xname, xval, sizeof(xval), 0);
		}
		VFS_FORGET(d->fs, e.ino, 1);
	}
	call_ok(d, r, "fill metadata", name);
	util_log(LOG_INFO, "soak: metadata full after %u names (%s), emptying", nsmall, strerror(-r));
	usleep((useconds_t)(200000 + next_rand(rng) % 800000));
	for (unsigned i = 0; i < nbig; i++) {
		snprintf(name, sizeof(name), "big%u", i);
		call_ok(d, soak_unlink(d->fs, d->fill_dir, name), "unlink", name);
	}
	for (unsigned i = 0; i < nsmall; i++) {
		snprintf(name, sizeof(name), "m%u", i);
		call_ok(d, soak_unlink(d->fs, d->fill_dir, name), "unlink", name);
	}
}

/* What a killed daemon's fill phase left behind. */
static int filler_collect(void *arg, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	struct daemon *d = arg;

	if (strcmp(name, ".") && strcmp(name, ".."))
		soak_unlink(d->fs, d->fill_dir, name);
	return 0;
}

static void *filler_main(void *arg)
{
	struct daemon *d = arg;
	uint64_t rng = d->cfg->seed ^ 0x9e3779b97f4a7c15ull;
	struct vfs_ctx c;
	uint64_t fh;

	vfs_ctx_self(&c);
	if (VFS_CALL(d->fs, opendir, &c, d->fill_dir, &fh) >= 0) {
		VFS_CALL(d->fs, readdir, &c, d->fill_dir, fh, 0, filler_collect, d);
		VFS_CALL(d->fs, releasedir, d->fill_dir, fh);
	}

	for (;;) {
		usleep((useconds_t)(500000 + next_rand(&rng) % 2000000));
		fill_phase(d, &rng);
	}
	return NULL;
}

/* Flips one byte of member m's medium, in the data region's part of it. */
static void flip_bit(struct daemon *d, unsigned m, uint64_t *rng)
{
	uint64_t lo = d->cfg->member_size / 4, hi = d->cfg->member_size - (2u << 20);
	uint64_t off = lo + next_rand(rng) % (hi - lo);
	int fd = open(d->cfg->member[m], O_RDWR);
	uint8_t b;

	if (fd < 0)
		return;
	if (pread(fd, &b, 1, (off_t)off) == 1) {
		b ^= (uint8_t)(1u << (next_rand(rng) % 8));
		if (pwrite(fd, &b, 1, (off_t)off) == 1) {
			__atomic_add_fetch(&d->sh->faults.bit_flips, 1, __ATOMIC_RELAXED);
			util_log(LOG_INFO, "soak: injected a bit flip, member %u byte %" PRIu64, m, off);
		}
	}
	close(fd);
}

/*
 * What RAID6 promises bounds what is injected: two members lost or
 * unreadable, or one member silently wrong (P and Q locate it). Erasures
 * and a silent error together exceed that for metadata, whose pages carry
 * no checksum to pick the right reconstruction (docs/reliability.md), so a
 * cycle with two victims injects no bit flips.
 */
static void inject_forever(struct daemon *d, uint64_t rng) __attribute__((noreturn));
static void inject_forever(struct daemon *d, uint64_t rng)
{
	bool flips = d->sh->victim[0] < 0 || d->sh->victim[1] < 0 ||
		     d->sh->victim[0] == d->sh->victim[1];

	for (;;) {
		unsigned pick = (unsigned)(next_rand(&rng) % 100);
		int v = d->sh->victim[next_rand(&rng) % SOAK_VICTIMS];

		usleep((useconds_t)(200000 + next_rand(&rng) % 600000));
		if (v < 0)
			continue;
		if (pick < 10 && !d->sh->vanished[v]) {
			d->sh->vanished[v] = true;
			bdev_fault_vanish(d->fault[v]);
			util_log(LOG_INFO, "soak: injected the loss of member %d", v);
			__atomic_add_fetch(&d->sh->faults.member_failures, 1, __ATOMIC_RELAXED);
		} else if (pick < 50) {
			uint64_t off = next_rand(&rng) % (d->cfg->member_size - (64u << 10));

			bdev_fault_add_bad(d->fault[v], off & ~4095ull, 64u << 10, BDEV_FAULT_READ);
			util_log(LOG_INFO, "soak: injected read errors, member %d bytes %" PRIu64 "+64K", v,
				 (uint64_t)(off & ~4095ull));
			__atomic_add_fetch(&d->sh->faults.read_errors, 1, __ATOMIC_RELAXED);
		} else if (flips) {
			flip_bit(d, (unsigned)v, &rng);
		}
	}
}

static int daemon_mount(struct daemon *d, struct volume_set **ret_set)
{
	struct bdev *devs[SOAK_MEMBERS], *meta = NULL, *data = NULL;
	struct ponyfs_options po = { .commit_ms = 1000 };
	unsigned bad = 0;
	int r;

	for (unsigned m = 0; m < SOAK_MEMBERS; m++) {
		struct bdev *file;

		r = bdev_file_open(d->cfg->member[m], O_RDWR, &file);
		if (r < 0)
			return r;
		r = bdev_fault_new(file, &devs[m]);
		if (r < 0)
			return r;
		d->fault[m] = devs[m];
	}
	r = volume_set_open(devs, SOAK_MEMBERS, 0, ret_set, &bad);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(*ret_set), VOLUME_CLASS_METADATA, &meta);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(*ret_set), VOLUME_CLASS_DATA, &data);
	if (r >= 0)
		r = ponyfs_mount(meta, data, &po, &d->fs);
	return r;
}

void soak_daemon_run(const struct soak_config *cfg, struct soak_shared *sh, uint64_t seed)
{
	static struct daemon d;
	static struct writer w[SOAK_WRITERS];
	struct volume_set *set = NULL;
	pthread_t t;
	char name[16];
	int r;

	pthread_rwlockattr_t wa;

	d = (struct daemon){ .cfg = cfg, .sh = sh };
	pthread_rwlockattr_init(&wa);   /* four rewriters must not starve a syncfs */
	pthread_rwlockattr_setkind_np(&wa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&d.rewrite_lock, &wa);
	util_log_open("pony-soak", cfg->log, 0);
	r = daemon_mount(&d, &set);
	for (unsigned i = 0; r >= 0 && i < SOAK_WRITERS; i++) {
		snprintf(name, sizeof(name), "w%u", i);
		r = soak_walk_dir(d.fs, name, &d.dir[i]);
	}
	if (r >= 0)
		r = soak_walk_dir(d.fs, "fill", &d.fill_dir);
	if (r < 0) {
		fprintf(stderr, "soak daemon: cannot mount: %s\n", strerror(-r));
		_exit(1);
	}
	util_log(LOG_NOTICE, "soak: mounted, victims %d %d", sh->victim[0], sh->victim[1]);
	for (unsigned i = 0; i < SOAK_WRITERS; i++) {
		w[i] = (struct writer){ .d = &d, .id = i, .rng = seed * 31 + i + 1,
					.buf = malloc(SOAK_MAX_LEN) };
		pthread_create(&t, NULL, writer_main, &w[i]);
	}
	pthread_create(&t, NULL, filler_main, &d);
	__atomic_store_n(&sh->ready, true, __ATOMIC_RELEASE);
	inject_forever(&d, seed | 1);
}
