/*
 * write.c - the direct writer (docs/layout.md "Direct writes"): a file's
 * new bytes go straight to the volume's members, data and parity, and a
 * commit makes them the file's content in one metadata transaction.
 *
 * Each write asks the daemon for fresh whole stripes
 * (PONYFUSE_IOC_LAYOUT_WRITE, under one write lease), writes every piece
 * the daemon names: the data and its copies from the caller's bytes, P
 * and Q from volume_encode_stripe() on the volume assembled read-only
 * from the members (the engine's own parity: no math of ours), and
 * keeps each block's CRC32C. The commit flushes the members it wrote,
 * then sends the extents and checksums (PONYFUSE_IOC_LAYOUT_COMMIT, a
 * page at a time, the last one applying them). A member the daemon
 * failed is not written: the parity covers it, as for any write.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pony/bdev.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "internal.h"

struct pony_layout_writer {
	struct pony_layout *l;          /* the file, its members (O_WRONLY), the volume */
	uint32_t lease;                 /* 0: none yet */
	uint64_t end;                   /* where the next write may start; UINT64_MAX: none */
	struct ponyfuse_layout_commit_extent *ext;
	size_t next, ext_cap;
	uint32_t *csums;
	size_t ncsums, csums_cap;
	bool *dirty;                    /* members written since the last flush */
	struct ponyfuse_layout_write_arg *arg;
	uint8_t *row, *p, *q;           /* one stripe of data, P and Q, 64-byte aligned */
	uint8_t *zero;                  /* a stripe of zeros: the padding past the caller's bytes */
	uint64_t row_cap, chunk;
};

/*
 * The members opened for writing (a failed or missing one stays closed:
 * parity covers it). A member on an NBD server is not written to from
 * here: -EOPNOTSUPP; a path that leads to another device: -EXDEV.
 */
