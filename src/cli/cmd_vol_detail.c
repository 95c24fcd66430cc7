/*
 * cmd_vol_detail.c - `pony vol detail VOLUME`, mdadm --detail's counterpart:
 * the level, chunk, layout, size and state of a pony volume, each member
 * with its device (path or NBD URI), member UUID and state, and the percent,
 * rate and time left of a rebuild or scrub, also one another process runs
 * (cmd_vol_progress.c). One table through libsmartcols: the volume a line,
 * its members and spares its children (a tree; --json nests them). --test
 * makes the exit say the state as mdadm --detail --test does. The look it
 * takes (struct vol_detail) is also what `pony vol monitor` compares.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "table.h"
#include "vol.h"

static const char *member_state(const struct volume_set_member *sm)
{
	if (sm->stale)
		return "stale";
	if (sm->truncated)
		return "truncated";
	if (!sm->device && sm->state == VOLUME_MEMBER_FAILED)
		return "missing";
	return vol_state_name(sm->state);
}

/* Geometry of the data region (a ponyfs volume has a metadata region first). */
static void detail_geometry(struct volume *v, struct vol_detail *d)
{
	struct volume_segment_info si = { 0 };

	for (unsigned i = 0; i < volume_segment_count(v); i++)
		if (volume_segment_info(v, i, &si) == 0 && si.cls == VOLUME_CLASS_DATA)
			break;
	snprintf(d->level, sizeof(d->level), "%s", volume_target_name(si.type));
	snprintf(d->layout, sizeof(d->layout), "%s", si.layout_name);
	d->chunk = si.chunk;
	d->size = volume_size(v);
}

static void detail_member(struct vol_detail *d, const char *role, const char *device,
			  const uint8_t *uuid, const char *state)
{
	struct vol_detail_member *dm = &d->members[d->nmembers++];

	snprintf(dm->role, sizeof(dm->role), "%s", role);
	snprintf(dm->device, sizeof(dm->device), "%s", device ? device : "");
	dm->uuid[0] = '\0';
	if (uuid)
		volume_uuid_format(uuid, dm->uuid);
	dm->state = state;
}

/* A volume that would not start: what its superblocks say of it. */
static void detail_failed(const struct vol_handle *h, struct vol_detail *d)
{
	const struct volume_set_assembly *a = &h->assembly;

	volume_uuid_format(a->uuid, d->uuid);
	snprintf(d->name, sizeof(d->name), "%s", a->name);
	snprintf(d->level, sizeof(d->level), "%s", volume_target_name(a->needed_type));
	for (unsigned m = 0; m < a->nmembers && m < VOLUME_MAX_MEMBERS; m++) {
		const struct volume_set_member *sm = &a->members[m];
		char role[16];

		snprintf(role, sizeof(role), "%u", m);
		detail_member(d, role, NULL, sm->uuid, sm->stale ? "stale" : sm->truncated ? "truncated" :
			      h->assembly_present >> m & 1 ? vol_state_name(sm->state) : "missing");
	}
	d->state = "failed";
	d->test_exit = VOL_STATUS_FAILED;
}

static void detail_work(struct vol_handle *h, struct vol_detail *d)
{
	struct util_progress_status ps;
	struct volume_set_info info;
	struct vol_state st;

	volume_set_info(h->set, &info);
	vol_state_get(h, &st);
	d->rate = 0;
	d->eta = -1;
	if (vol_progress_of(info.uuid, &ps) == 0) {
		d->working = true;
		snprintf(d->work, sizeof(d->work), "%s", ps.what);
		d->percent = ps.percent;
		d->rate = ps.rate;
		d->eta = ps.eta;
	} else if (st.rebuilding && st.percent >= 0) {
		/* No one publishes it (an old pony, or stopped): the superblock's checkpoint. */
		d->working = true;
		snprintf(d->work, sizeof(d->work), "rebuild");
		d->percent = (unsigned)st.percent;
	}
}

void vol_detail_get(char **paths, int n, bool silent, struct vol_detail *d)
{
	struct volume_set_info info;
	struct vol_handle h;
	struct vol_state st;
	int r;

	memset(d, 0, sizeof(*d));
	d->eta = -1;
	d->test_exit = VOL_STATUS_ERROR;
	r = vol_open("pony vol detail", paths, n,
		     VOL_OPEN_RDONLY | VOL_OPEN_QUIET | (silent ? VOL_OPEN_SILENT : 0), &h);
	if (r) {
		if (h.open_error == -ENODEV && h.assembly.known) {
			d->known = true;
			detail_failed(&h, d);
		}
		return;
	}
	if (!h.set) {
		vol_close(&h);
		return;
	}
	d->known = true;
	volume_set_info(h.set, &info);
	volume_uuid_format(info.uuid, d->uuid);
	if (!vol_recorded_name(d->uuid, d->name, sizeof(d->name)))
		snprintf(d->name, sizeof(d->name), "%s", info.name);
	detail_geometry(h.v, d);
	vol_state_get(&h, &st);
	d->state = vol_state_word(&st);
	d->test_exit = st.missing || st.rebuilding ? VOL_STATUS_DEGRADED : VOL_STATUS_CLEAN;
	detail_work(&h, d);
	for (unsigned m = 0; m < volume_member_count(h.v, 0) && m < VOLUME_MAX_MEMBERS; m++) {
		struct volume_set_member sm;
		char role[16];

		vol_member_get(&h, m, &sm);
		snprintf(role, sizeof(role), "%u", m);
		detail_member(d, role, sm.device, sm.uuid, member_state(&sm));
	}
	for (unsigned i = 0; i < volume_set_spare_count(h.set) && i < 8; i++) {
		char role[16];

		snprintf(role, sizeof(role), "spare%u", i);
		detail_member(d, role, volume_set_spare_device(h.set, i), NULL, "spare");
	}
	vol_close(&h);
}

