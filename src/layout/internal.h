/*
 * internal.h - what the files of libpony-layout share: the layout as got
 * from the mount (extents, checksums and pieces of every page, joined) or
 * from its layout service on another host (remote.c), the members the
 * client opened itself, and the volume it assembles read-only, only when a
 * block has to be rebuilt.
 */
#ifndef PONY_LAYOUT_INTERNAL_H
#define PONY_LAYOUT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pony/fuse.h"
#include "pony/layout.h"

struct acall_ring;
struct bdev;
struct layout_remote;
struct volume_set;

/*
 * A member of the data region as the mount names it, opened by the client:
 * a path by its descriptor (reads on the ring), an NBD URI as a bdev
 * (libnbd's own connections). Neither: missing, failed or unopenable.
 */
struct layout_member {
	int fd;                         /* a path, O_RDONLY; -1: none */
	struct bdev *dev;               /* an NBD URI; NULL: none */
	struct ponyfuse_layout_member_arg arg;
};

/*
 * Invariants between reads: ext[] is in file order and covers [off, end)
 * of the file in whole blocks up to the size; each DATA extent's checksums
 * are csums[first_csum ...] and its pieces pieces[first_piece ...], both
 * indexes into the joined arrays (not the pages'); lease is 0 when none
 * is held.
 */
struct pony_layout {
	int fd;                         /* the file on the mount (a dup: ours); -1: remote */
	struct layout_remote *remote;   /* got over the layout service (fd -1) */
	uint64_t off, end;              /* the range asked, end cut to UINT64_MAX */
	uint64_t size;
	uint32_t flags;                 /* PONYFUSE_LAYOUT_* of the first page */
	uint32_t block_size;
	uint32_t lease;
	/* lease is the layout's it was cloned from (pony_layout_clone): checked
	 * by this one, never returned by it; a layout got again owns its own. */
	bool lease_borrowed;
	struct ponyfuse_layout_extent *ext;
	size_t next, ext_cap;
	uint32_t *csums;
	size_t ncsums, csums_cap;
	struct ponyfuse_layout_piece *pieces;
	size_t npieces, pieces_cap;
	struct layout_member *members;  /* ON_VOLUME only */
	unsigned nmembers;
	uint64_t region_offset;         /* the data region's first byte in the volume */
	struct acall_ring *ring;        /* made on the first read */
	/* The ring's reap word (acall_reap_wait keeps it as long as the ring
	 * lives, and may move it) and the count of reads completed. */
	_Atomic uint32_t reap_word, reads_done;
	struct volume_set *set;         /* assembled on the first rebuild */
	struct pony_layout_stats stats;
	_Atomic unsigned members_refused;       /* opened from several threads at once */
};

/* get.c: the members the mount's ioctl names, into l->members, none opened
 * (fd -1): the direct writer opens them for writing itself. */
int layout_members_get(struct pony_layout *l);
/* rebuild.c: the volume of the members, assembled read-only once (l->set):
 * the engine's geometry and parity for rebuilds and direct writes. */
int layout_set_get(struct pony_layout *l);
/* get.c: 0 when dev (NULL: m's path) carries m's member UUID, else -EXDEV. */
int layout_member_verify(struct layout_member *m, struct bdev *dev);
/* get.c: member m as a bdev of its own (rebuild.c's volume), read-only. */
int layout_member_bdev(const struct pony_layout *l, const struct layout_member *m,
		       struct bdev **ret);
/* get.c: (re)fetches the extents, checksums and pieces of [l->off, l->end). */
int layout_fetch(struct pony_layout *l);
/* get.c: the layout of l's range from its source, then its members opened. */
int layout_get_members(struct pony_layout *l);
/* get.c: the lease's state now: HELD/RECALLED (or no lease: HELD), EXPIRED. */
int layout_lease_status(struct pony_layout *l);

/*
 * remote.c: over the layout service, a page of the file's layout into a
 * (in: offset, length, lease, as the ioctl), a lease's status or return
 * (*ret_state), the members (nmembers args, freed by the caller); -errno
 * as the daemon answered, -ECONNRESET when the service went away.
 */
int layout_remote_page(struct pony_layout *l, struct ponyfuse_layout_arg *a);
int layout_remote_lease(struct pony_layout *l, uint32_t lease, uint32_t op, uint32_t *ret_state);
int layout_remote_members(struct pony_layout *l, struct ponyfuse_layout_member_arg **ret,
			  unsigned *ret_n);
/* remote.c: the URI member m is opened by from here (a key added to nbds://). */
int layout_remote_member_uri(const struct pony_layout *l, const char *device, char **ret);
unsigned layout_remote_member_timeout(const struct pony_layout *l);
void layout_remote_free(struct layout_remote *r);

/*
 * rebuild.c: nblocks blocks at volume_off (in the data region) whose member
 * read failed or whose CRC32C did not match csums[] (or that share a stripe
 * with such blocks), read into dst through the volume, which rebuilds what
 * it cannot read from its redundancy, and checked; searched[i]: block i
 * matched its checksum only with a member left out (bad where it lies).
 * 0, -EBADMSG when no copy or reconstruction matches a checksum (lost, or
 * reused since the layout), -errno.
 */
int layout_rebuild(struct pony_layout *l, void *dst, uint64_t volume_off, uint64_t nblocks,
		   const uint32_t *csums, bool *searched);
void layout_rebuild_done(struct pony_layout *l);

#endif
