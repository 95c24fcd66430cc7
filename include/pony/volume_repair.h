/*
 * include/pony/volume_repair.h - reading around one member and rewriting
 * it, for a layer above that knows better than the volume which copy is
 * bad: ponyfs's block checksums. The volume alone cannot tell a silently
 * corrupt member from a good one (md's scrub only sees that copies or
 * parity disagree); a checksum can, and then asks for the other copies or
 * a reconstruction from parity, and for the bad member to be rewritten.
 */
#ifndef PONY_VOLUME_REPAIR_H
#define PONY_VOLUME_REPAIR_H

#include <stddef.h>
#include <stdint.h>

struct volume;

/* Members of the segment that holds volume byte off (0 when off is past the end). */
unsigned volume_members_at(const struct volume *v, uint64_t off);
/* The index of the segment that holds volume byte off; -ENOENT past the end. */
int volume_seg_at(const struct volume *v, uint64_t off);

/*
 * Reads [off, off+len) (sector-aligned, inside one segment) from member
 * m's own copy, to compare a mirror's copies one by one: -EOPNOTSUPP
 * unless the segment is a mirror (only there does every member hold every
 * byte), -ENODEV when m is not a working member. Nothing is repaired.
 */
int volume_read_member(struct volume *v, unsigned m, void *buf, size_t len, uint64_t off);

/*
 * Reads [off, off+len) (sector-aligned) checking each row against its
 * redundancy first where the level can name a bad member: raid6's P and Q
 * locate one bad block, which is rewritten and logged, as scrub --repair
 * does; other levels read plainly. For data with no checksum of its own
 * (ponyfs's metadata chunks), which a silent error would otherwise reach.
 */
int volume_read_checked(struct volume *v, void *buf, size_t len, uint64_t off);

/*
 * Reads [off, off+len) (sector-aligned, inside one segment) as if member m
 * of that segment were missing: from the other copies, or reconstructed
 * from parity. -EOPNOTSUPP for targets without redundancy, -ENODEV when m
 * is not a working member. The caller keeps writes to the segment out
 * while it runs (they would skip m).
 */
int volume_read_without(struct volume *v, unsigned m, void *buf, size_t len, uint64_t off);

/*
 * Rewrites member m's part of the stripes (or chunks) that hold
 * [off, off+len) from the other members: a rebuild of that range alone.
 */
int volume_rewrite_member(struct volume *v, unsigned m, uint64_t off, uint64_t len);

/*
 * Data at [off, off+len) (sector-aligned, inside one segment) that failed
 * its own checksum: each member is left out of a read in turn until the
 * data's CRC32C is crc; that member's bytes of the range are then
 * rewritten with buf, which holds the good data (only those: the rest of
 * its unit may be good where the others are not). Returns the member repaired; -EOPNOTSUPP
 * without redundancy, -EBADMSG when no copy or reconstruction matches.
 * The volume's bdev face offers it as bdev_repair().
 */
int volume_repair_to_checksum(struct volume *v, void *buf, size_t len, uint64_t off, uint32_t crc);
/*
 * The search of volume_repair_to_checksum() alone, for a reader that must
 * not write (libpony-layout's direct reader): buf holds the data whose
 * CRC32C is crc, read with the returned member left out. Nothing is
 * rewritten. -EOPNOTSUPP without redundancy, -EBADMSG when nothing matches.
 */
int volume_read_to_checksum(struct volume *v, void *buf, size_t len, uint64_t off, uint32_t crc);

#endif