enum { COL_NAME, COL_STATE, COL_LEVEL, COL_CHUNK, COL_LAYOUT, COL_SIZE, COL_ACTION, COL_PERCENT,
       COL_RATE, COL_ETA, COL_DEVICE, COL_UUID };

static int detail_print(const struct vol_detail *d, bool json)
{
	struct cli_table *t = cli_table_new("volumes", json);
	struct cli_table_line *vl;

	cli_table_column(t, "NAME", CLI_COL_TREE);
	cli_table_column(t, "STATE", 0);
	cli_table_column(t, "LEVEL", 0);
	cli_table_column(t, "CHUNK", CLI_COL_NUMBER);
	cli_table_column(t, "LAYOUT", 0);
	cli_table_column(t, "SIZE", CLI_COL_NUMBER);
	cli_table_column(t, "ACTION", 0);
	cli_table_column(t, "PERCENT", CLI_COL_NUMBER);
	cli_table_column(t, "RATE", CLI_COL_NUMBER);
	cli_table_column(t, "ETA", CLI_COL_NUMBER);
	cli_table_column(t, "DEVICE", CLI_COL_WRAP);
	cli_table_column(t, "UUID", 0);
	vl = cli_table_line(t, NULL);
	cli_table_set(vl, COL_NAME, "%s", d->name);
	cli_table_set(vl, COL_STATE, "%s", d->state);
	cli_table_set(vl, COL_LEVEL, "%s", d->level);
	if (d->chunk)
		cli_table_set_u64(vl, COL_CHUNK, d->chunk);
	if (d->layout[0])
		cli_table_set(vl, COL_LAYOUT, "%s", d->layout);
	if (d->size)
		cli_table_set_u64(vl, COL_SIZE, d->size);
	if (d->working) {
		cli_table_set(vl, COL_ACTION, "%s", d->work);
		cli_table_set_u64(vl, COL_PERCENT, d->percent);
		if (d->rate > 0)
			cli_table_set_u64(vl, COL_RATE, (uint64_t)d->rate);
		if (d->eta >= 0)
			cli_table_set_u64(vl, COL_ETA, (uint64_t)d->eta);
	}
	cli_table_set(vl, COL_UUID, "%s", d->uuid);
	for (unsigned i = 0; i < d->nmembers; i++) {
		const struct vol_detail_member *dm = &d->members[i];
		struct cli_table_line *ml = cli_table_line(t, vl);

		cli_table_set(ml, COL_NAME, "%s", dm->role);
		cli_table_set(ml, COL_STATE, "%s", dm->state);
		if (dm->device[0])
			cli_table_set(ml, COL_DEVICE, "%s", dm->device);
		if (dm->uuid[0])
			cli_table_set(ml, COL_UUID, "%s", dm->uuid);
	}
	return cli_table_print(t);
}

static void detail_usage(FILE *out)
{
	fprintf(out,
		"Usage: pony vol detail [--json] [--test] VOLUME\n"
		"Prints a pony volume as mdadm --detail does: its name, state (clean,\n"
		"degraded, rebuilding, failed), level, chunk, layout, size, a rebuild or\n"
		"scrub under way (percent, bytes a second, seconds left; also one another\n"
		"process runs), and each member and spare with its device and UUID.\n"
		"Changes nothing. VOLUME: its member devices (any order), or NAME (as\n"
		"'pony vol assemble' recorded it), UUID=U or LABEL=L.\n\n"
		"      --json   one JSON object: {\"volumes\": [{..., \"children\": [members]}]}\n"
		"  -t, --test   the exit says the state, as mdadm --detail --test: 0 clean,\n"
		"               1 degraded or rebuilding, 2 failed (fewer members than the\n"
		"               level needs), 4 the volume cannot be read\n"
		"  -h, --help   this help\n"
		"Without --test: 0 printed, 1 the volume cannot be read, 2 bad usage.\n");
}

static int vol_detail_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'J' }, { "test", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	bool json = false, test = false;
	struct vol_detail d;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "th", longopts, NULL)) != -1) {
		switch (c) {
		case 'J': json = true; break;
		case 't': test = true; break;
		case 'h': detail_usage(stdout); return CLI_EXIT_OK;
		default: detail_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error("pony vol detail", "no volume given");
	vol_detail_get(argv + optind, argc - optind, false, &d);
	if (!d.known)
		return test ? VOL_STATUS_ERROR : CLI_EXIT_FAILURE;
	r = detail_print(&d, json);
	if (r)
		return test ? VOL_STATUS_ERROR : r;
	return test ? d.test_exit : CLI_EXIT_OK;
}

const struct cli_command cli_vol_detail = {
	"detail", "a volume's level, state, members and progress (mdadm --detail)", vol_detail_run };
