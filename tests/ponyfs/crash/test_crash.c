/*
 * test_crash.c - ponyfs's crash-consistency harness. Each workload runs on
 * a model and on ponyfs over a record bdev at once; every crash state of
 * the log (states.c) is then checked with fsck and mounted, and the oracle
 * holds: every file holds a content its name really had at some point
 * (never empty-instead-of-old, short or mixed: rename-over and rewrite are
 * all-old or all-new), fsynced files hold what was fsynced or later, what
 * follows an fbarrier is never visible without what preceded it, and after
 * the final sync the state is exactly the model's. Workloads: Ace-style
 * generated sequences of one to three operations plus storms of
 * rename-replace, rewrite and fsync, and fallocate before a write, a
 * rename-over and a truncating rewrite, a rename-over rewritten before
 * its commit (rename-rewrite-midway), metadata growing into a chunk of
 * the data region (meta-grow), and deletes: of a file of two batches of
 * extents, and by a rename over a file with another name (unlink-batches). Each runs once more with the whole tree
 * encrypted (a policy on the empty root, the key added at every mount):
 * encryption must not weaken one rule. PONY_CRASH_FULL=1 runs the full
 * enumeration (all subsets up to 12 writes in flight, else 1000 samples).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../helpers.h"
#include "crash.h"
#include "pony/crypt.h"
#include "pony/util.h"

#define IMG_SIZE (8u << 20)
#define NP 6
#define MAX_STEPS 48
#define MAX_FACTS 32
#define MAX_INO 64

static const char *const paths[NP] = { "a", "b", "c", "t", "d/a", "d/b" };
enum { P_A, P_B, P_C, P_T, P_DA, P_DB };

struct blob { uint8_t *buf; size_t len; };

struct model {
	int ino[NP];                    /* -1: no such name */
	bool d;
	struct blob in[MAX_INO];
	int nino;
};

struct snap { bool d; bool has[NP]; struct blob c[NP]; };

/* What must hold when a state has at least `pos` entries durable. */
enum fact_kind { FACT_FSYNC, FACT_BARRIER };
struct fact {
	enum fact_kind kind;
	uint64_t pos;                   /* FSYNC: durable from this log entry count */
	int path, from;                 /* path's content is one from step `from` on */
	int marker;                     /* BARRIER: if marker exists, path is from `from` on */
};

struct workload {
	const char *name;
	struct vfs *fs;
	struct bdev *log;
	struct model m;
	struct snap s[MAX_STEPS];
	int nsteps;
	struct fact f[MAX_FACTS];
	int nfacts;
	uint64_t final_pos;
	char failure[256];
};

static uint64_t log_pos(struct workload *w)
{
	uint64_t n = 0;

	if (w->log)
		bdev_record_count(w->log, &n);
	return n;
}

static void snapshot(struct workload *w)
{
	struct snap *s = &w->s[w->nsteps++];

	if (w->nsteps > MAX_STEPS) {
		fprintf(stderr, "crash: too many steps\n");
		abort();
	}
	s->d = w->m.d;
	for (int i = 0; i < NP; i++) {
		s->has[i] = w->m.ino[i] >= 0;
		s->c[i] = (struct blob){ 0 };
		if (s->has[i]) {
			struct blob *b = &w->m.in[w->m.ino[i]];

			s->c[i].len = b->len;
			s->c[i].buf = malloc(b->len + 1);
			memcpy(s->c[i].buf, b->buf, b->len);
		}
	}
}

static void fail_op(struct workload *w, const char *op, int path, int got, int want)
{
	fprintf(stderr, "crash: workload %s: %s %s returned %d, model says %d\n", w->name, op,
		path >= 0 ? paths[path] : "", got, want);
	abort();
}

static bool parent_ok(const struct model *m, int p)
{
	return p < P_DA || m->d;
}

static int new_ino(struct model *m)
{
	m->in[m->nino] = (struct blob){ calloc(1, 1), 0 };
	return m->nino++;
}

static void blob_resize(struct blob *b, size_t len)
{
	b->buf = realloc(b->buf, len + 1);
	if (len > b->len)
		memset(b->buf + b->len, 0, len - b->len);
	b->len = len;
}

/* -- operations: each runs on ponyfs and the model, then snapshots -------- */

