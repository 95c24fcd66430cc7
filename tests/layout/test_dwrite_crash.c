/*
 * test_dwrite_crash.c - a direct write under the crash harness
 * (tests/ponyfs/crash): ponyfs on a RAID6 of six members, all six slices
 * of one recorded device, so one log orders every write of the volume,
 * the daemon's and the direct writer's. The writer is played here through
 * the vfs hooks a mount's ioctls call: layout_write for fresh stripes,
 * data and parity (volume_encode_stripe) written to the members, flushed,
 * then layout_commit. Every crash state of the log (before, during and
 * after the commit) must pass fsck with no problem, and the file must be
 * all old or all new, never a mix, a short file or a size without its
 * data; once the commit returned, all new. A second workload is killed
 * before its commit: every state holds the old file, and fsck finds no
 * leaked block (the stripes were recorded nowhere).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ponyfs/crash/crash.h"
#include "../ponyfs/helpers.h"
#include "pony/util.h"
#include "pony/volume.h"

#define NM 6
#define MEMBER (16ull << 20)
#define IMG (NM * MEMBER)
#define OLD_LEN 150000u
#define NEW_LEN 700001u                 /* past a full stripe, not a block multiple */

static uint8_t old_data[OLD_LEN], new_data[NEW_LEN + 4096], got[NEW_LEN + 8192];

/* The six members: slices of one device. */
static void member_slices(struct bdev *disk, struct bdev **devs)
{
	for (unsigned i = 0; i < NM; i++) {
		char name[16];

		snprintf(name, sizeof(name), "m%u", i);
		if (bdev_slice_new(disk, i * MEMBER, MEMBER, false, name, &devs[i]) < 0)
			abort();
	}
}

/* ponyfs on the volume of disk's six slices, assembled (not made). */
static int volume_fs_open(struct bdev *disk, struct test_volume_fs *ret)
{
	struct bdev *devs[NM];
	struct ponyfs_options o = { 0 };
	int r;

	member_slices(disk, devs);
	r = volume_set_assemble(devs, NM, 0, &ret->set, NULL);
	if (r < 0) {
		for (unsigned i = 0; i < NM; i++)
			bdev_free(devs[i]);
		return r;
	}
	r = ponyfs_volume_region(volume_set_volume(ret->set), VOLUME_CLASS_METADATA, &ret->meta);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(ret->set), VOLUME_CLASS_DATA, &ret->data);
	o.volume = volume_set_volume(ret->set);
	return r < 0 ? r : ponyfs_mount(ret->meta, ret->data, &o, &ret->fs);
}

static void volume_fs_close(struct test_volume_fs *v)
{
	vfs_free(v->fs);
	bdev_free(v->meta);
	bdev_free(v->data);
	volume_set_close(v->set);
	memset(v, 0, sizeof(*v));
}

struct run {
	uint64_t commit_pos;            /* log entries when the commit returned; 0: none */
	unsigned olds, news;
	char failure[200];
};

static int check_state(struct bdev *state, uint64_t durable, void *arg)
{
	struct run *run = arg;
	struct test_volume_fs v = { 0 };
	int r = volume_fs_open(state, &v);
	ssize_t n;

	if (r < 0) {
		snprintf(run->failure, sizeof(run->failure), "mount failed: %d (durable %llu)", r,
			 (unsigned long long)durable);
		if (v.set)
			volume_fs_close(&v);
		return -1;
	}
	vfs_free(v.fs);
	v.fs = NULL;
	r = ponyfs_fsck(v.meta, v.data, PONYFS_FSCK_DATA, NULL, NULL);
	if (r != 0) {
		snprintf(run->failure, sizeof(run->failure), "fsck found %d problems (durable %llu)",
			 r, (unsigned long long)durable);
		volume_fs_close(&v);
		return -1;
	}
	r = ponyfs_mount(v.meta, v.data, &(struct ponyfs_options){ .volume = volume_set_volume(v.set) },
			 &v.fs);
	n = r < 0 ? r : test_get(v.fs, "f", got, sizeof(got));
	if (n == OLD_LEN && !memcmp(got, old_data, OLD_LEN) &&
	    !(run->commit_pos && durable >= run->commit_pos)) {
		run->olds++;
	} else if (n == NEW_LEN && !memcmp(got, new_data, NEW_LEN) && run->commit_pos) {
		run->news++;
	} else {
		snprintf(run->failure, sizeof(run->failure), "f holds %zd bytes, neither all old "
			 "(%u) nor all new (%u)%s (durable %llu, commit at %llu)", n, OLD_LEN, NEW_LEN,
			 n == OLD_LEN && !memcmp(got, old_data, OLD_LEN) ? ": old after the commit" : "",
			 (unsigned long long)durable, (unsigned long long)run->commit_pos);
		r = -1;
	}
	volume_fs_close(&v);
	return r < 0 ? -1 : 0;
}

