/*
 * record.c - a bdev that logs every write, discard and flush, in order, in
 * the format of Linux's dm-log-writes, so a crash test can rebuild the disk
 * as it was after any prefix of the writes (and fstests' replay-log can read
 * the log). Sector size 512: the superblock in sector 0, then each entry is
 * a 512-byte header followed by its data sectors.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pony/bdev.h"
#include "pony/util.h"

#define LOG_MAGIC 0x6a736677736872ull   /* dm-log-writes' WRITE_LOG_MAGIC */
#define LOG_VERSION 1
#define LOG_FLUSH_FLAG (1u << 0)
#define LOG_DISCARD_FLAG (1u << 2)
#define LOG_MARK_FLAG (1u << 3)
#define LOG_SECTOR 512

struct log_super_disk {
	le64 magic;
	le64 version;
	le64 nr_entries;
	le32 sectorsize;
};

struct log_entry_disk {
	le64 sector;                    /* in 512-byte sectors of the device */
	le64 nr_sectors;
	le64 flags;
	le64 data_len;                  /* marks: the name's length, after the header */
};

/* next and entries are protected by lock, which also orders the log. */
struct bdev_record {
	struct bdev b;
	struct bdev *lower, *log;
	pthread_mutex_t lock;
	uint64_t next;                  /* byte offset of the next entry in the log */
	uint64_t entries;
};

static int record_super_locked(struct bdev_record *r)
{
	uint8_t sec[LOG_SECTOR] = { 0 };
	struct log_super_disk s = {
		.magic = cpu_to_le64(LOG_MAGIC),
		.version = cpu_to_le64(LOG_VERSION),
		.nr_entries = cpu_to_le64(r->entries),
		.sectorsize = cpu_to_le32(LOG_SECTOR),
	};

	memcpy(sec, &s, sizeof(s));
	return bdev_pwrite(r->log, sec, sizeof(sec), 0);
}

/* Appends one entry (header, then data of len bytes) and updates the super. */
static int record_append(struct bdev_record *r, uint64_t flags, uint64_t off, uint64_t nsec,
			 const void *data, size_t len, const char *mark)
{
	uint8_t hdr[LOG_SECTOR] = { 0 };
	struct log_entry_disk e = {
		.sector = cpu_to_le64(off / LOG_SECTOR),
		.nr_sectors = cpu_to_le64(nsec),
		.flags = cpu_to_le64(flags),
		.data_len = cpu_to_le64(mark ? strlen(mark) : 0),
	};
	int ret;

	memcpy(hdr, &e, sizeof(e));
	if (mark)
		memcpy(hdr + sizeof(e), mark, MIN(strlen(mark), LOG_SECTOR - sizeof(e)));
	pthread_mutex_lock(&r->lock);
	ret = bdev_pwrite(r->log, hdr, sizeof(hdr), r->next);
	if (ret >= 0 && len)
		ret = bdev_pwrite(r->log, data, len, r->next + LOG_SECTOR);
	if (ret >= 0) {
		r->next += LOG_SECTOR + ROUND_UP(len, LOG_SECTOR);
		r->entries++;
		ret = record_super_locked(r);
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

static int record_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return bdev_pread(((struct bdev_record *)b)->lower, buf, len, off);
}

static int record_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	struct bdev_record *r = (struct bdev_record *)b;
	int ret;

	if (off % LOG_SECTOR || len % LOG_SECTOR)
		return -EINVAL;         /* the log format counts whole sectors */
	ret = bdev_pwrite(r->lower, buf, len, off);
	return ret < 0 ? ret : record_append(r, 0, off, len / LOG_SECTOR, buf, len, NULL);
}

static int record_flush(struct bdev *b)
{
	struct bdev_record *r = (struct bdev_record *)b;
	int ret = bdev_flush(r->lower);

	if (ret >= 0)
		ret = record_append(r, LOG_FLUSH_FLAG, 0, 0, NULL, 0, NULL);
	return ret < 0 ? ret : bdev_flush(r->log);
}

