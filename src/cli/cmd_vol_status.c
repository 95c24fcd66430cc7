/*
 * cmd_vol_status.c - how `pony vol` commands print a volume's state: the
 * status of assemble and status (text or JSON, a state line: clean,
 * degraded, rebuilding, then a table of members and spares; status's exit
 * says it, as mdadm --detail --test does), and the JSON every state changing command (create, fail, add,
 * replace, rebuild) prints with --json, so scripts read one shape: the
 * volume, its members and its spares.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "table.h"
#include "pony/util.h"
#include "vol.h"

const char *vol_state_name(enum volume_member_state s)
{
	return s == VOLUME_MEMBER_OK ? "ok" : s == VOLUME_MEMBER_FAILED ? "failed" : "rebuilding";
}

void vol_state_get(struct vol_handle *h, struct vol_state *st)
{
	struct volume_set_info info;

	*st = (struct vol_state){ .percent = -1 };
	if (h->set) {
		volume_set_info(h->set, &info);
		st->missing = info.failed;
		st->rebuilding = info.rebuilding;
		if (info.rebuilding && volume_size(h->v))
			st->percent = (int)(info.rebuild_done * 100 / volume_size(h->v));
		return;
	}
	/* md raid0 zones and dm tables: segments of their own members; the worst one counts. */
	for (unsigned i = 0; i < volume_segment_count(h->v); i++) {
		unsigned out = 0, rebuilding = 0;

		for (unsigned m = 0; m < volume_member_count(h->v, i); m++) {
			out += volume_member_state(h->v, i, m) == VOLUME_MEMBER_FAILED;
			rebuilding += volume_member_state(h->v, i, m) == VOLUME_MEMBER_REBUILDING;
		}
		st->missing = MAX(st->missing, out);
		st->rebuilding = MAX(st->rebuilding, rebuilding);
	}
}

const char *vol_state_word(const struct vol_state *st)
{
	return st->missing ? "degraded" : st->rebuilding ? "rebuilding" : "clean";
}

/* "clean", "degraded (1 missing)", "rebuilding 42%", "degraded (1 missing), rebuilding 42%". */
static void state_line(const struct vol_state *st, char *buf, size_t size)
{
	int n = 0;

	if (!st->missing && !st->rebuilding) {
		snprintf(buf, size, "clean");
		return;
	}
	if (st->missing)
		n = snprintf(buf, size, "degraded (%u missing)%s", st->missing,
			     st->rebuilding ? ", " : "");
	if (st->rebuilding && st->percent >= 0)
		snprintf(buf + n, size - (size_t)n, "rebuilding %d%%", st->percent);
	else if (st->rebuilding)
		snprintf(buf + n, size - (size_t)n, "rebuilding");
}

int vol_status_exit_open(int r, const struct vol_handle *h)
{
	if (r == CLI_EXIT_USAGE || h->open_error == -ENODEV)
		return VOL_STATUS_FAILED;
	return VOL_STATUS_ERROR;
}