/*
 * The direct writer's part, through the hooks the ioctls call: fresh
 * stripes for [0, NEW_LEN), data and each row's P and Q written to the
 * members (client slices of the same device), flushed; committed unless
 * kill_before.
 */
static void direct_write(struct test_volume_fs *v, struct bdev *disk, bool kill_before,
			 struct bdev *log, uint64_t *ret_commit_pos)
{
	struct vfs_layout_piece pieces[256];
	struct vfs_layout_commit_extent ext[8];
	struct vfs_layout_topology *t = calloc(1, sizeof(*t));
	static uint32_t csums[(NEW_LEN + 4095) / 4096];
	static uint8_t p[64 << 10] __attribute__((aligned(64))), q[64 << 10] __attribute__((aligned(64)));
	struct bdev *cl[NM];
	uint64_t ino, fh, off = 0, bs = 4096;
	uint32_t lease = VFS_LEASE_NEW, next = 0, nc = 0;
	uint8_t *row = util_aligned_alloc(1 << 20);

	if (!t || !row || test_open(v->fs, "f", O_WRONLY, &ino, &fh) < 0 ||
	    VFS_CALL(v->fs, layout_topology, t) < 0)
		abort();
	member_slices(disk, cl);
	while (off < NEW_LEN) {
		struct vfs_layout_write w = { .offset = off, .length = NEW_LEN - off, .lease = lease,
					      .pieces = pieces, .max_pieces = 256 };
		uint64_t n;

		if (VFS_CALL(v->fs, layout_write, ino, fh, &w) < 0 || w.stripe > (1 << 20))
			abort();
		lease = w.lease;
		n = MIN(w.granted, NEW_LEN - off);
		for (uint32_t i = 0; i < w.npieces; i++) {
			const struct vfs_layout_piece *pc = &pieces[i];
			uint64_t at = pc->file_offset - off, rf = at / w.stripe * w.stripe;

			memset(row, 0, w.stripe);
			memcpy(row, new_data + off + rf, MIN(w.stripe, n > rf ? n - rf : 0));
			if (pc->role == VFS_PIECE_P && pc->file_offset == off + rf &&
			    volume_encode_stripe(volume_set_volume(v->set), t->region_offset +
						 w.volume_offset + rf, row, p, q) < 0)
				abort();
			if (pc->role <= VFS_PIECE_COPY)
				bdev_pwrite(cl[pc->member], row + (at - rf), pc->length, pc->member_offset);
			else if (pc->file_offset == off + rf)
				bdev_pwrite(cl[pc->member], pc->role == VFS_PIECE_P ? p : q, pc->length,
					    pc->member_offset);
		}
		ext[next++] = (struct vfs_layout_commit_extent){
			.file_offset = off, .length = DIV_ROUND_UP(n, bs) * bs,
			.volume_offset = w.volume_offset,
		};
		for (uint64_t b = 0; b < DIV_ROUND_UP(n, bs); b++) {
			memset(row, 0, bs);
			memcpy(row, new_data + off + b * bs, MIN(bs, n - b * bs));
			csums[nc++] = util_crc32c(0, row, bs);
		}
		off += n;
	}
	for (unsigned i = 0; i < NM; i++) {
		bdev_flush(cl[i]);
		bdev_free(cl[i]);
	}
	if (!kill_before) {
		int r = VFS_CALL(v->fs, layout_commit, ino, fh, &(struct vfs_layout_commit){
			.lease = lease, .flags = VFS_COMMIT_LAST, .size = NEW_LEN, .extents = ext,
			.nextents = next, .csums = csums, .ncsums = nc });

		if (r < 0) {
			fprintf(stderr, "dwrite crash: commit: %s\n", strerror(-r));
			abort();
		}
		bdev_record_count(log, ret_commit_pos);
	}
	VFS_CALL(v->fs, release, ino, fh);
	free(row);
	free(t);
}