static void op_creat(struct workload *w, int p)
{
	uint64_t ino, fh;
	int want = parent_ok(&w->m, p) ? 0 : -ENOENT;
	int r = test_open(w->fs, paths[p], O_CREAT | O_WRONLY | O_TRUNC, &ino, &fh);

	if (r >= 0)
		VFS_CALL(w->fs, release, ino, fh);
	if (r != want)
		fail_op(w, "creat", p, r, want);
	if (!r && w->m.ino[p] < 0)
		w->m.ino[p] = new_ino(&w->m);
	else if (!r)
		blob_resize(&w->m.in[w->m.ino[p]], 0);
	snapshot(w);
}

static void op_write(struct workload *w, int p, uint64_t off, size_t len, unsigned seed, bool trunc)
{
	uint8_t *data = malloc(len);
	uint64_t ino, fh;
	int want = w->m.ino[p] >= 0 ? 0 : -ENOENT;
	int r = test_open(w->fs, paths[p], O_WRONLY | (trunc ? O_TRUNC : 0), &ino, &fh);

	test_fill(data, len, seed);
	if (r >= 0) {
		ssize_t n = VFS_CALL(w->fs, write, ino, fh, data, len, (off_t)off);

		if (n != (ssize_t)len)
			fail_op(w, "write", p, (int)n, (int)len);
		VFS_CALL(w->fs, release, ino, fh);
	}
	if (r != want)
		fail_op(w, "write", p, r, want);
	if (!r) {
		struct blob *b = &w->m.in[w->m.ino[p]];

		if (trunc)
			blob_resize(b, 0);
		if (off + len > b->len)
			blob_resize(b, off + len);
		memcpy(b->buf + off, data, len);
	}
	free(data);
	snapshot(w);
}

static void op_truncate(struct workload *w, int p, uint64_t size)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_setattr a = { .valid = VFS_SET_SIZE, .size = size };
	struct vfs_entry e;
	struct statx x;
	int want = w->m.ino[p] >= 0 ? 0 : -ENOENT;
	int r = vfs_walk(w->fs, &c, paths[p], &e);

	if (r >= 0)
		r = VFS_CALL(w->fs, setattr, &c, e.ino, VFS_NO_FH, &a, &x);
	if (r != want)
		fail_op(w, "truncate", p, r, want);
	if (!r)
		blob_resize(&w->m.in[w->m.ino[p]], size);
	snapshot(w);
}

static void op_rename(struct workload *w, int p, int q)
{
	struct vfs_ctx c = test_ctx();
	uint64_t pp, qp;
	const char *pn, *qn;
	int want = w->m.ino[p] >= 0 && parent_ok(&w->m, q) ? 0 : -ENOENT;
	int r = test_parent(w->fs, paths[p], &pp, &pn);

	if (r >= 0)
		r = test_parent(w->fs, paths[q], &qp, &qn);
	if (r >= 0)
		r = VFS_CALL(w->fs, rename, &c, pp, pn, qp, qn, 0);
	if (r != want)
		fail_op(w, "rename", p, r, want);
	if (!r && w->m.ino[p] != w->m.ino[q]) {
		w->m.ino[q] = w->m.ino[p];
		w->m.ino[p] = -1;
	}
	snapshot(w);
}

static void op_link(struct workload *w, int p, int q)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e, l;
	uint64_t qp;
	const char *qn;
	int want = w->m.ino[p] < 0 || !parent_ok(&w->m, q) ? -ENOENT : w->m.ino[q] >= 0 ? -EEXIST : 0;
	int r = vfs_walk(w->fs, &c, paths[p], &e);

	if (r >= 0)
		r = test_parent(w->fs, paths[q], &qp, &qn);
	if (r >= 0)
		r = VFS_CALL(w->fs, link, &c, e.ino, qp, qn, &l);
	if (r != want)
		fail_op(w, "link", p, r, want);
	if (!r)
		w->m.ino[q] = w->m.ino[p];
	snapshot(w);
}

static void op_unlink(struct workload *w, int p)
{
	struct vfs_ctx c = test_ctx();
	uint64_t pp;
	const char *pn;
	int want = w->m.ino[p] >= 0 ? 0 : -ENOENT;
	int r = test_parent(w->fs, paths[p], &pp, &pn);

	if (r >= 0)
		r = VFS_CALL(w->fs, unlink, &c, pp, pn);
	if (r != want)
		fail_op(w, "unlink", p, r, want);
	if (!r)
		w->m.ino[p] = -1;
	snapshot(w);
}