void vol_member_get(struct vol_handle *h, unsigned m, struct volume_set_member *sm)
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
	char uuid[VOLUME_UUID_STRLEN];
	struct vol_state st;

	vol_state_get(h, &st);
	util_json_uint(j, "size", volume_size(h->v));
	util_json_string(j, "state", vol_state_word(&st));
	util_json_uint(j, "missing", st.missing);
	util_json_uint(j, "rebuilding", st.rebuilding);
	if (st.percent >= 0)
		util_json_uint(j, "rebuild_percent", (unsigned)st.percent);
	if (h->set) {
		volume_set_info(h->set, &info);
		volume_uuid_format(info.uuid, uuid);
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

		vol_member_get(h, m, &sm);
		util_json_object_begin(j, NULL);
		util_json_uint(j, "index", m);
		util_json_string(j, "device", sm.device ? sm.device : "");
		if (h->set) {
			volume_uuid_format(sm.uuid, uuid);
			util_json_string(j, "uuid", uuid);
			util_json_uint(j, "events", sm.events);
			util_json_bool(j, "stale", sm.stale);
			util_json_bool(j, "truncated", sm.truncated);
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

/*
 * The members and spares for people: MEMBER (its index, or spareN), STATE,
 * DEVICE, BADBLOCKS (ranges in its log) and NOTE (refused, missing: then
 * the member UUID the volume expects, so the right device can be found).
 */
static void members_table(struct vol_handle *h)
{
	static const char *const cols[] = { "MEMBER", "STATE", "DEVICE", "BADBLOCKS", "NOTE" };
	struct cli_table *t = cli_table_new("members", false);
	char uuid[VOLUME_UUID_STRLEN];

	for (size_t c = 0; c < ARRAY_SIZE(cols); c++)
		cli_table_column(t, cols[c], c == 3 ? CLI_COL_RIGHT : 0);
	for (unsigned m = 0; m < volume_member_count(h->v, 0); m++) {
		struct cli_table_line *ln = cli_table_line(t, NULL);
		struct volume_set_member sm;

		vol_member_get(h, m, &sm);
		volume_uuid_format(sm.uuid, uuid);
		cli_table_set_u64(ln, 0, m);
		cli_table_set(ln, 1, "%s", vol_state_name(sm.state));
		cli_table_set(ln, 2, "%s", sm.device ? sm.device : "-");
		cli_table_set_u64(ln, 3, sm.badblocks);
		if (sm.stale || sm.truncated)
			cli_table_set(ln, 4, "%s, refused", sm.stale ? "stale" : "truncated");
		else if (h->set && !sm.device)
			cli_table_set(ln, 4, "missing: uuid %s", uuid);
	}
	for (unsigned i = 0; h->set && i < volume_set_spare_count(h->set); i++) {
		struct cli_table_line *ln = cli_table_line(t, NULL);
		const char *d = volume_set_spare_device(h->set, i);

		cli_table_set(ln, 0, "spare%u", i);
		cli_table_set(ln, 1, "idle");
		cli_table_set(ln, 2, "%s", d ? d : "-");
		if (!d)
			cli_table_set(ln, 4, "missing");
	}
	cli_table_print(t);
}

static void status_text(struct vol_handle *h)
{
	struct volume_set_info info;
	char uuid[VOLUME_UUID_STRLEN], sz[16], line[96];
	struct vol_state st;

	vol_state_get(h, &st);
	state_line(&st, line, sizeof(line));
	printf("state: %s\n", line);
	printf("size: %s (%llu bytes)\n", util_format_size(volume_size(h->v), sz, sizeof(sz)),
	       (unsigned long long)volume_size(h->v));
	if (h->set) {
		volume_set_info(h->set, &info);
		volume_uuid_format(info.uuid, uuid);
		printf("name: %s\nuuid: %s\nevents: %llu\n", info.name, uuid,
		       (unsigned long long)info.events);
		if (info.rebuild_off != UINT64_MAX)
			printf("rebuild checkpoint: region %u, %llu bytes\n", info.rebuild_seg,
			       (unsigned long long)info.rebuild_off);
	}
	for (unsigned i = 0; i < volume_segment_count(h->v); i++)
		printf("region %u: full stripe %llu bytes\n", i,
		       (unsigned long long)volume_full_stripe(h->v, i));
	members_table(h);
}

int vol_print_status(struct vol_handle *h, bool json)
{
	struct util_json j;
	struct vol_state st;

	vol_state_get(h, &st);
	if (!json) {
		status_text(h);
	} else {
		util_json_init(&j, stdout);
		util_json_object_begin(&j, NULL);
		vol_json_state(&j, h);
		util_json_object_end(&j);
		util_json_end(&j);
	}
	return st.missing || st.rebuilding ? VOL_STATUS_DEGRADED : VOL_STATUS_CLEAN;
}
