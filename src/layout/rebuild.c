/*
 * rebuild.c - the blocks a direct read could not take from their member
 * as they are (the member is missing, the read failed, the CRC32C does not
 * match), rebuilt by the volume library, never by math of our own: the
 * client assembles the volume read-only from the member devices the mount
 * names (VOLUME_SET_RDONLY writes nothing, not even a superblock), reads
 * the range through it (a missing member is a degraded read), and for each
 * block still wrong asks for the copy or reconstruction that matches its
 * checksum, member by member left out (volume_read_to_checksum). Nothing
 * is rewritten: repairing the members is the daemon's and scrub's work.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "pony/bdev.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "pony/volume_repair.h"
#include "internal.h"

int layout_set_get(struct pony_layout *l)
{
	struct bdev *devs[VOLUME_MAX_MEMBERS];
	struct volume_set_assembly a;
	unsigned n = 0;
	int r = 0;

	if (l->set)
		return 0;
	for (unsigned i = 0; i < l->nmembers && n < VOLUME_MAX_MEMBERS; i++) {
		const struct layout_member *m = &l->members[i];

		/* The member the daemon failed stays out, as the client's own
		 * reads leave it out: a degraded read does without it. */
		if ((m->fd < 0 && !m->dev) || layout_member_bdev(l, m, &devs[n]) < 0)
			continue;
		n++;
	}
	/*
	 * The mount named these members working when the layout was got: its
	 * word, not their event counts, says they are current (VOLUME_SET_CURRENT;
	 * while the daemon saves a rebuild's checkpoint or a failure, the
	 * superblocks read a moment apart differ, and some would be refused as
	 * stale). A device the assembly cannot use (its superblock unreadable:
	 * a member failing now, before the daemon has failed it; or another
	 * volume's) is left out as a missing one, and the rest assembled
	 * again: the degraded read does without it. Too few members ends it.
	 */
	while (n) {
		a.device = UINT_MAX;    /* an error that names no device */
		r = volume_set_assemble(devs, n, VOLUME_SET_RDONLY | VOLUME_SET_DEGRADED |
					VOLUME_SET_CURRENT, &l->set, &a);
		if (r >= 0 || r == -ENODEV || r == -ENOMEM || a.device >= n)
			break;
		bdev_free(devs[a.device]);
		devs[a.device] = devs[--n];
	}
	if (!n || r < 0) {
		for (unsigned i = 0; i < n; i++)
			bdev_free(devs[i]);
		return n ? r : -ENODEV;
	}
	return 0;
}

int layout_rebuild(struct pony_layout *l, void *dst, uint64_t volume_off, uint64_t nblocks,
		   const uint32_t *csums, bool *searched)
{
	uint64_t bs = l->block_size, off = l->region_offset + volume_off;
	struct volume *v;
	int r;

	if (!(l->flags & PONYFUSE_LAYOUT_ON_VOLUME))
		return -EBADMSG;        /* one image: no redundancy to rebuild from */
	r = layout_set_get(l);
	if (r < 0)
		return r == -ENODEV ? -EBADMSG : r;
	v = volume_set_volume(l->set);
	r = volume_read(v, dst, nblocks * bs, off);
	for (uint64_t i = 0; i < nblocks; i++) {
		uint8_t *b = (uint8_t *)dst + i * bs;

		searched[i] = r < 0 || util_crc32c(0, b, bs) != csums[i];
		if (searched[i]) {
			int m = volume_read_to_checksum(v, b, bs, off + i * bs, csums[i]);

			if (m < 0)
				return m == -EOPNOTSUPP ? -EBADMSG : m;
		}
	}
	return 0;
}

void layout_rebuild_done(struct pony_layout *l)
{
	if (l->set)
		volume_set_close(l->set);
	l->set = NULL;
}
