/*
 * cmd_vol_status.c - how `pony vol` commands print a volume's state: the
 * status of assemble and status (status's exit says it, as mdadm --detail
 * --test does), and what every state changing command (create, fail, add,
 * replace, rebuild) prints with --json, so scripts read one shape. All of
 * it through table.c (libsmartcols): a record of the volume (state, size,
 * name, uuid...), a table of its regions, one of its members (and spares);
 * --json is one object, {"volume": [{...}], "regions": [...], "members":
 * [...], "spares": [...]}.
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

/*
 * The volume as one record: what a state change did (action, member,
 * device: NULL for status), then its state, size and identity. state is
 * the word (clean, degraded, rebuilding); missing and rebuilding count the
 * members out and being rebuilt.
 */
static struct cli_table *volume_record(struct vol_handle *h, bool json, const char *action,
				       int member, const char *device)
{
	struct cli_record *r = cli_record_new("volume", json);
	struct volume_set_info info;
	char uuid[VOLUME_UUID_STRLEN];
	struct vol_state st;

	vol_state_get(h, &st);
	if (action)
		cli_record_set(r, "ACTION", 0, "%s", action);
	if (member >= 0)
		cli_record_set_u64(r, "MEMBER", (unsigned)member);
	if (device)
		cli_record_set(r, "DEVICE", 0, "%s", device);
	cli_record_set(r, "STATE", 0, "%s", vol_state_word(&st));
	cli_record_set_u64(r, "SIZE", volume_size(h->v));
	cli_record_set_u64(r, "MISSING", st.missing);
	cli_record_set_u64(r, "REBUILDING", st.rebuilding);
	if (st.percent >= 0)
		cli_record_set_u64(r, "REBUILD_PERCENT", (unsigned)st.percent);
	if (h->set) {
		volume_set_info(h->set, &info);
		volume_uuid_format(info.uuid, uuid);
		cli_record_set(r, "NAME", 0, "%s", info.name);
		cli_record_set(r, "UUID", 0, "%s", uuid);
		cli_record_set_u64(r, "EVENTS", info.events);
		if (info.rebuild_off != UINT64_MAX) {
			cli_record_set_u64(r, "REBUILD_REGION", info.rebuild_seg);
			cli_record_set_u64(r, "REBUILD_CHECKPOINT", info.rebuild_off);
		}
	}
	return cli_record_table(r);
}

/* Each region (segment) of the volume and its full stripe in bytes. */
static struct cli_table *regions_table(struct vol_handle *h, bool json)
{
	struct cli_table *t = cli_table_new("regions", json);

	cli_table_column(t, "REGION", CLI_COL_NUMBER);
	cli_table_column(t, "FULL_STRIPE", CLI_COL_NUMBER);
	for (unsigned i = 0; i < volume_segment_count(h->v); i++) {
		struct cli_table_line *ln = cli_table_line(t, NULL);

		cli_table_set_u64(ln, 0, i);
		cli_table_set_u64(ln, 1, volume_full_stripe(h->v, i));
	}
	return t;
}

enum { COL_MEMBER, COL_STATE, COL_DEVICE, COL_BADBLOCKS, COL_NOTE, COL_UUID, COL_EVENTS,
       COL_STALE, COL_TRUNCATED };

/*
 * The members: MEMBER (its index), STATE, DEVICE (none: missing),
 * BADBLOCKS (ranges in its log) and NOTE (refused, missing: then the
 * member UUID the volume expects, so the right device can be found); JSON
 * adds each one's UUID, EVENTS and the STALE and TRUNCATED refusals. For
 * people the spares follow as spareN lines (idle); JSON has them apart
 * (spares_table), so "members" holds members alone.
 */
static struct cli_table *members_table(struct vol_handle *h, bool json)
{
	static const char *const cols[] = { "MEMBER", "STATE", "DEVICE", "BADBLOCKS", "NOTE",
					    "UUID", "EVENTS", "STALE", "TRUNCATED" };
	struct cli_table *t = cli_table_new("members", json);
	char uuid[VOLUME_UUID_STRLEN];