static long run_workload(bool kill_before, const struct crash_limits *lim)
{
	struct test_volume_fs v = { 0 };
	struct bdev *disk, *devs[NM], *log, *rec;
	struct run run = { 0 };
	struct crash_log cl, work;
	uint8_t *image = malloc(IMG);
	uint64_t start, end;
	long states;

	if (!image || bdev_mem_new(IMG, &disk) < 0)
		abort();
	member_slices(disk, devs);
	if (test_volume_fs_new(devs, NM, &v) < 0 || test_put(v.fs, "f", old_data, OLD_LEN) < 0 ||
	    VFS_CALL(v.fs, syncfs) < 0)
		abort();
	volume_fs_close(&v);
	if (bdev_pread(disk, image, IMG, 0) < 0)
		abort();
	if (bdev_mem_new(256u << 20, &log) < 0 || bdev_record_new(disk, log, &rec) < 0 ||
	    volume_fs_open(rec, &v) < 0 || VFS_CALL(v.fs, syncfs) < 0)
		abort();
	/* Assembling and unmounting write every member's superblock: a state
	 * with some of them is the volume's business, not this test's. The
	 * states start after the mount and end before the unmount. */
	bdev_record_count(log, &start);
	direct_write(&v, rec, kill_before, log, &run.commit_pos);
	if (!kill_before && (test_get(v.fs, "f", got, sizeof(got)) != NEW_LEN ||
			     memcmp(got, new_data, NEW_LEN)))
		abort();
	VFS_CALL(v.fs, syncfs);
	bdev_record_count(log, &end);
	volume_fs_close(&v);
	if (crash_log_read(log, &cl) < 0)
		abort();
	/* The image as the mount left it, then the workload's entries alone. */
	for (uint64_t i = 0; i < start; i++)
		if (cl.e[i].flags & 4)
			memset(image + cl.e[i].off, 0, cl.e[i].len);
		else if (!(cl.e[i].flags & 1) && cl.e[i].len)
			memcpy(image + cl.e[i].off, cl.e[i].data, cl.e[i].len);
	work = (struct crash_log){ .e = cl.e + start, .n = end - start };
	run.commit_pos -= run.commit_pos ? start : 0;
	states = crash_enumerate(image, IMG, &work, lim, check_state, &run);
	if (states < 0)
		fprintf(stderr, "dwrite crash (%s): %s\n", kill_before ? "killed before the commit" :
			"committed", run.failure);
	else
		printf("dwrite crash (%s): %ld states, %u all old, %u all new\n",
		       kill_before ? "killed before the commit" : "committed", states, run.olds, run.news);
	/* Both sides of the commit were reached, or the states proved nothing. */
	if (states >= 0 && (!run.olds || (!kill_before && !run.news) || (kill_before && run.news)))
		states = -1;
	crash_log_free(&cl);
	bdev_free(rec);
	free(image);
	return states;
}

int main(void)
{
	struct crash_limits lim = { 5, 12, 42 };

	test_fill(old_data, OLD_LEN, 1);
	test_fill(new_data, NEW_LEN, 2);
	if (run_workload(false, &lim) < 0 || run_workload(true, &lim) < 0)
		return 1;
	return 0;
}
