/*
 * blockmap.h - where a file's blocks live and what became of them, the
 * calls its files share: layouts (layout.c) and their leases (lease.c),
 * direct writes (dwrite.c) and the whole stripes they take (alloc.c), the
 * errors the daemon saw (badblocks.c) and the passive scrub (scrub.c).
 * Included at the end of internal.h: it needs the filesystem's structures.
 */
#ifndef PONYFS_BLOCKMAP_H
#define PONYFS_BLOCKMAP_H

/* Layouts (layout.c): where a file's bytes live, for the vfs layout_map hook. */
int ponyfs_layout_map(struct vfs *v, uint64_t ino, struct vfs_layout *l);
int ponyfs_layout_lease(struct vfs *v, uint32_t lease, unsigned op, uint32_t *ret_state,
			uint64_t *ret_ms);
void ponyfs_layout_recall_watch(struct vfs *v, void (*fn)(void *arg, uint32_t lease), void *arg);

uint64_t ponyfs_layout_members_sig(const struct ponyfs *fs);

/* Layout leases (lease.c). */
int ponyfs_lease_grant_locked(struct ponyfs *fs, struct vfs_layout *l);
void ponyfs_lease_freed_locked(struct ponyfs *fs, uint64_t pblock, uint64_t n);
void ponyfs_lease_unheld(const struct ponyfs *fs, uint64_t *start, uint64_t *end);
/* Ends expired leases, or every lease (revoke: holders see EXPIRED and read again). */
void ponyfs_lease_expire_locked(struct ponyfs *fs, bool all);
void ponyfs_lease_fini(struct ponyfs *fs);
/* A new lease, its deadline set (the one nearest its end revoked past the limit). */
struct ponyfs_lease *ponyfs_lease_new_locked(struct ponyfs *fs);
/* The live lease id, expired ones ended first; NULL: gone. Valid until a lease ends. */
struct ponyfs_lease *ponyfs_lease_find_locked(struct ponyfs *fs, uint32_t id);
/* Its deadline a lease's length from now; the milliseconds that is. */
uint64_t ponyfs_lease_renew(struct ponyfs *fs, struct ponyfs_lease *e);
/* Free blocks [p, p + n) given to write lease e: held until it ends. */
int ponyfs_lease_hold_locked(struct ponyfs *fs, struct ponyfs_lease *e, uint64_t p, uint64_t n);
/* Ends lease e now (a return): what only it held is free to allocate. */
void ponyfs_lease_end_locked(struct ponyfs *fs, struct ponyfs_lease *e);
/* Direct writes (dwrite.c), the vfs hooks. */
int ponyfs_layout_write(struct vfs *v, uint64_t ino, uint64_t fh, struct vfs_layout_write *w);
int ponyfs_layout_commit(struct vfs *v, uint64_t ino, uint64_t fh,
			 const struct vfs_layout_commit *c);
/* Whole free stripes of sblk blocks, held by no lease (alloc.c): found, not taken. */
int ponyfs_alloc_stripes_find_locked(struct ponyfs *fs, uint64_t sblk, uint64_t want,
				     uint64_t *ret_start, uint64_t *ret_n);
/* Takes exactly [p, p + n) from the free table; -ESTALE when not all free. */
int ponyfs_alloc_at_locked(struct ponyfs *fs, uint64_t p, uint64_t n);
/* The member pieces of nblocks data blocks from pblock holding file bytes
 * from file_offset, into out (up to max): how many there are, or -errno. */
int64_t ponyfs_layout_pieces_locked(struct ponyfs *fs, uint64_t region, uint64_t pblock,
				    uint64_t nblocks, uint64_t file_offset,
				    struct vfs_layout_piece *out, size_t max);
int ponyfs_layout_topology(struct vfs *v, struct vfs_layout_topology *ret);
struct volume_segment_info;
/* The first segment of fs->volume of class cls (enum volume_region_class). -ENODEV: none. */
int ponyfs_region_segment(const struct ponyfs *fs, int cls, unsigned *ret_seg,
			  struct volume_segment_info *ret_info);

/* An error the daemon saw (badblocks.c): a region and what became of it. */
struct ponyfs_bad {
	uint32_t source;                /* enum vfs_bad_source */
	bool repaired;
	unsigned member;                /* VFS_NO_MEMBER: not known */
	uint64_t member_offset;         /* device byte on it */
	uint64_t vol_off, len;
	bool row;                       /* a stripe row (or copies) that disagree, no member
					 * to blame: [vol_off, +len) is the row */
	uint64_t count;                 /* times seen */
};
/* Records b once per (source, vol_off): true when new (the caller logs it). */
bool ponyfs_bad_add_locked(struct ponyfs *fs, const struct ponyfs_bad *b);
/* Data block pblock (ino's file block fblk) failed its checksum; m: the
 * member repaired, or -errno (lost). Recorded, and logged once with the paths. */
void ponyfs_bad_block_locked(struct ponyfs *fs, uint32_t source, uint64_t ino, uint64_t fblk,
			     uint64_t pblock, int m);
int ponyfs_badblock(struct vfs *v, uint32_t index, struct vfs_badblock *ret);
/* What b's first byte holds, for a log line: "file /a, /b offset N", "metadata (...)". */
void ponyfs_bad_describe_locked(struct ponyfs *fs, const struct ponyfs_bad *b, char *buf,
				size_t size);
/* The volume byte of data block block (one image: its byte past the metadata region). */
uint64_t ponyfs_volume_byte(const struct ponyfs *fs, uint64_t block);

/* The passive scrub (scrub.c): a thread of the mount, stopped at unmount. */
int ponyfs_scrub(struct vfs *v, struct vfs_scrub *s);
void ponyfs_scrub_stop(struct ponyfs *fs);

#endif