static int members_open_write(struct pony_layout *l)
{
	int r;

	for (unsigned i = 0; i < l->nmembers; i++) {
		struct layout_member *m = &l->members[i];

		m->arg.device[sizeof(m->arg.device) - 1] = 0;
		if (!m->arg.device[0] || m->arg.state != 0)
			continue;
		if (bdev_name_is_nbd(m->arg.device))
			return -EOPNOTSUPP;
		m->fd = open(m->arg.device, O_WRONLY | O_CLOEXEC);
		if (m->fd < 0)
			return -errno;
		/* Never write a device that is not this member (get.c). */
		r = layout_member_verify(m, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

int pony_layout_write_open(int fd, struct pony_layout_writer **ret)
{
	struct pony_layout_writer *w = calloc(1, sizeof(*w));
	struct pony_layout *l = calloc(1, sizeof(*l));
	int r = w && l ? 0 : -ENOMEM;

	if (!r) {
		w->l = l;
		l->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		r = l->fd < 0 ? -errno : layout_members_get(l);
	}
	if (!r) {
		l->region_offset = l->members[0].arg.region_offset;
		r = members_open_write(l);
	}
	if (!r) {
		w->dirty = calloc(l->nmembers, sizeof(*w->dirty));
		w->arg = malloc(sizeof(*w->arg));
		w->chunk = l->members[0].arg.chunk;
		if (!w->dirty || !w->arg)
			r = -ENOMEM;
	}
	/* Not on a volume: ENODEV from the member ioctl; no layouts: ENOTTY. */
	if (r == -ENODEV)
		r = -EOPNOTSUPP;
	if (r) {
		if (!w)
			free(l);
		pony_layout_write_abort(w);
		return r;
	}
	*ret = w;
	return 0;
}

/* Room for one row's data, P and Q, and a stripe of zeros. */
static int row_room(struct pony_layout_writer *w, uint64_t stripe)
{
	if (w->row_cap >= stripe)
		return 0;
	free(w->row);
	free(w->p);
	free(w->q);
	free(w->zero);
	w->row = util_aligned_alloc(stripe);
	w->p = util_aligned_alloc(MAX(w->chunk, 64u));
	w->q = util_aligned_alloc(MAX(w->chunk, 64u));
	w->zero = calloc(1, stripe);
	w->row_cap = w->row && w->p && w->q && w->zero ? stripe : 0;
	return w->row_cap ? 0 : -ENOMEM;
}

static int put(struct pony_layout_writer *w, uint32_t member, const void *buf, uint64_t len,
	       uint64_t off)
{
	int fd;

	if (member >= w->l->nmembers)
		return -EPROTO;
	fd = w->l->members[member].fd;
	if (fd < 0)
		return 0;               /* failed or missing: the parity covers it */
	w->dirty[member] = true;
	for (uint64_t done = 0; done < len;) {
		ssize_t n = pwrite(fd, (const uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (uint64_t)n;
	}
	return 0;
}

/*
 * The bytes of the grant's row at file byte rf: the caller's own when the
 * row is whole in them and aligned for the parity engine, else copied into
 * w->row with zeros past the caller's len.
 */
static const uint8_t *row_data(struct pony_layout_writer *w, const struct ponyfuse_layout_write_arg *a,
			       const uint8_t *buf, uint64_t len, uint64_t rf)
{
	uint64_t at = rf - a->offset, n = at < len ? MIN(len - at, a->stripe) : 0;

	if (n == a->stripe && (uintptr_t)(buf + at) % 64 == 0)
		return buf + at;
	memcpy(w->row, buf + at, n);
	memset(w->row + n, 0, a->stripe - n);
	return w->row;
}

/* A data piece or copy: the caller's bytes, then zeros past them. */
static int put_data(struct pony_layout_writer *w, const struct ponyfuse_layout_piece *pc,
		    const uint8_t *buf, uint64_t len, uint64_t at)
{
	uint64_t n = at < len ? MIN(pc->length, len - at) : 0;
	int r = n ? put(w, pc->member, buf + at, n, pc->member_offset) : 0;

	for (uint64_t done = n; !r && done < pc->length;) {
		uint64_t k = MIN(pc->length - done, w->row_cap);

		r = put(w, pc->member, w->zero, k, pc->member_offset + done);
		done += k;
	}
	return r;
}

/* Writes the grant's pieces: data and copies, and each row's P and Q once,
 * made by the volume library from the row's bytes. */
static int write_grant(struct pony_layout_writer *w, const struct ponyfuse_layout_write_arg *a,
		       const uint8_t *buf, uint64_t len)
{
	bool raid6 = !strcmp(w->l->members[0].arg.level, "raid6");
	int r = row_room(w, a->stripe);

	for (uint32_t i = 0; !r && i < a->npieces; i++) {
		const struct ponyfuse_layout_piece *pc = &a->pieces[i];
		uint64_t at = pc->file_offset - a->offset, rf = a->offset + at / a->stripe * a->stripe;

		if (pc->file_offset < a->offset || at > a->granted || pc->length > a->granted - at)
			return -EPROTO;
		if (pc->role == PONYFUSE_PIECE_DATA || pc->role == PONYFUSE_PIECE_COPY) {
			r = put_data(w, pc, buf, len, at);
			continue;
		}
		if (pc->role != PONYFUSE_PIECE_P && pc->role != PONYFUSE_PIECE_Q)
			return -EPROTO;
		if (pc->file_offset != rf)
			continue;       /* P and Q follow every data piece: the row's first brings them */
		if (pc->length > w->chunk)
			return -EPROTO;
		if (pc->role == PONYFUSE_PIECE_P) {
			r = layout_set_get(w->l);
			if (!r)
				r = volume_encode_stripe(volume_set_volume(w->l->set),
							 w->l->region_offset + a->volume_offset + (rf - a->offset),
							 row_data(w, a, buf, len, rf), w->p,
							 raid6 ? w->q : NULL);
		}
		if (!r)
			r = put(w, pc->member, pc->role == PONYFUSE_PIECE_P ? w->p : w->q, pc->length,
				pc->member_offset);
	}
	return r;
}

/* The grant's written blocks as an extent to commit, each with its CRC32C. */
static int keep_extent(struct pony_layout_writer *w, const struct ponyfuse_layout_write_arg *a,
		       const uint8_t *buf, uint64_t len)
{
	uint64_t bs = a->block_size, nb = DIV_ROUND_UP(len, bs);
	void *p;

	p = util_array_grow(w->ext, &w->ext_cap, w->next, sizeof(*w->ext), 64);
	if (!p)
		return -ENOMEM;
	w->ext = p;
	while (w->csums_cap < w->ncsums + nb) {
		p = util_array_grow(w->csums, &w->csums_cap, w->csums_cap, sizeof(*w->csums), 1024);
		if (!p)
			return -ENOMEM;
		w->csums = p;
	}
	w->ext[w->next++] = (struct ponyfuse_layout_commit_extent){
		.file_offset = a->offset, .length = nb * bs, .volume_offset = a->volume_offset,
	};
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t n = MIN(bs, len - b * bs);
		uint32_t c = util_crc32c(0, buf + b * bs, n);

		/* A short last block is written padded with zeros: so is its CRC. */
		if (n < bs)
			c = util_crc32c(c, w->zero, bs - n);
		w->csums[w->ncsums++] = c;
	}
	return 0;
}

ssize_t pony_layout_write(struct pony_layout_writer *w, const void *buf, uint64_t off, size_t len)
{
	struct ponyfuse_layout_write_arg *a = w->arg;
	size_t done = 0;
	int r = 0;

	if (w->end == UINT64_MAX || off % PONYFS_BLOCK_SIZE || len > SSIZE_MAX)
		return -EINVAL;         /* after a short last block, or not at a block */
	while (!r && done < len) {
		uint64_t n;

		*a = (struct ponyfuse_layout_write_arg){
			.version = PONYFUSE_LAYOUT_VERSION, .offset = off + done, .length = len - done,
			.lease = w->lease ? w->lease : PONYFUSE_LEASE_NEW,
		};
		if (ioctl(w->l->fd, PONYFUSE_IOC_LAYOUT_WRITE, a) < 0)
			return -errno;
		w->lease = a->lease;
		if (!a->granted || !a->stripe || !a->block_size || a->npieces > PONYFUSE_LAYOUT_PIECES ||
		    a->granted % a->stripe)
			return -EPROTO;
		n = MIN(a->granted, (uint64_t)(len - done));
		r = write_grant(w, a, (const uint8_t *)buf + done, n);
		if (!r)
			r = keep_extent(w, a, (const uint8_t *)buf + done, n);
		done += n;
	}
	if (r)
		return r;
	/* The disks start on it now, while the caller brings more: the
	 * commit's flush then waits for less. */
	for (unsigned i = 0; i < w->l->nmembers; i++)
		if (w->dirty[i])
			sync_file_range(w->l->members[i].fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	w->end = len % PONYFS_BLOCK_SIZE ? UINT64_MAX : off + len;
	return (ssize_t)len;
}

/* The members written since the last flush, flushed: data before the metadata. */
static int members_flush(struct pony_layout_writer *w)
{
	for (unsigned i = 0; i < w->l->nmembers; i++)
		if (w->dirty[i] && fdatasync(w->l->members[i].fd) < 0)
			return -errno;
	memset(w->dirty, 0, w->l->nmembers * sizeof(*w->dirty));
	return 0;
}

int pony_layout_commit(struct pony_layout_writer *w, uint64_t size)
{
	struct ponyfuse_layout_commit_arg *a = malloc(sizeof(*a));
	size_t e = 0, c = 0;
	uint64_t skip = 0;              /* blocks of ext[e] sent on earlier pages */
	int r = a ? members_flush(w) : -ENOMEM;

	while (!r) {
		*a = (struct ponyfuse_layout_commit_arg){
			.version = PONYFUSE_LAYOUT_VERSION, .lease = w->lease, .size = size,
		};
		while (e < w->next && a->nextents < PONYFUSE_COMMIT_EXTENTS &&
		       a->ncsums < PONYFUSE_COMMIT_CSUMS) {
			const struct ponyfuse_layout_commit_extent *x = &w->ext[e];
			uint64_t bs = PONYFS_BLOCK_SIZE, nb = x->length / bs - skip;
			uint64_t take = MIN(nb, (uint64_t)(PONYFUSE_COMMIT_CSUMS - a->ncsums));

			a->extents[a->nextents++] = (struct ponyfuse_layout_commit_extent){
				.file_offset = x->file_offset + skip * bs, .length = take * bs,
				.volume_offset = x->volume_offset + skip * bs,
			};
			memcpy(a->csums + a->ncsums, w->csums + c, take * sizeof(*a->csums));
			a->ncsums += (uint32_t)take;
			c += take;
			skip += take;
			if (skip == x->length / bs) {
				e++;
				skip = 0;
			}
		}
		if (e == w->next)
			a->flags = PONYFUSE_COMMIT_LAST;
		/* Nothing written: no lease to commit on; the size alone goes through the mount. */
		if (!w->lease) {
			r = ftruncate(w->l->fd, (off_t)size) < 0 ? -errno : 0;
			break;
		}
		if (ioctl(w->l->fd, PONYFUSE_IOC_LAYOUT_COMMIT, a) < 0)
			r = -errno;
		if (a->flags & PONYFUSE_COMMIT_LAST)
			break;
	}
	if (!r || r == -ESTALE)
		w->lease = 0;           /* applied and ended, or gone */
	free(a);
	pony_layout_write_abort(w);
	return r;
}

void pony_layout_write_abort(struct pony_layout_writer *w)
{
	if (!w)
		return;
	if (w->lease && w->l->fd >= 0) {
		struct ponyfuse_layout_lease_arg a = {
			.version = PONYFUSE_LAYOUT_VERSION, .lease = w->lease,
			.op = PONYFUSE_LEASE_RETURN,
		};

		ioctl(w->l->fd, PONYFUSE_IOC_LAYOUT_LEASE, &a);
	}
	pony_layout_return(w->l);
	free(w->ext);
	free(w->csums);
	free(w->dirty);
	free(w->arg);
	free(w->row);
	free(w->p);
	free(w->q);
	free(w->zero);
	free(w);
}