static int record_discard(struct bdev *b, uint64_t off, uint64_t len)
{
	struct bdev_record *r = (struct bdev_record *)b;
	int ret;

	if (off % LOG_SECTOR || len % LOG_SECTOR)
		return -EINVAL;
	ret = bdev_discard(r->lower, off, len);
	return ret < 0 ? ret : record_append(r, LOG_DISCARD_FLAG, off, len / LOG_SECTOR,
					     NULL, 0, NULL);
}

static void record_free(struct bdev *b)
{
	struct bdev_record *r = (struct bdev_record *)b;

	bdev_free(r->lower);
	bdev_free(r->log);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static const struct bdev_ops record_ops = {
	.name = "record",
	.pread = record_pread,
	.pwrite = record_pwrite,
	.flush = record_flush,
	.discard = record_discard,
	.free = record_free,
};

int bdev_record_new(struct bdev *lower, struct bdev *log, struct bdev **ret)
{
	struct bdev_record *r;
	int e;

	if (log->size < 2 * LOG_SECTOR)
		return -ENOSPC;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->b.ops = &record_ops;
	r->b.size = lower->size;
	r->b.block_size = lower->block_size;
	snprintf(r->b.name, sizeof(r->b.name), "record:%.50s", lower->name);
	r->lower = lower;
	r->log = log;
	r->next = LOG_SECTOR;
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_lock(&r->lock);
	e = record_super_locked(r);
	pthread_mutex_unlock(&r->lock);
	if (e < 0) {
		pthread_mutex_destroy(&r->lock);
		free(r);
		return e;
	}
	*ret = &r->b;
	return 0;
}

int bdev_record_mark(struct bdev *b, const char *mark)
{
	if (b->ops != &record_ops)
		return -EINVAL;
	return record_append((struct bdev_record *)b, LOG_MARK_FLAG, 0, 0, NULL, 0, mark);
}

int bdev_record_count(struct bdev *log, uint64_t *ret_n)
{
	struct log_super_disk s;
	int r = bdev_pread(log, &s, sizeof(s), 0);

	if (r < 0)
		return r;
	if (le64_to_cpu(s.magic) != LOG_MAGIC || le64_to_cpu(s.version) != LOG_VERSION ||
	    le32_to_cpu(s.sectorsize) != LOG_SECTOR)
		return -EBADMSG;
	*ret_n = le64_to_cpu(s.nr_entries);
	return 0;
}

int bdev_record_replay(struct bdev *log, struct bdev *target, uint64_t n)
{
	_cleanup_(freep) uint8_t *buf = NULL;
	uint64_t total, pos = LOG_SECTOR;
	int r = bdev_record_count(log, &total);

	if (r < 0)
		return r;
	if (n > total)
		return -EINVAL;
	for (uint64_t i = 0; i < n; i++) {
		struct log_entry_disk e;
		uint64_t flags, nsec, off;

		r = bdev_pread(log, &e, sizeof(e), pos);
		if (r < 0)
			return r;
		flags = le64_to_cpu(e.flags);
		nsec = le64_to_cpu(e.nr_sectors);
		off = le64_to_cpu(e.sector) * LOG_SECTOR;
		pos += LOG_SECTOR;
		if (flags & (LOG_FLUSH_FLAG | LOG_MARK_FLAG))
			continue;
		if (nsec > target->size / LOG_SECTOR)
			return -EBADMSG;
		if (flags & LOG_DISCARD_FLAG) {
			r = bdev_discard(target, off, nsec * LOG_SECTOR);
			if (r < 0 && r != -EOPNOTSUPP)
				return r;
			continue;
		}
		free(buf);
		buf = malloc(nsec * LOG_SECTOR);
		if (!buf)
			return -ENOMEM;
		r = bdev_pread(log, buf, nsec * LOG_SECTOR, pos);
		if (r >= 0)
			r = bdev_pwrite(target, buf, nsec * LOG_SECTOR, off);
		if (r < 0)
			return r;
		pos += nsec * LOG_SECTOR;
	}
	return 0;
}
