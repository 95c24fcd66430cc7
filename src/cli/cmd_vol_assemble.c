/*
 * cmd_vol_assemble.c - what people are told when a pony volume is
 * assembled, by `pony vol`, `pony mount` and `pony fsck` alike: each member
 * left out (missing, stale, truncated) by index and name or UUID, that a
 * volume runs degraded, and why one did not start: members absent without
 * --degraded (btrfs's rule: a degraded start is asked for, never silent),
 * fewer members than the level needs, or a device that is not a member.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pony/volume.h"
#include "vol.h"

/* "UUID (NAME)": how these messages name a volume. */
static const char *volume_name(const struct volume_set_assembly *a, char *buf, size_t size)
{
	char uuid[VOLUME_UUID_STRLEN];

	volume_uuid_format(a->uuid, uuid);
	snprintf(buf, size, "%s (%s)", uuid, a->name);
	return buf;
}

void vol_print_absent(const struct volume_set_assembly *a)
{
	for (unsigned m = 0; a->known && m < a->nmembers; m++) {
		const struct volume_set_member *sm = &a->members[m];
		char uuid[VOLUME_UUID_STRLEN];

		volume_uuid_format(sm->uuid, uuid);
		if (sm->stale)
			fprintf(stderr, "pony: refusing stale member %u (%s): events %llu, the volume is "
				"at %llu; left out until rebuilt ('pony vol add -d %s' with the other "
				"members)\n", m, sm->device, (unsigned long long)sm->events,
				(unsigned long long)a->events, sm->device);
		else if (sm->truncated)
			fprintf(stderr, "pony: refusing member %u (%s): truncated to %llu bytes, it needs "
				"%llu; left out\n", m, sm->device, (unsigned long long)sm->size,
				(unsigned long long)sm->need);
		else if (!sm->device)
			fprintf(stderr, "pony: member %u is missing (member UUID %s)\n", m, uuid);
		else if (sm->state == VOLUME_MEMBER_FAILED)
			fprintf(stderr, "pony: member %u (%s) is failed\n", m, sm->device);
	}
}

void vol_print_degraded(const struct volume_set_assembly *a, bool rdonly)
{
	char name[128];

	if (a->present < a->nmembers)
		fprintf(stderr, "pony: volume %s runs degraded%s: %u of %u members\n",
			volume_name(a, name, sizeof(name)), rdonly ? " (read-only)" : "", a->present,
			a->nmembers);
}

int vol_assembly_error(int r, const struct volume_set_assembly *a, char *const *paths,
		       unsigned n)
{
	const char *p = a->device < n ? paths[a->device] : "?";
	char name[128];

	if ((r == -ENXIO || r == -ENODEV) && a->known) {
		vol_print_absent(a);
		volume_name(a, name, sizeof(name));
		if (r == -ENODEV)
			return cli_error("volume %s: %u of %u members present, %s needs at least %u", name,
					 a->present, a->nmembers, volume_target_name(a->needed_type),
					 a->needed);
		return cli_error("volume %s: %u of %u members present; not started without --degraded "
				 "(writes then leave the absent members stale until 'pony vol add' "
				 "rebuilds them)", name, a->present, a->nmembers);
	}
	switch (r) {
	case -ENODATA: return cli_error("%s: not a pony volume member (no superblock)", p);
	case -EBADMSG: return cli_error("%s: both superblocks are corrupt", p);
	case -EPROTONOSUPPORT: return cli_error("%s: superblock version not supported", p);
	case -EXDEV: return cli_error("%s: a member of another pony volume", p);
	case -EEXIST: return cli_error("%s: two devices claim the same member index", p);
	default: return cli_error("cannot assemble the volume: %s", strerror(-r));
	}
}