static void op_mkdir(struct workload *w)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;
	int want = w->m.d ? -EEXIST : 0;
	int r = VFS_CALL(w->fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &e);

	if (r != want)
		fail_op(w, "mkdir", -1, r, want);
	w->m.d = true;
	snapshot(w);
}

static void op_rmdir(struct workload *w)
{
	struct vfs_ctx c = test_ctx();
	int want = !w->m.d ? -ENOENT : w->m.ino[P_DA] >= 0 || w->m.ino[P_DB] >= 0 ? -ENOTEMPTY : 0;
	int r = VFS_CALL(w->fs, rmdir, &c, VFS_ROOT_INO, "d");

	if (r != want)
		fail_op(w, "rmdir", -1, r, want);
	if (!r)
		w->m.d = false;
	snapshot(w);
}

/* fallocate (mode 0 or KEEP_SIZE) of p: a mode 0 past the end extends it with zeros. */
static void op_fallocate(struct workload *w, int p, bool keep, uint64_t off, uint64_t len)
{
	uint64_t ino, fh;
	int want = w->m.ino[p] >= 0 ? 0 : -ENOENT;
	int r = test_open(w->fs, paths[p], O_WRONLY, &ino, &fh);

	if (r >= 0) {
		r = VFS_CALL(w->fs, fallocate, ino, fh, keep ? FALLOC_FL_KEEP_SIZE : 0, (off_t)off,
			     (off_t)len);
		VFS_CALL(w->fs, release, ino, fh);
	}
	if (r != want)
		fail_op(w, "fallocate", p, r, want);
	if (!r && !keep && off + len > w->m.in[w->m.ino[p]].len)
		blob_resize(&w->m.in[w->m.ino[p]], off + len);
	snapshot(w);
}

/* fsync, fdatasync or fbarrier of p. */
enum persist { P_NONE, P_FSYNC, P_FDATASYNC, P_BARRIER, P_SYNCFS };

static void op_persist(struct workload *w, enum persist how, int p)
{
	uint64_t ino, fh;
	int r;

	if (how == P_NONE)
		return;
	if (how == P_SYNCFS) {
		r = VFS_CALL(w->fs, syncfs);
		if (r)
			fail_op(w, "syncfs", -1, r, 0);
		w->final_pos = log_pos(w);
		return;
	}
	r = test_open(w->fs, paths[p], O_RDWR, &ino, &fh);
	if (r != (w->m.ino[p] >= 0 ? 0 : -ENOENT))
		fail_op(w, "open", p, r, 0);
	if (r < 0)
		return;
	r = how == P_BARRIER ? VFS_CALL(w->fs, barrier, ino, fh)
			     : VFS_CALL(w->fs, fsync, ino, fh, how == P_FDATASYNC);
	VFS_CALL(w->fs, release, ino, fh);
	if (r)
		fail_op(w, "fsync", p, r, 0);
	if (w->nfacts < MAX_FACTS)
		w->f[w->nfacts++] = (struct fact){
			.kind = how == P_BARRIER ? FACT_BARRIER : FACT_FSYNC,
			.pos = log_pos(w), .path = p, .from = w->nsteps - 1, .marker = -1 };
}

/* Replace via rename: the application pattern of the issue, no fsync. */
static void op_replace(struct workload *w, int p, size_t len, unsigned seed)
{
	op_creat(w, P_T);
	op_write(w, P_T, 0, len, seed, false);
	op_rename(w, P_T, p);
}

/* -- the oracle ----------------------------------------------------------- */

static bool blob_eq(const struct blob *a, const uint8_t *buf, ssize_t len)
{
	return len >= 0 && (size_t)len == a->len && !memcmp(a->buf, buf, a->len);
}

/* Does path hold (has, buf/len) as in some snapshot from step `from` on? */
static bool seen_from(const struct workload *w, int p, int from, bool has, const uint8_t *buf,
		      ssize_t len)
{
	for (int t = from; t < w->nsteps; t++)
		if (w->s[t].has[p] == has && (!has || blob_eq(&w->s[t].c[p], buf, len)))
			return true;
	return false;
}

static uint8_t state_buf[NP][1 << 16];

static void crypt_mount(struct vfs *fs, bool first);

