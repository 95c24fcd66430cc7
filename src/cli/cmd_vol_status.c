/*
 * cmd_vol_status.c - how `pony vol` commands print a volume's state: the
 * status of assemble and status (text or JSON), and the JSON every state
 * changing command (create, fail, add, replace, rebuild) prints with --json,
 * so scripts read one shape: the volume, its members and its spares.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pony/util.h"
#include "vol.h"

const char *vol_state_name(enum volume_member_state s)
{
	return s == VOLUME_MEMBER_OK ? "ok" : s == VOLUME_MEMBER_FAILED ? "failed" : "rebuilding";
}

void vol_format_uuid(char *buf, const uint8_t *u)
{
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*buf++ = '-';
		buf += sprintf(buf, "%02x", u[i]);
	}
}

/* Member m as the set (or the bare volume) knows it. */
static void member_get(struct vol_handle *h, unsigned m, struct volume_set_member *sm)
{
	*sm = (struct volume_set_member){ .state = volume_member_state(h->v, 0, m),
					  .device = volume_member_device(h->v, 0, m) };
	if (h->set)
		volume_set_member(h->set, m, sm);
}

/* The fields of a volume's state, into an open JSON object. */
void vol_json_state(struct util_json *j, struct vol_handle *h)
{
	struct volume_set_info info;
	char uuid[40];

	util_json_uint(j, "size", volume_size(h->v));
	if (h->set) {
		volume_set_info(h->set, &info);
		vol_format_uuid(uuid, info.uuid);
		util_json_string(j, "name", info.name);
		util_json_string(j, "uuid", uuid);
		util_json_uint(j, "events", info.events);
		if (info.rebuild_off != UINT64_MAX)
			util_json_uint(j, "rebuild_checkpoint", info.rebuild_off);
	}
	util_json_array_begin(j, "regions");
	for (unsigned i = 0; i < volume_segment_count(h->v); i++) {
		util_json_object_begin(j, NULL);
		util_json_uint(j, "full_stripe", volume_full_stripe(h->v, i));
		util_json_object_end(j);
	}
	util_json_array_end(j);
	util_json_array_begin(j, "members");
	for (unsigned m = 0; m < volume_member_count(h->v, 0); m++) {
		struct volume_set_member sm;

		member_get(h, m, &sm);
		util_json_object_begin(j, NULL);
		util_json_uint(j, "index", m);
		util_json_string(j, "device", sm.device ? sm.device : "");
		if (h->set) {
			util_json_uint(j, "events", sm.events);
			util_json_bool(j, "stale", sm.stale);
			util_json_uint(j, "badblocks", sm.badblocks);
		}
		util_json_string(j, "state", vol_state_name(sm.state));
		util_json_object_end(j);
	}
	util_json_array_end(j);
	util_json_array_begin(j, "spares");
	for (unsigned i = 0; h->set && i < volume_set_spare_count(h->set); i++) {
		const char *d = volume_set_spare_device(h->set, i);

		util_json_string(j, NULL, d ? d : "");
	}
	util_json_array_end(j);
}

void vol_json_report(struct vol_handle *h, const char *action, int member, const char *device)
{
	struct util_json j;

	util_json_init(&j, stdout);
	util_json_object_begin(&j, NULL);
	util_json_string(&j, "action", action);
	if (member >= 0)
		util_json_uint(&j, "member", (unsigned)member);
	if (device)
		util_json_string(&j, "device", device);
	vol_json_state(&j, h);
	util_json_object_end(&j);
	util_json_end(&j);
}

static void status_text(struct vol_handle *h)
{
	struct volume_set_info info;
	char uuid[40], sz[16];

	printf("size: %s (%llu bytes)\n", util_format_size(volume_size(h->v), sz, sizeof(sz)),
	       (unsigned long long)volume_size(h->v));
	if (h->set) {
		volume_set_info(h->set, &info);
		vol_format_uuid(uuid, info.uuid);
		printf("name: %s\nuuid: %s\nevents: %llu\n", info.name, uuid,
		       (unsigned long long)info.events);
		if (info.rebuild_off != UINT64_MAX)
			printf("rebuild checkpoint: region %u, %llu bytes\n", info.rebuild_seg,
			       (unsigned long long)info.rebuild_off);
	}
	for (unsigned i = 0; i < volume_segment_count(h->v); i++)
		printf("region %u: full stripe %llu bytes\n", i,
		       (unsigned long long)volume_full_stripe(h->v, i));
	for (unsigned m = 0; m < volume_member_count(h->v, 0); m++) {
		struct volume_set_member sm;

		member_get(h, m, &sm);
		printf("member %u: %-10s %s%s", m, vol_state_name(sm.state),
		       sm.device ? sm.device : "-", sm.stale ? " (stale, refused)" : "");
		if (sm.badblocks)
			printf(" %u bad ranges", sm.badblocks);
		putchar('\n');
	}
	for (unsigned i = 0; h->set && i < volume_set_spare_count(h->set); i++) {
		const char *d = volume_set_spare_device(h->set, i);

		printf("spare %u: idle      %s\n", i, d ? d : "- (missing)");
	}
}

void vol_print_status(struct vol_handle *h, bool json)
{
	struct util_json j;

	if (!json) {
		status_text(h);
		return;
	}
	util_json_init(&j, stdout);
	util_json_object_begin(&j, NULL);
	vol_json_state(&j, h);
	util_json_object_end(&j);
	util_json_end(&j);
}