	for (int c = 0; c < (json ? COL_TRUNCATED + 1 : COL_NOTE + 1); c++)
		cli_table_column(t, cols[c], c == COL_STALE || c == COL_TRUNCATED ? CLI_COL_BOOL
					     : (c == COL_MEMBER && json) || c == COL_BADBLOCKS ||
							     c == COL_EVENTS ? CLI_COL_NUMBER : 0);
	for (unsigned m = 0; m < volume_member_count(h->v, 0); m++) {
		struct cli_table_line *ln = cli_table_line(t, NULL);
		struct volume_set_member sm;

		vol_member_get(h, m, &sm);
		volume_uuid_format(sm.uuid, uuid);
		cli_table_set_u64(ln, COL_MEMBER, m);
		cli_table_set(ln, COL_STATE, "%s", vol_state_name(sm.state));
		cli_table_set(ln, COL_DEVICE, sm.device ? "%s" : json ? NULL : "-", sm.device);
		cli_table_set_u64(ln, COL_BADBLOCKS, sm.badblocks);
		if (sm.stale || sm.truncated)
			cli_table_set(ln, COL_NOTE, "%s, refused", sm.stale ? "stale" : "truncated");
		else if (h->set && !sm.device)
			cli_table_set(ln, COL_NOTE, "missing: uuid %s", uuid);
		if (!json || !h->set)
			continue;
		cli_table_set(ln, COL_UUID, "%s", uuid);
		cli_table_set_u64(ln, COL_EVENTS, sm.events);
		cli_table_set_bool(ln, COL_STALE, sm.stale);
		cli_table_set_bool(ln, COL_TRUNCATED, sm.truncated);
	}
	for (unsigned i = 0; !json && h->set && i < volume_set_spare_count(h->set); i++) {
		struct cli_table_line *ln = cli_table_line(t, NULL);
		const char *d = volume_set_spare_device(h->set, i);

		cli_table_set(ln, COL_MEMBER, "spare%u", i);
		cli_table_set(ln, COL_STATE, "idle");
		cli_table_set(ln, COL_DEVICE, "%s", d ? d : "-");
		if (!d)
			cli_table_set(ln, COL_NOTE, "missing");
	}
	return t;
}

/* JSON's spares: SPARE (its index) and DEVICE (null: missing). */
static struct cli_table *spares_table(struct vol_handle *h)
{
	struct cli_table *t = cli_table_new("spares", true);

	cli_table_column(t, "SPARE", CLI_COL_NUMBER);
	cli_table_column(t, "DEVICE", 0);
	for (unsigned i = 0; h->set && i < volume_set_spare_count(h->set); i++) {
		struct cli_table_line *ln = cli_table_line(t, NULL);
		const char *d = volume_set_spare_device(h->set, i);

		cli_table_set_u64(ln, 0, i);
		cli_table_set(ln, 1, d ? "%s" : NULL, d);
	}
	return t;
}

/* The record and its tables, printed as one (one JSON object with json). */
static int print_state(struct vol_handle *h, bool json, const char *action, int member,
		       const char *device)
{
	struct cli_table *tables[] = { volume_record(h, json, action, member, device),
				       regions_table(h, json), members_table(h, json),
				       json ? spares_table(h) : NULL };

	return cli_tables_print(tables, json ? 4 : 3);
}

void vol_json_report(struct vol_handle *h, const char *action, int member, const char *device)
{
	print_state(h, true, action, member, device);
}

int vol_print_status(struct vol_handle *h, bool json)
{
	struct vol_state st;

	vol_state_get(h, &st);
	if (print_state(h, json, NULL, -1, NULL))
		return VOL_STATUS_ERROR;
	return st.missing || st.rebuilding ? VOL_STATUS_DEGRADED : VOL_STATUS_CLEAN;
}