static int check_state(struct bdev *state, uint64_t durable, void *arg)
{
	struct workload *w = arg;
	ssize_t len[NP];
	bool has[NP];
	struct vfs *fs;
	int r = ponyfs_fsck_image(state, PONYFS_FSCK_DATA, NULL, NULL);

	if (r != 0) {
		snprintf(w->failure, sizeof(w->failure), "fsck found %d problems at durable %llu", r,
			 (unsigned long long)durable);
		return -1;
	}
	r = ponyfs_mount_image(state, NULL, &fs);
	if (r < 0) {
		snprintf(w->failure, sizeof(w->failure), "mount failed: %d", r);
		return -1;
	}
	crypt_mount(fs, false);
	for (int p = 0; p < NP; p++) {
		len[p] = test_get(fs, paths[p], state_buf[p], sizeof(state_buf[p]));
		has[p] = len[p] != -ENOENT;
		if (!seen_from(w, p, 0, has[p], state_buf[p], len[p])) {
			snprintf(w->failure, sizeof(w->failure), "%s holds %zd bytes no step had "
				 "(durable %llu)", paths[p], len[p], (unsigned long long)durable);
			r = -1;
		}
	}
	for (int i = 0; r >= 0 && i < w->nfacts; i++) {
		const struct fact *f = &w->f[i];
		bool applies = f->kind == FACT_FSYNC ? durable >= f->pos
						     : f->marker >= 0 && has[f->marker];

		if (applies && !seen_from(w, f->path, f->from, has[f->path], state_buf[f->path], len[f->path])) {
			snprintf(w->failure, sizeof(w->failure), "%s of %s (step %d) lost (durable %llu)",
				 f->kind == FACT_FSYNC ? "fsync" : "barrier", paths[f->path], f->from,
				 (unsigned long long)durable);
			r = -1;
		}
	}
	if (r >= 0 && w->final_pos && durable >= w->final_pos) {
		for (int p = 0; p < NP; p++)
			if (!seen_from(w, p, w->nsteps - 1, has[p], state_buf[p], len[p])) {
				snprintf(w->failure, sizeof(w->failure), "%s differs after the final sync",
					 paths[p]);
				r = -1;
			}
	}
	vfs_free(fs);
	return r;
}

/* -- running a workload --------------------------------------------------- */

static bool encrypted;          /* the workloads run under a policy on the root */

/* A mount of the encrypted run gets its key (keys are per mount); the
 * first also sets the policy on the still empty root. */
static void crypt_mount(struct vfs *fs, bool first)
{
	struct vfs_ctx c = test_ctx();
	struct crypt_policy p = { .contents_mode = CRYPT_MODE_AES_256_XTS,
				  .filenames_mode = CRYPT_MODE_AES_256_CTS, .flags = 3 };
	uint8_t key[64], pol[CRYPT_POLICY_SIZE];

	if (!encrypted)
		return;
	for (int i = 0; i < 64; i++)
		key[i] = (uint8_t)(i * 7);
	if (VFS_CALL(fs, add_key, &c, key, sizeof(key), p.key_id, NULL) < 0)
		abort();
	crypt_policy_encode(&p, pol);
	if (first && VFS_CALL(fs, set_policy, &c, VFS_ROOT_INO, pol, sizeof(pol)) < 0)
		abort();
}

typedef void (*workload_fn)(struct workload *w, uint64_t seed);
/* Runs on the filesystem after the common start, before the recording. */
typedef void (*prep_fn)(struct vfs *fs);

