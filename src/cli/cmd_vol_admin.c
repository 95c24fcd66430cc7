/*
 * cmd_vol_admin.c - `pony vol fail | add | replace | re-add | rebuild | scrub |
 * badblocks`: failure handling from the command line. Every state change
 * is saved in the members' superblocks before the command returns. A
 * device added to a healthy volume becomes an idle hot spare; a member
 * failing while one is idle is rebuilt onto it before the command returns.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "table.h"
#include "pony/bdev.h"
#include "pony/util.h"
#include "vol.h"

/* Options every admin command takes. */
struct admin_opts {
	unsigned member;
	bool have_member, json, repair, force;
	const char *device;
	uint64_t rate;
};

static int admin_parse(int argc, char **argv, const char *usage, struct admin_opts *o)
{
	static const struct option longopts[] = {
		{ "member", required_argument, NULL, 'm' }, { "device", required_argument, NULL, 'd' },
		{ "rate", required_argument, NULL, 'r' }, { "repair", no_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'J' }, { "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	char cmd[64];
	int c;

	snprintf(cmd, sizeof(cmd), "pony vol %s", argv[0]);
	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "m:d:r:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': o->force = true; break;
		case 'm':
			if (vol_parse_member(cmd, optarg, &o->member))
				return CLI_EXIT_USAGE;
			o->have_member = true;
			break;
		case 'd': o->device = optarg; break;
		case 'r':
			if (cli_parse_size(cmd, "--rate", optarg, 0, UINT64_MAX, 1, &o->rate))
				return CLI_EXIT_USAGE;
			break;
		case 'R': o->repair = true; break;
		case 'J': o->json = true; break;
		case 'h':
			fputs(usage, stdout);
			fputs("VOLUME: its member devices (any order), or NAME (as 'pony vol assemble'\n"
			      "recorded it), UUID=U or LABEL=L, found in the device database.\n", stdout);
			return -1;
		default: fputs(usage, stderr); return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "no member devices given");
	return 0;
}

#define ADMIN_PARSE(usage)                                              \
	struct admin_opts o;                                            \
	struct vol_handle h;                                            \
	int r = admin_parse(argc, argv, usage, &o);                     \
	if (r)                                                          \
		return r < 0 ? CLI_EXIT_OK : r;

static int vol_fail_run(int argc, char **argv)
{
	ADMIN_PARSE("Usage: pony vol fail -m INDEX [--json] VOLUME\n"
		    "Marks member INDEX faulty: no I/O goes to it any more. With an idle\n"
		    "hot spare among DEV..., the spare takes its place and is rebuilt.\n")
	unsigned spares;

	if (!o.have_member)
		return cli_usage_error("pony vol fail", "--member INDEX is required");
	r = vol_open("pony vol fail", argv + optind, argc - optind, VOL_OPEN_DEGRADED, &h);
	if (r)
		return r;
	if (o.member >= volume_member_count(h.v, 0)) {
		vol_close(&h);
		return cli_error("no member %u", o.member);
	}
	spares = volume_set_spare_count(h.set);
	r = volume_set_fail(h.set, o.member);
	if (r < 0) {
		cli_error("fail: %s", strerror(-r));
		return vol_close(&h), CLI_EXIT_FAILURE;
	}
	/* An idle spare is being put in: wait for its rebuild (a progress bar). */
	vol_catch_interrupt();
	r = volume_set_wait(h.set);
	util_progress_done(&h.spare_bar);
	if (r < 0)
		cli_error("rebuild onto a spare: %s", strerror(-r));
	if (o.json) {
		vol_json_report(&h, "fail", (int)o.member, NULL);
	} else {
		printf("member %u marked faulty\n", o.member);
		if (volume_set_spare_count(h.set) < spares && r >= 0)
			printf("a hot spare took its place and was rebuilt\n");
	}
	return vol_close(&h) || r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

static int do_rebuild(struct vol_handle *h, uint64_t rate, bool json)
{
	struct util_progress p;
	int r;

	vol_catch_interrupt();
	util_progress_init(&p, "rebuild", volume_size(h->v));
	vol_progress_publish(h->set, &p);
	r = volume_set_rebuild(h->set, rate, vol_progress, &p);
	util_progress_done(&p);
	if (r < 0)
		return cli_error("rebuild: %s (the checkpoint is saved; run 'pony vol rebuild' "
				 "to resume)", strerror(-r));
	if (!json)
		printf("rebuild done\n");
	return 0;
}

/* add on a healthy volume: dev becomes an idle hot spare. */
static int add_spare(struct vol_handle *h, const char *path, bool json)
{
	struct bdev *dev;
	int r;

	if (vol_open_dev(path, false, &dev) < 0)
		return CLI_EXIT_FAILURE;
	r = volume_set_add_spare(h->set, dev);
	if (r < 0) {
		bdev_free(dev);
		if (r == -ENOSPC)
			return cli_error("%s is too small for this volume", path);
		if (r == -E2BIG)
			return cli_error("no room for another spare (at most 8)");
		if (r == -EEXIST)
			return cli_error("%s is already a hot spare of this volume", path);
		return cli_error("cannot add %s: %s", path, strerror(-r));
	}
	vol_devdb_note(path);
	if (json)
		vol_json_report(h, "add", -1, path);
	else
		printf("%s added as a hot spare (idle until a member fails)\n", path);
	return 0;
}

/* The new device of add or replace is not one of the members given. */
static int check_new_device_unlisted(const char *cmd, const char *device, char **members, int n)
{
	struct stat want;

	if (!bdev_name_is_nbd(device) && stat(device, &want) < 0)
		return cli_error("%s: %s", device, strerror(errno));
	for (int i = 0; i < n; i++)
		if (cli_same_device(device, members[i]))
			return cli_error("%s is also given as member %s: %s would overwrite a member with "
					 "a rebuild of itself (to take a failed member back in, leave it "
					 "out of the member list)", device, members[i], cmd);
	return 0;
}

/*
 * The new device of add or replace: never a working member of this volume
 * (that would overwrite its own data with a rebuild of it), and otherwise
 * checked as every target is; a failed member of this volume may come back.
 */
static int check_new_device(struct vol_handle *h, const char *cmd, const struct admin_opts *o)
{
	struct volume_set_info info;
	char uuid[40];
	struct stat want;
	struct cli_targets t = { .cmd = cmd, .force = o->force, .rejoin_uuid = uuid };

	if (!bdev_name_is_nbd(o->device) && stat(o->device, &want) < 0)
		return cli_error("%s: %s", o->device, strerror(errno));
	for (unsigned m = 0; m < volume_member_count(h->v, 0); m++) {
		const char *dev = volume_member_device(h->v, 0, m);

		if (dev && cli_same_device(dev, o->device) &&
		    volume_member_state(h->v, 0, m) == VOLUME_MEMBER_OK)
			return cli_error("%s is member %u of this volume, and it works: %s would "
					 "overwrite it with a rebuild of itself", o->device, m, cmd);
	}
	volume_set_info(h->set, &info);
	volume_uuid_format(info.uuid, uuid);
	return cli_targets_check(&t, (char *const *)&o->device, 1);
}

/* add and replace: a new device takes a member's place and is rebuilt. */
static int vol_swap(int argc, char **argv, bool replace)
{
	ADMIN_PARSE(replace ?
		    "Usage: pony vol replace -m INDEX -d NEWDEV [-r RATE] [--json] VOLUME\n"
		    "Takes member INDEX out (faulty or not) and rebuilds onto NEWDEV.\n" :
		    "Usage: pony vol add -d NEWDEV [-m INDEX] [-r RATE] [--json] VOLUME\n"
		    "Puts NEWDEV in place of a failed member (the first, or INDEX) and\n"
		    "rebuilds it, online, with a progress bar. With no failed member,\n"
		    "NEWDEV becomes an idle hot spare: a member failing later is rebuilt\n"
		    "onto it automatically (list it among DEV... from then on).\n")
	struct bdev *dev;
	unsigned m = o.member;

	if (!o.device)
		return cli_usage_error(argv[0], "--device NEWDEV is required");
	if (replace && !o.have_member)
		return cli_usage_error(argv[0], "--member INDEX is required");
	r = check_new_device_unlisted(replace ? "pony vol replace" : "pony vol add", o.device,
				      argv + optind, argc - optind);
	if (r)
		return r;
	r = vol_open(argv[0], argv + optind, argc - optind, VOL_OPEN_QUIET | VOL_OPEN_DEGRADED, &h);
	if (r)
		return r;
	r = check_new_device(&h, replace ? "pony vol replace" : "pony vol add", &o);
	if (r) {
		vol_close(&h);
		return r;
	}
	if (!o.have_member) {
		for (m = 0; m < volume_member_count(h.v, 0); m++)
			if (volume_member_state(h.v, 0, m) == VOLUME_MEMBER_FAILED)
				break;
		if (m == volume_member_count(h.v, 0)) {
			r = add_spare(&h, o.device, o.json);
			return vol_close(&h) || r ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
		}
	}
	if (m >= volume_member_count(h.v, 0)) {
		vol_close(&h);
		return cli_error("no member %u", m);
	}
	if (replace && volume_member_state(h.v, 0, m) == VOLUME_MEMBER_OK)
		volume_set_fail(h.set, m);
	if (vol_open_dev(o.device, false, &dev) < 0) {
		vol_close(&h);
		return CLI_EXIT_FAILURE;
	}
	r = volume_set_replace(h.set, m, dev);
	if (r < 0) {
		bdev_free(dev);
		vol_close(&h);
		if (r == -EBUSY)
			return cli_error("member %u is working; use 'pony vol replace'", m);
		if (r == -ENOSPC)
			return cli_error("%s is too small for this volume", o.device);
		return cli_error("cannot put %s in: %s", o.device, strerror(-r));
	}
	vol_devdb_note(o.device);       /* NAME finds it from now on */
	if (!o.json)
		printf("%s is member %u, rebuilding\n", o.device, m);
	r = do_rebuild(&h, o.rate, o.json);
	if (!r && o.json)
		vol_json_report(&h, replace ? "replace" : "add", (int)m, o.device);
	return vol_close(&h) || r ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

static int vol_add_run(int argc, char **argv)
{
	return vol_swap(argc, argv, false);
}

static int vol_replace_run(int argc, char **argv)
{
	return vol_swap(argc, argv, true);
}

/* One member back: its missed writes resynced from the bitmap, or why it cannot be. */
static int readd_one(struct vol_handle *h, unsigned m, struct bdev *dev, const struct admin_opts *o)
{
	const char *name = dev->name;
	uint64_t resynced = 0;
	int r = volume_set_readd(h->set, m, dev, o->rate, &resynced);

	if (r == -ESTALE)
		return cli_error("member %u (%s) left before the write-intent bitmap was last "
				 "cleared: what it missed is not known; rebuild it whole with "
				 "'pony vol replace -m %u -d %s'", m, name, m, name);
	if (r == -EXDEV)
		return cli_error("member %u was replaced since %s left; add %s as a new device",
				 m, name, name);
	if (r < 0)
		return cli_error("re-add of member %u (%s): %s", m, name, strerror(-r));
	if (o->json)
		vol_json_report(h, "re-add", (int)m, name);
	else
		printf("member %u (%s) re-added: %llu bytes resynced\n", m, name,
		       (unsigned long long)resynced);
	return 0;
}

static int vol_readd_run(int argc, char **argv)
{
	ADMIN_PARSE("Usage: pony vol re-add [-m INDEX] [-r RATE] [--json] VOLUME\n"
		    "Takes back members that left and returned (a server back, a disk\n"
		    "put back), as mdadm --re-add: DEV... lists every member, the\n"
		    "returning ones too, and only what the volume's write-intent\n"
		    "bitmap marks as written while they were away is rebuilt onto\n"
		    "them. -m takes back only member INDEX. A member gone since before\n"
		    "the bitmap was last cleared needs a full rebuild: pony vol replace.\n")
	unsigned done = 0, n;
	int failed = 0;

	r = vol_open("pony vol re-add", argv + optind, argc - optind,
		     VOL_OPEN_QUIET | VOL_OPEN_DEGRADED, &h);
	if (r)
		return r;
	n = volume_member_count(h.v, 0);
	if (o.have_member && o.member >= n) {
		vol_close(&h);
		return cli_error("no member %u", o.member);
	}
	for (unsigned m = 0; m < n; m++) {
		struct bdev *dev = volume_set_refused_device(h.set, m);

		if (!dev || (o.have_member && m != o.member))
			continue;
		failed |= readd_one(&h, m, dev, &o);
		done++;
	}
	if (!done) {
		vol_close(&h);
		return cli_error(o.have_member ? "member %u is not among DEV... as a member that "
				 "left" : "no member among DEV... left and came back", o.member);
	}
	return vol_close(&h) || failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

static int vol_rebuild_run(int argc, char **argv)
{
	ADMIN_PARSE("Usage: pony vol rebuild [-r RATE] [--json] VOLUME\n"
		    "Rebuilds members being rebuilt, from the saved checkpoint on.\n"
		    "  -r, --rate BYTES  at most BYTES of volume data per second\n")
	r = vol_open("pony vol rebuild", argv + optind, argc - optind, VOL_OPEN_DEGRADED, &h);
	if (r)
		return r;
	r = do_rebuild(&h, o.rate, o.json);
	if (!r && o.json)
		vol_json_report(&h, "rebuild", -1, NULL);
	return vol_close(&h) || r ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

/* What a scrub found: with --json each finding is a row of mismatches. */
struct scrub_report {
	struct cli_table *mismatches;
	uint64_t located, repaired;
};

enum { SCRUB_REGION, SCRUB_STRIPE, SCRUB_REGION_OFFSET, SCRUB_REGION_LENGTH, SCRUB_LOCATED,
       SCRUB_MEMBER, SCRUB_DEVICE, SCRUB_OFFSET, SCRUB_LENGTH, SCRUB_REPAIRED };

static struct cli_table *scrub_table(void)
{
	static const struct { const char *name; unsigned flags; } cols[] = {
		[SCRUB_REGION] = { "REGION", CLI_COL_NUMBER },
		[SCRUB_STRIPE] = { "STRIPE", CLI_COL_NUMBER },
		[SCRUB_REGION_OFFSET] = { "REGION_OFFSET", CLI_COL_NUMBER },
		[SCRUB_REGION_LENGTH] = { "REGION_LENGTH", CLI_COL_NUMBER },
		[SCRUB_LOCATED] = { "LOCATED", CLI_COL_BOOL },
		[SCRUB_MEMBER] = { "MEMBER", CLI_COL_NUMBER },
		[SCRUB_DEVICE] = { "DEVICE", 0 },
		[SCRUB_OFFSET] = { "OFFSET", CLI_COL_NUMBER },
		[SCRUB_LENGTH] = { "LENGTH", CLI_COL_NUMBER },
		[SCRUB_REPAIRED] = { "REPAIRED", CLI_COL_BOOL },
	};
	struct cli_table *t = cli_table_new("mismatches", true);

	for (size_t c = 0; c < ARRAY_SIZE(cols); c++)
		cli_table_column(t, cols[c].name, cols[c].flags);
	return t;
}

/* A finding as a row; what cannot be said of it (no stripe, no member) is null. */
static void scrub_row(struct cli_table *t, const struct volume_mismatch *m)
{
	struct cli_table_line *l = cli_table_line(t, NULL);

	cli_table_set_u64(l, SCRUB_REGION, m->seg);
	if (m->stripe != UINT64_MAX)
		cli_table_set_u64(l, SCRUB_STRIPE, m->stripe);
	cli_table_set_u64(l, SCRUB_REGION_OFFSET, m->seg_off);
	cli_table_set_u64(l, SCRUB_REGION_LENGTH, m->seg_len);
	cli_table_set_bool(l, SCRUB_LOCATED, m->located);
	if (m->located) {
		cli_table_set_u64(l, SCRUB_MEMBER, m->member);
		cli_table_set(l, SCRUB_DEVICE, m->device ? "%s" : NULL, m->device);
		cli_table_set_u64(l, SCRUB_OFFSET, m->dev_off);
		cli_table_set_u64(l, SCRUB_LENGTH, m->len);
	}
	cli_table_set_bool(l, SCRUB_REPAIRED, m->repaired);
}

/* The totals for people, a record: MISMATCHES, LOCATED, REPAIRED, UNLOCATABLE. */
static int scrub_summary(const struct scrub_report *rep, uint64_t count)
{
	struct cli_record *r = cli_record_new("scrub", false);

	cli_record_set_u64(r, "MISMATCHES", count);
	cli_record_set_u64(r, "LOCATED", rep->located);
	cli_record_set_u64(r, "REPAIRED", rep->repaired);
	cli_record_set_u64(r, "UNLOCATABLE", count - rep->located);
	return cli_record_print(r);
}

/* One finding: the member blamed and what became of it, or "unlocatable". */
static void scrub_print(const struct volume_mismatch *m, void *arg)
{
	struct scrub_report *rep = arg;
	char where[48];

	rep->located += m->located;
	rep->repaired += m->repaired;
	if (rep->mismatches) {
		scrub_row(rep->mismatches, m);
		return;
	}
	if (m->stripe != UINT64_MAX)
		snprintf(where, sizeof(where), "stripe %llu", (unsigned long long)m->stripe);
	else
		snprintf(where, sizeof(where), "offset %llu", (unsigned long long)m->seg_off);
	if (m->located)
		fprintf(stderr, "\rregion %u %s: member %u (%s) bytes %llu+%llu disagree with the "
			"rest: %s\n", m->seg, where, m->member, m->device ? m->device : "-",
			(unsigned long long)m->dev_off, (unsigned long long)m->len,
			m->repaired ? "repaired" : "not repaired");
	else
		fprintf(stderr, "\rregion %u %s: unlocatable: region bytes %llu+%llu disagree and "
			"no member can be blamed; left alone (ponyfs's checksums pick the right "
			"copy on read)\n", m->seg, where, (unsigned long long)m->seg_off,
			(unsigned long long)m->seg_len);
}

static int vol_scrub_run(int argc, char **argv)
{
	ADMIN_PARSE("Usage: pony vol scrub [--repair] [-r RATE] [--json] VOLUME\n"
		    "Reads everything and checks mirrors and parity. Each finding names the\n"
		    "member that is wrong where the level can tell (raid6 from its P and Q\n"
		    "syndromes, three or more copies by majority, a read error); --repair\n"
		    "rewrites that member alone. raid4/5 and two copies cannot tell: such\n"
		    "a finding is 'unlocatable' and left alone, for ponyfs's checksums.\n"
		    "Stopped (Ctrl-C), it saves where it was and the next scrub resumes there.\n"
		    "  -r, --rate BYTES  at most BYTES of volume data per second\n"
		    "Prints a FIELD VALUE line each: MISMATCHES, LOCATED, REPAIRED,\n"
		    "UNLOCATABLE (the findings themselves on stderr as they come); --json\n"
		    "prints the findings instead: {\"mismatches\": [{\"region\": ..., \"stripe\":\n"
		    "..., \"located\": ..., \"member\": ..., \"repaired\": ...}, ...]}.\n"
		    "Exit 0: everything agrees; 1: findings (repaired or not) or an error.\n")
	struct scrub_report rep = { 0 };
	struct util_progress p;
	uint64_t count = 0;
	int printed;

	/* Read-write even without --repair: the scrub checkpoint is saved as it goes. */
	r = vol_open("pony vol scrub", argv + optind, argc - optind, VOL_OPEN_DEGRADED, &h);
	if (r)
		return r;
	if (o.json)
		rep.mismatches = scrub_table();
	vol_catch_interrupt();
	util_progress_init(&p, "scrub", volume_size(h.v));
	vol_progress_publish(h.set, &p);
	r = volume_set_scrub(h.set, o.repair, o.rate, scrub_print, &rep, vol_progress, &p, &count);
	util_progress_done(&p);
	if (o.json)     /* what it found, also when stopped: the rows are true */
		printed = cli_table_print(TAKE_PTR(rep.mismatches));
	else
		printed = r >= 0 ? scrub_summary(&rep, count) : 0;
	if (r == -ECANCELED)
		cli_error("scrub stopped; the checkpoint is saved, run it again to resume");
	else if (r < 0)
		cli_error("scrub: %s", strerror(-r));
	return vol_close(&h) || r < 0 || count || printed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

static int vol_badblocks_run(int argc, char **argv)
{
	ADMIN_PARSE("Usage: pony vol badblocks [--json] VOLUME\n"
		    "Lists each member's bad-block log (byte ranges past its data start),\n"
		    "a table: REGION, MEMBER, OFFSET, LENGTH.\n")
	static const char *const cols[] = { "REGION", "MEMBER", "OFFSET", "LENGTH" };
	struct cli_table *t;

	r = vol_open("pony vol badblocks", argv + optind, argc - optind,
		     VOL_OPEN_RDONLY | VOL_OPEN_QUIET, &h);
	if (r)
		return r;
	t = cli_table_new("badblocks", o.json);
	for (size_t c = 0; c < ARRAY_SIZE(cols); c++)
		cli_table_column(t, cols[c], CLI_COL_NUMBER);
	for (unsigned s = 0; s < volume_segment_count(h.v); s++)
		for (unsigned m = 0; m < volume_member_count(h.v, s); m++) {
			uint64_t offs[64], lens[64];
			unsigned n = volume_member_badblocks(h.v, s, m, offs, lens, 64);

			for (unsigned i = 0; i < n; i++) {
				struct cli_table_line *ln = cli_table_line(t, NULL);

				cli_table_set_u64(ln, 0, s);
				cli_table_set_u64(ln, 1, m);
				cli_table_set_u64(ln, 2, offs[i]);
				cli_table_set_u64(ln, 3, lens[i]);
			}
		}
	r = cli_table_print(t);
	return vol_close(&h) || r ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

const struct cli_command cli_vol_fail = { "fail", "mark a member faulty", vol_fail_run };
const struct cli_command cli_vol_add = {
	"add", "put a new device in for a failed member and rebuild", vol_add_run };
const struct cli_command cli_vol_replace = {
	"replace", "swap a member for a new device and rebuild", vol_replace_run };
const struct cli_command cli_vol_readd = {
	"re-add", "take back members that left, resyncing what they missed", vol_readd_run };
const struct cli_command cli_vol_rebuild = {
	"rebuild", "resume rebuilding members (from the checkpoint)", vol_rebuild_run };
const struct cli_command cli_vol_scrub = {
	"scrub", "verify mirrors and parity, --repair to fix", vol_scrub_run };
const struct cli_command cli_vol_badblocks = {
	"badblocks", "list members' bad-block logs", vol_badblocks_run };
