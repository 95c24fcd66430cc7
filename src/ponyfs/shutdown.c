/*
 * shutdown.c - a power cut on purpose (XFS_IOC_GOINGDOWN, fstests' godown).
 * A mounted ponyfs reaches its regions through two gates: bdevs that pass
 * every I/O to the region until they are cut, and fail every one with -EIO
 * afterwards, without touching the region. Shutdown cuts both under the
 * filesystem lock (so no commit is half issued by this process's own hand:
 * whatever was written stays, as after a power cut; godown -f commits what
 * was written first, as XFS flushes its log) and marks the filesystem
 * so that every later call fails with -EIO. Unmount's writeback, commit and
 * SQLite's closing checkpoint then stop at the gates, and the next mount
 * finds the last committed state, recovered from the WAL as after a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

struct gate {
	struct bdev b;
	struct bdev *lower;             /* not ours */
	bool cut;                       /* atomic: read by every I/O */
};

static bool gate_is_cut(struct bdev *b)
{
	return __atomic_load_n(&((struct gate *)b)->cut, __ATOMIC_ACQUIRE);
}

static int gate_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return gate_is_cut(b) ? -EIO : bdev_pread(((struct gate *)b)->lower, buf, len, off);
}

static int gate_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return gate_is_cut(b) ? -EIO : bdev_pwrite(((struct gate *)b)->lower, buf, len, off);
}

static int gate_pwrite_direct(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return gate_is_cut(b) ? -EIO : bdev_pwrite_direct(((struct gate *)b)->lower, buf, len, off);
}

static int gate_pread_direct(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return gate_is_cut(b) ? -EIO : bdev_pread_direct(((struct gate *)b)->lower, buf, len, off);
}

static int gate_advise(struct bdev *b, uint64_t off, uint64_t len, enum bdev_advice advice)
{
	return gate_is_cut(b) ? -EIO : bdev_advise(((struct gate *)b)->lower, off, len, advice);
}

static int gate_flush(struct bdev *b)
{
	return gate_is_cut(b) ? -EIO : bdev_flush(((struct gate *)b)->lower);
}

static int gate_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	return gate_is_cut(b) ? -EIO : bdev_discard(((struct gate *)b)->lower, off, len);
}

static void gate_submit(struct bdev *b, struct bdev_io *io)
{
	if (!gate_is_cut(b)) {
		bdev_submit(((struct gate *)b)->lower, io);
		return;
	}
	io->result = -EIO;
	if (io->done)
		io->done(io);
}

static int gate_read_checked(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return gate_is_cut(b) ? -EIO : bdev_read_checked(((struct gate *)b)->lower, buf, len, off);
}

static int gate_repair(struct bdev *b, void *buf, size_t len, uint64_t off, uint32_t crc)
{
	return gate_is_cut(b) ? -EIO : bdev_repair(((struct gate *)b)->lower, buf, len, off, crc);
}

static void gate_free(struct bdev *b)
{
	free(b);
}

static const struct bdev_ops gate_ops = {
	.name = "gate",
	.pread = gate_pread,
	.pwrite = gate_pwrite,
	.flush = gate_flush,
	.discard = gate_discard,
	.free = gate_free,
	.submit = gate_submit,
	.read_checked = gate_read_checked,
	.repair = gate_repair,
	.pwrite_direct = gate_pwrite_direct,
	.advise = gate_advise,
	.pread_direct = gate_pread_direct,
};

static int gate_new(struct bdev *lower, struct bdev **ret)
{
	struct gate *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->b.ops = &gate_ops;
	g->b.size = lower->size;
	g->b.block_size = lower->block_size;
	snprintf(g->b.name, sizeof(g->b.name), "%s", lower->name);
	g->lower = lower;
	*ret = &g->b;
	return 0;
}

int ponyfs_gates_open(struct ponyfs *fs, struct bdev *meta, struct bdev *data)
{
	int r = gate_new(meta, &fs->gates[0]);

	if (r >= 0)
		r = gate_new(data, &fs->gates[1]);
	if (r < 0)
		return r;
	fs->meta = fs->gates[0];
	fs->data = fs->gates[1];
	return 0;
}

void ponyfs_gates_close(struct ponyfs *fs)
{
	bdev_free(fs->gates[0]);
	bdev_free(fs->gates[1]);
}

int ponyfs_shutdown(struct vfs *v, unsigned flags)
{
	struct ponyfs *fs = ponyfs_of(v);

	pthread_mutex_lock(&fs->lock);
	/* godown -f: what was written commits first (errors change nothing:
	 * the power goes either way). */
	if ((flags & VFS_SHUTDOWN_FLUSH) && !fs->shut_down && !fs->read_only &&
	    ponyfs_writeback_all_locked(fs, false) >= 0)
		ponyfs_commit_locked(fs);
	for (size_t i = 0; i < ARRAY_SIZE(fs->gates); i++)
		if (fs->gates[i])
			__atomic_store_n(&((struct gate *)fs->gates[i])->cut, true, __ATOMIC_RELEASE);
	fs->shut_down = true;
	fs->broken = -EIO;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}