static long run_workload(const char *name, workload_fn fn, prep_fn prep, uint64_t seed,
			 const struct crash_limits *lim)
{
	struct workload *w = calloc(1, sizeof(*w));
	struct bdev *disk, *log, *rec;
	struct crash_log cl;
	uint8_t *image = malloc(IMG_SIZE);
	long states;

	w->name = name;
	for (int i = 0; i < NP; i++)
		w->m.ino[i] = -1;
	if (bdev_mem_new(IMG_SIZE, &disk) || ponyfs_mkfs_image(disk, NULL) ||
	    ponyfs_mount_image(disk, NULL, &w->fs))
		abort();
	crypt_mount(w->fs, true);
	/* Before recording: a, b and d/a with content, d, all durable. */
	op_creat(w, P_A);
	op_write(w, P_A, 0, 9000, 100, false);
	op_creat(w, P_B);
	op_write(w, P_B, 0, 5000, 101, false);
	op_mkdir(w);
	op_creat(w, P_DA);
	op_write(w, P_DA, 0, 3000, 102, false);
	if (prep)
		prep(w->fs);
	VFS_CALL(w->fs, syncfs);
	vfs_free(w->fs);
	/* Only the last snapshot is the starting point. */
	for (int p = 0; p < NP; p++)
		free(w->s[0].c[p].buf);
	w->s[0] = w->s[w->nsteps - 1];
	for (int t = 1; t < w->nsteps - 1; t++)
		for (int p = 0; p < NP; p++)
			free(w->s[t].c[p].buf);
	w->nsteps = 1;
	if (bdev_pread(disk, image, IMG_SIZE, 0) || bdev_mem_new(64u << 20, &log) ||
	    bdev_record_new(disk, log, &rec) || ponyfs_mount_image(rec, NULL, &w->fs))
		abort();
	crypt_mount(w->fs, false);
	w->log = log;
	fn(w, seed);
	op_persist(w, P_SYNCFS, 0);
	vfs_free(w->fs);
	if (crash_log_read(log, &cl) < 0)
		abort();
	states = crash_enumerate(image, IMG_SIZE, &cl, lim, check_state, w);
	if (states < 0)
		fprintf(stderr, "crash: workload %s%s (seed %llu): %s\n", name,
			encrypted ? " (encrypted)" : "", (unsigned long long)seed, w->failure);
	crash_log_free(&cl);
	bdev_free(rec);
	free(image);
	for (int t = 0; t < w->nsteps; t++)
		for (int p = 0; p < NP; p++)
			free(w->s[t].c[p].buf);
	for (int i = 0; i < w->m.nino; i++)
		free(w->m.in[i].buf);
	free(w);
	return states;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Ace-style: one to three operations, each maybe followed by a persistence point. */
static void wl_generated(struct workload *w, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
	int nops = 1 + (int)(rnd(&s) % 3);

	for (int i = 0; i < nops; i++) {
		int p = (int)(rnd(&s) % NP), q = (int)(rnd(&s) % NP);
		size_t len = 1 + rnd(&s) % 12000;
		unsigned fill = (unsigned)(rnd(&s) % 1000) + 1000 * (unsigned)i;

		switch (rnd(&s) % 12) {
		case 0: op_creat(w, p); break;
		case 1: if (w->m.ino[p] >= 0) op_write(w, p, rnd(&s) % 9000, len, fill, false);
			else op_creat(w, p);
			break;
		case 2: if (w->m.ino[p] >= 0) op_truncate(w, p, rnd(&s) % 10000); break;
		case 3: op_rename(w, p, q); break;
		case 4: op_link(w, p, q); break;
		case 5: op_unlink(w, p); break;
		case 6: if (w->m.d) op_rmdir(w); else op_mkdir(w); break;
		case 7: case 8: if (p != P_T) op_replace(w, p, len, fill); break;
		case 11: if (w->m.ino[p] >= 0) op_fallocate(w, p, rnd(&s) % 2, rnd(&s) % 9000, len);
			break;
		default: if (w->m.ino[p] >= 0) op_write(w, p, 0, len, fill, true); break;
		}
		op_persist(w, (enum persist)(rnd(&s) % 4), (int)(rnd(&s) % NP));
	}
}

static void wl_rename_storm(struct workload *w, uint64_t seed)
{
	/* Unrelated fsyncs commit in between, as the commit timer would. */
	for (unsigned v = 0; v < 6; v++) {
		op_replace(w, v % 2 ? P_B : P_A, 3000 + v * 2500, 200 + v);
		if (v % 2)
			op_persist(w, P_FSYNC, P_DA);
	}
}

static void wl_rewrite_storm(struct workload *w, uint64_t seed)
{
	static const size_t sizes[] = { 12000, 2000, 7000, 16000 };

	for (unsigned v = 0; v < ARRAY_SIZE(sizes); v++) {
		op_write(w, P_A, 0, sizes[v], 300 + v, true);
		op_persist(w, P_FSYNC, P_B);
	}
}

/* Truncate (and maybe fallocate), write half, another file's fsync commits,
 * write the rest, close: all-old or all-new. */
static void rewrite_midway(struct workload *w, bool falloc, unsigned seed)
{
	static uint8_t data[14000];
	uint64_t ino, fh, bi, bf;
	struct blob *b = &w->m.in[w->m.ino[P_A]];

	test_fill(data, sizeof(data), seed);
	if (test_open(w->fs, "a", O_WRONLY | O_TRUNC, &ino, &fh) ||
	    (falloc && VFS_CALL(w->fs, fallocate, ino, fh, FALLOC_FL_KEEP_SIZE, 0, sizeof(data))) ||
	    VFS_CALL(w->fs, write, ino, fh, data, 7000, 0) != 7000 ||
	    test_open(w->fs, "b", O_RDWR, &bi, &bf) || VFS_CALL(w->fs, fsync, bi, bf, false) ||
	    VFS_CALL(w->fs, release, bi, bf))
		fail_op(w, "rewrite-midway", P_A, -1, 0);
	w->f[w->nfacts++] = (struct fact){ .kind = FACT_FSYNC, .pos = log_pos(w), .path = P_B,
					   .from = w->nsteps - 1, .marker = -1 };
	if (VFS_CALL(w->fs, write, ino, fh, data + 7000, 7000, 7000) != 7000 ||
	    VFS_CALL(w->fs, release, ino, fh))
		fail_op(w, "rewrite-midway", P_A, -1, 0);
	blob_resize(b, 0);
	blob_resize(b, sizeof(data));
	memcpy(b->buf, data, sizeof(data));
	snapshot(w);
}

static void wl_rewrite_commit_midway(struct workload *w, uint64_t seed)
{
	rewrite_midway(w, false, 600);
	op_persist(w, P_FSYNC, P_DA);
}

/* Replace via rename twice before any commit (the first file is never
 * written), then a truncating rewrite of the new file with a commit in its
 * middle: the name holds the renamed content or the rewrite, all of it. */
static void wl_rename_rewrite_midway(struct workload *w, uint64_t seed)
{
	op_replace(w, P_A, 9000, 1100);
	op_replace(w, P_A, 5000, 1101);
	rewrite_midway(w, false, 1102);
	op_persist(w, P_FSYNC, P_DA);
}

/* Replace via rename with the new file preallocated first, then written into. */
static void wl_falloc_rename(struct workload *w, uint64_t seed)
{
	for (unsigned v = 0; v < 3; v++) {
		op_creat(w, P_T);
		op_fallocate(w, P_T, v == 1, 0, 16000);
		op_write(w, P_T, 0, 5000 + v * 4000, 700 + v, false);
		op_rename(w, P_T, v % 2 ? P_B : P_A);
		if (v == 1)
			op_persist(w, P_FSYNC, P_DA);
	}
}

/* The same with a fallocate first, then an overwrite of what the rewrite
 * wrote in place: copy-on-write again. */
static void wl_falloc_rewrite(struct workload *w, uint64_t seed)
{
	rewrite_midway(w, true, 800);
	op_write(w, P_A, 3000, 6000, 801, false);
	op_persist(w, P_FSYNC, P_DA);
}

/* A link made after a truncation that is still cached: the new name must
 * not show the content from before the truncation (generated seed 404). */
static void wl_truncate_link(struct workload *w, uint64_t seed)
{
	op_truncate(w, P_A, 1234);
	op_link(w, P_A, P_C);
	op_persist(w, P_FSYNC, P_DA);
}

static void wl_fsync_storm(struct workload *w, uint64_t seed)
{
	for (unsigned v = 0; v < 4; v++) {
		int p = (int)(v % 3 == 0 ? P_A : v % 3 == 1 ? P_B : P_DA);

		op_write(w, p, v * 1000, 6000, 400 + v, false);
		op_persist(w, v % 2 ? P_FDATASYNC : P_FSYNC, p);
	}
}

/* Metadata past the metadata region: xattrs of 3000 bytes on the root
 * directory, which no path of the model is, until the database has
 * grown by `chunks` chunks of the data region (growth commits the chunk,
 * then writes the chunk table: every crash point between must mount). */
static unsigned xattrs_made;

static void meta_fill(struct vfs *fs, uint64_t chunks)
{
	struct vfs_ctx c = test_ctx();
	struct ponyfs_stats st;
	char name[32], v[3000];

	for (ponyfs_get_stats(fs, &st); st.meta_chunks < chunks; ponyfs_get_stats(fs, &st)) {
		snprintf(name, sizeof(name), "user.fill%u", xattrs_made);
		memset(v, 'a' + (int)(xattrs_made++ % 26), sizeof(v));
		if (VFS_CALL(fs, setxattr, &c, VFS_ROOT_INO, name, v, sizeof(v), 0)) {
			fprintf(stderr, "crash: meta-grow: setxattr failed\n");
			abort();
		}
	}
}

static void prep_meta_grow(struct vfs *fs)
{
	xattrs_made = 0;
	meta_fill(fs, 1);
}

/* A rename-over, the growth of the database by one more chunk, an fsync. */
static void wl_meta_grow(struct workload *w, uint64_t seed)
{
	op_replace(w, P_A, 7000, 900);
	meta_fill(w->fs, 2);
	op_replace(w, P_B, 5000, 901);
	op_persist(w, P_FSYNC, P_B);
}

/* A file of more extents than a delete takes in one batch (namei.c's
 * DELETE_BATCH, 512): every other block written, so none merge. Not a
 * path of the model: fsck is its oracle, and the model's files must be
 * as they were. */
static void prep_sparse(struct vfs *fs)
{
	uint8_t block[4096];
	uint64_t ino, fh;

	test_fill(block, sizeof(block), 1200);
	if (test_open(fs, "sparse", O_CREAT | O_WRONLY, &ino, &fh))
		abort();
	for (unsigned i = 0; i < 600; i++)
		if (VFS_CALL(fs, write, ino, fh, block, sizeof(block), (off_t)(2 * i) * 4096) !=
		    (ssize_t)sizeof(block))
			abort();
	VFS_CALL(fs, release, ino, fh);
}

/* Deletes: a model file, the sparse one (two batches of extents), a
 * rename over a file with another name, each committed by an fsync. */
static void wl_unlink_batches(struct workload *w, uint64_t seed)
{
	struct vfs_ctx c = test_ctx();

	op_unlink(w, P_B);
	op_persist(w, P_FSYNC, P_DA);
	if (VFS_CALL(w->fs, unlink, &c, VFS_ROOT_INO, "sparse"))
		fail_op(w, "unlink sparse", -1, -1, 0);
	op_link(w, P_A, P_C);
	op_replace(w, P_A, 4000, 1201);
	op_persist(w, P_FSYNC, P_DA);
}

static void wl_barrier(struct workload *w, uint64_t seed)
{
	op_write(w, P_A, 4096, 9000, 500, false);
	op_persist(w, P_BARRIER, P_A);
	w->f[w->nfacts - 1].marker = P_C;
	op_write(w, P_A, 0, 100, 501, false);  /* after the barrier: may be lost */
	op_creat(w, P_C);                       /* the marker: later metadata */
	op_persist(w, P_FSYNC, P_B);
}

int main(void)
{
	bool full = getenv("PONY_CRASH_FULL") != NULL;
	const char *nw = getenv("PONY_CRASH_WORKLOADS");
	struct crash_limits lim = { full ? 12 : 5, full ? 1000 : 12, 42 };
	long generated = nw ? atol(nw) : full ? 400 : 40, workloads = 0, total = 0, n;
	static const struct { const char *name; workload_fn fn; prep_fn prep; } fixed[] = {
		{ "rename-storm", wl_rename_storm },
		{ "rewrite-storm", wl_rewrite_storm },
		{ "fsync-storm", wl_fsync_storm },
		{ "fbarrier", wl_barrier },
		{ "rewrite-commit-midway", wl_rewrite_commit_midway },
		{ "rename-rewrite-midway", wl_rename_rewrite_midway },
		{ "falloc-rename", wl_falloc_rename },
		{ "falloc-rewrite", wl_falloc_rewrite },
		{ "truncate-link", wl_truncate_link },
		{ "meta-grow", wl_meta_grow, prep_meta_grow },
		{ "unlink-batches", wl_unlink_batches, prep_sparse },
	};

	for (int pass = 0; pass < 2; pass++) {
		encrypted = pass == 1;
		for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
			n = run_workload(fixed[i].name, fixed[i].fn, fixed[i].prep, 0, &lim);
			if (n < 0)
				return 1;
			total += n;
			workloads++;
		}
		/* The encrypted pass: a quarter of the generated ones. */
		for (long seed = 1; seed <= (encrypted ? generated / 4 : generated); seed++) {
			n = run_workload("generated", wl_generated, NULL, (uint64_t)seed, &lim);
			if (n < 0)
				return 1;
			total += n;
			workloads++;
		}
		printf("crash: %s%ld workloads, %ld crash states checked so far, all consistent\n",
		       encrypted ? "with encryption: " : "", workloads, total);
	}
	return 0;
}
