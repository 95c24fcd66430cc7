/*
 * bdev.c - the calls every backend shares: range checks, so backends see
 * only valid requests, and the synchronous completion of bdev_submit() for
 * backends without an asynchronous path, the loan of a memory
 * backend's storage (bdev_map), and bdev_open(), which turns the name a
 * person gave (a path or an NBD URI) into the right backend.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pony/bdev.h"

static int bdev_check(const struct bdev *b, uint64_t off, uint64_t len)
{
	if (off > b->size || len > b->size - off)
		return -EINVAL;
	return 0;
}

int bdev_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	int r = bdev_check(b, off, len);

	return r < 0 ? r : len ? b->ops->pread(b, buf, len, off) : 0;
}

int bdev_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	int r = bdev_check(b, off, len);

	return r < 0 ? r : len ? b->ops->pwrite(b, buf, len, off) : 0;
}

int bdev_pwrite_direct(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	int r = bdev_check(b, off, len);

	if (r < 0 || !len)
		return r;
	return b->ops->pwrite_direct ? b->ops->pwrite_direct(b, buf, len, off)
				     : b->ops->pwrite(b, buf, len, off);
}

int bdev_pread_direct(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	int r = bdev_check(b, off, len);

	if (r < 0 || !len)
		return r;
	return b->ops->pread_direct ? b->ops->pread_direct(b, buf, len, off)
				    : b->ops->pread(b, buf, len, off);
}

int bdev_advise(struct bdev *b, uint64_t off, uint64_t len, enum bdev_advice advice)
{
	int r = bdev_check(b, off, len);

	if (r < 0 || !len || !b->ops->advise)
		return r;
	return b->ops->advise(b, off, len, advice);
}

int bdev_read_checked(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	int r = bdev_check(b, off, len);

	if (r < 0 || !len)
		return r;
	return b->ops->read_checked ? b->ops->read_checked(b, buf, len, off)
				    : b->ops->pread(b, buf, len, off);
}

int bdev_repair(struct bdev *b, void *buf, size_t len, uint64_t off, uint32_t crc)
{
	int r = bdev_check(b, off, len);

	if (r < 0)
		return r;
	return b->ops->repair ? b->ops->repair(b, buf, len, off, crc) : -EOPNOTSUPP;
}

int bdev_flush(struct bdev *b)
{
	return b->ops->flush ? b->ops->flush(b) : 0;
}

int bdev_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	int r = bdev_check(b, off, len);

	if (r < 0)
		return r;
	return b->ops->discard ? b->ops->discard(b, off, len) : -EOPNOTSUPP;
}

int bdev_map(struct bdev *b, uint64_t off, size_t len, void **ret_ptr)
{
	int r = bdev_check(b, off, len);

	if (r < 0)
		return r;
	return b->ops->map ? b->ops->map(b, off, len, ret_ptr) : -EOPNOTSUPP;
}

void bdev_free(struct bdev *b)
{
	if (b)
		b->ops->free(b);
}

void bdev_submit(struct bdev *b, struct bdev_io *io)
{
	if (b->ops->submit) {
		uint64_t len = io->op == BDEV_READ || io->op == BDEV_WRITE || io->op == BDEV_DISCARD ?
			       io->len : 0;

		if (bdev_check(b, io->off, len) < 0) {
			io->result = -EINVAL;
			if (io->done)
				io->done(io);
			return;
		}
		b->ops->submit(b, io);
		return;
	}
	switch (io->op) {
	case BDEV_READ:
		io->result = bdev_pread(b, io->buf, io->len, io->off);
		break;
	case BDEV_WRITE:
		io->result = bdev_pwrite(b, io->buf, io->len, io->off);
		break;
	case BDEV_FLUSH:
		io->result = bdev_flush(b);
		break;
	case BDEV_DISCARD:
		io->result = bdev_discard(b, io->off, io->len);
		break;
	default:
		io->result = -EINVAL;
	}
	if (io->done)
		io->done(io);
}

int bdev_open(const char *name, const struct bdev_open_params *p, struct bdev **ret)
{
	int r;

	if (bdev_name_is_nbd(name))
		return bdev_nbd_open(name, p, ret);
	r = bdev_file_open_ring(name, p->flags, p->ring, ret);
	if (r < 0 && p->why && p->why_size)
		snprintf(p->why, p->why_size, "%s", strerror(-r));
	return r;
}
