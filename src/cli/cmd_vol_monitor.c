/*
 * cmd_vol_monitor.c - `pony vol monitor`, mdadm --monitor's counterpart:
 * looks at volumes every --delay seconds (vol_detail_get, read-only),
 * compares each look with the last, and reports what changed with mdadm's
 * event names (Fail, FailSpare, DegradedArray, RebuildStarted, RebuildNN,
 * RebuildFinished, SpareActive, NewArray, DeviceDisappeared, TestMessage):
 * a line to syslog and stderr, and `PROG EVENT VOLUME [MEMBER]` run and
 * waited for, as mdadm --program does, so the scripts people wrote for
 * mdadm work unchanged. No daemon state: a restarted monitor reports a
 * degraded volume again, as mdadm does.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pony/devdb.h"
#include "vol.h"

#define REBUILD_STEP 20         /* RebuildNN every 20 %, mdadm's default --increment */

struct watched {
	char *key;              /* the name (or UUID=, LABEL=) it is found by; NULL: members */
	struct vol_detail *last;        /* NULL: not looked at yet */
	unsigned rebuild_step;  /* the last RebuildNN reported / REBUILD_STEP */
};

struct monitor {
	const char *program;
	bool test;
	char **members;         /* a member list, when given instead of names */
	int nmembers;
	struct watched *v;
	size_t n;
};

/* One event: logged, and the program run with it (waited for, as mdadm does). */
static void monitor_event(const struct monitor *mo, const char *event, const char *volume,
			  const char *member)
{
	char line[1024];
	pid_t pid;
	int status;

	/* Said on stderr and to syslog directly: the library's own lines (a member
	 * stale, running degraded) would repeat at every look. */
	if (member && *member)
		snprintf(line, sizeof(line), "%s event detected on volume %s, member %s", event, volume,
			 member);
	else
		snprintf(line, sizeof(line), "%s event detected on volume %s", event, volume);
	fprintf(stderr, "pony: %s\n", line);
	syslog(!strncmp(event, "Fail", 4) || !strcmp(event, "DegradedArray") ||
	       !strcmp(event, "DeviceDisappeared") ? LOG_ALERT : LOG_NOTICE, "%s", line);
	if (!mo->program)
		return;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null >= 0)
			dup2(null, STDIN_FILENO);
		execlp(mo->program, mo->program, event, volume, member && *member ? member : NULL,
		       (char *)NULL);
		fprintf(stderr, "pony: cannot run %s: %s\n", mo->program, strerror(errno));
		_exit(127);
	}
	if (pid < 0) {
		fprintf(stderr, "pony: cannot run %s: %s\n", mo->program, strerror(errno));
		return;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

static bool is_rebuilding(const struct vol_detail *d)
{
	if (d->working && !strncmp(d->work, "rebuild", 7))
		return true;
	for (unsigned i = 0; i < d->nmembers; i++)
		if (!strcmp(d->members[i].state, "rebuilding"))
			return true;
	return false;
}

static bool is_out(const char *state)
{
	return !strcmp(state, "failed") || !strcmp(state, "missing") || !strcmp(state, "stale") ||
	       !strcmp(state, "truncated");
}

/* Member events: by role, the same slot in both looks. Whether one came back. */
static bool compare_members(const struct monitor *mo, const char *name,
			    const struct vol_detail *old, const struct vol_detail *now)
{
	bool back = false;

	for (unsigned i = 0; i < now->nmembers; i++) {
		const struct vol_detail_member *b = &now->members[i], *a = NULL;

		for (unsigned j = 0; j < old->nmembers && !a; j++)
			if (!strcmp(old->members[j].role, b->role))
				a = &old->members[j];
		if (!a || !strncmp(b->role, "spare", 5))
			continue;
		if (!strcmp(a->state, "ok") && is_out(b->state))
			monitor_event(mo, "Fail", name, a->device[0] ? a->device : a->uuid);
		else if (!strcmp(a->state, "rebuilding") && is_out(b->state))
			monitor_event(mo, "FailSpare", name, a->device[0] ? a->device : a->uuid);
		else if (strcmp(a->state, "ok") && !strcmp(b->state, "ok")) {
			monitor_event(mo, "SpareActive", name, b->device[0] ? b->device : b->uuid);
			back = true;
		}
	}
	return back;
}

static void report_rebuild_steps(const struct monitor *mo, struct watched *w, const char *name,
				 const struct vol_detail *now)
{
	char event[32];

	if (!now->working || strncmp(now->work, "rebuild", 7))
		return;
	while ((w->rebuild_step + 1) * REBUILD_STEP <= now->percent &&
	       (w->rebuild_step + 1) * REBUILD_STEP < 100) {
		w->rebuild_step++;
		snprintf(event, sizeof(event), "Rebuild%u", w->rebuild_step * REBUILD_STEP);
		monitor_event(mo, event, name, NULL);
	}
}

/* What changed between w's last look and now (NULL last: the first look). */
static void monitor_compare(const struct monitor *mo, struct watched *w, const struct vol_detail *now)
{
	const struct vol_detail *old = w->last;
	const char *name = w->key ? w->key : now->name[0] ? now->name : "-";
	bool was_rebuilding = old && old->known && is_rebuilding(old);

	if (!old) {
		if (mo->test)
			monitor_event(mo, "TestMessage", name, NULL);
		if (!now->known)
			monitor_event(mo, "DeviceDisappeared", name, NULL);
		else if (strcmp(now->state, "clean") && strcmp(now->state, "rebuilding"))
			monitor_event(mo, "DegradedArray", name, NULL);
		else if (is_rebuilding(now))
			monitor_event(mo, "RebuildStarted", name, NULL);
		report_rebuild_steps(mo, w, name, now);
		return;
	}
	if (old->known && !now->known) {
		monitor_event(mo, "DeviceDisappeared", name, NULL);
		return;
	}
	if (!old->known && now->known)
		monitor_event(mo, "NewArray", name, NULL);
	if (!now->known)
		return;
	if (old->known && compare_members(mo, name, old, now) && !was_rebuilding &&
	    !is_rebuilding(now))
		was_rebuilding = true;  /* rebuilt between two looks: it still finished */
	if (!strcmp(old->state, "clean") && (!strcmp(now->state, "degraded") ||
					     !strcmp(now->state, "failed")))
		monitor_event(mo, "DegradedArray", name, NULL);
	if (!was_rebuilding && is_rebuilding(now)) {
		w->rebuild_step = 0;
		monitor_event(mo, "RebuildStarted", name, NULL);
	}
	report_rebuild_steps(mo, w, name, now);
	if (was_rebuilding && !is_rebuilding(now)) {
		w->rebuild_step = 0;
		monitor_event(mo, "RebuildFinished", name, NULL);
	}
}

/* Whether a member that worked in old is out in now. */
static bool member_left(const struct vol_detail *old, const struct vol_detail *now)
{
	for (unsigned i = 0; old && old->known && i < now->nmembers && i < old->nmembers; i++)
		if (!strcmp(old->members[i].role, now->members[i].role) &&
		    !is_out(old->members[i].state) && is_out(now->members[i].state))
			return true;
	return false;
}

static void monitor_get(const struct monitor *mo, const struct watched *w, struct vol_detail *d)
{
	char *key = w->key;

	if (key)
		vol_detail_get(&key, 1, true, d);
	else
		vol_detail_get(mo->members, mo->nmembers, true, d);
}

static bool same_states(const struct vol_detail *a, const struct vol_detail *b)
{
	if (a->known != b->known || a->nmembers != b->nmembers)
		return false;
	for (unsigned i = 0; i < a->nmembers; i++)
		if (strcmp(a->members[i].state, b->members[i].state))
			return false;
	return true;
}

static void monitor_look(struct monitor *mo, struct watched *w)
{
	struct vol_detail *now = malloc(sizeof(*now)), *again = malloc(sizeof(*again));
	struct timespec pause = { .tv_nsec = 200000000 };

	if (!now || !again) {
		fprintf(stderr, "pony: out of memory\n");
		free(now);
		free(again);
		return;
	}
	monitor_get(mo, w, now);
	/* A look while another process rewrites the superblocks one member after
	 * another can find one older than the rest (stale), and the device
	 * database may be busy a moment: a member seen leaving, or the volume,
	 * is said to only when two looks in a row agree. */
	for (int tries = 0; (member_left(w->last, now) || (w->last && w->last->known && !now->known)) &&
			    tries < 5; tries++) {
		struct vol_detail *t;

		nanosleep(&pause, NULL);
		monitor_get(mo, w, again);
		if (same_states(now, again))
			break;
		t = now;
		now = again;
		again = t;
	}
	free(again);
	monitor_compare(mo, w, now);
	free(w->last);
	w->last = now;
}

/* --scan: the volumes the device database names, kept across looks by name. */
static int monitor_scan(struct monitor *mo)
{
	_cleanup_(devdb_closep) struct devdb *db = NULL;
	struct devdb_volume **vs = NULL;
	size_t n = 0;
	int r = devdb_open(NULL, 0, &db);

	if (r == 0)
		r = devdb_volume_list(db, &vs, &n);
	if (r < 0) {
		fprintf(stderr, "pony: the device database: %s\n", strerror(-r));
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		bool known = false;
		struct watched *grown;

		for (size_t j = 0; j < mo->n && !known; j++)
			known = !strcmp(mo->v[j].key, vs[i]->name);
		if (known)
			continue;
		grown = realloc(mo->v, (mo->n + 1) * sizeof(*mo->v));
		if (!grown)
			break;
		mo->v = grown;
		mo->v[mo->n] = (struct watched){ .key = strdup(vs[i]->name) };
		if (mo->v[mo->n].key)
			mo->n++;
	}
	devdb_volumes_free(vs, n);
	return 0;
}

static void monitor_sleep(double secs)
{
	struct timespec ts = { .tv_sec = (time_t)secs,
			       .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9) };

	/* The handler has no SA_RESTART: a signal ends the sleep early. */
	while (!vol_interrupt_pending() && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void monitor_usage(FILE *out)
{
	fprintf(out,
		"Usage: pony vol monitor [OPTIONS] --scan | VOLUME...\n"
		"Watches volumes as mdadm --monitor does: every --delay seconds it looks at\n"
		"each (read-only) and reports what changed with mdadm's event names: Fail,\n"
		"FailSpare, DegradedArray, RebuildStarted, Rebuild20/40/60/80,\n"
		"RebuildFinished, SpareActive, NewArray, DeviceDisappeared, TestMessage.\n"
		"Each goes to syslog and stderr, and runs PROG EVENT VOLUME [MEMBER].\n"
		"VOLUME...: names (as 'pony vol assemble' recorded them), UUID=U or\n"
		"LABEL=L, each a volume; or the member devices of one volume.\n\n"
		"  -p, --program PROG   run PROG EVENT VOLUME [MEMBER] for each event\n"
		"  -d, --delay SECONDS  between looks (default 60)\n"
		"  -1, --oneshot        look once, report, exit (a cron job)\n"
		"  -t, --test           a TestMessage for each volume at the start\n"
		"      --scan           every volume the device database names (new ones\n"
		"                       are picked up as they are recorded)\n"
		"  -h, --help           this help\n"
		"SIGTERM or SIGINT ends it (exit 0).\n");
}

static int monitor_run(struct monitor *mo, bool scan, bool oneshot, double delay)
{
	vol_catch_interrupt();  /* SIGTERM and SIGINT end it after the current look */
	openlog("pony", LOG_PID, LOG_DAEMON);
	while (!vol_interrupt_pending()) {
		if (scan)
			monitor_scan(mo);
		for (size_t i = 0; i < mo->n && !vol_interrupt_pending(); i++)
			monitor_look(mo, &mo->v[i]);
		if (oneshot)
			break;
		monitor_sleep(delay);
	}
	closelog();
	return CLI_EXIT_OK;
}

static int vol_monitor_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "program", required_argument, NULL, 'p' }, { "delay", required_argument, NULL, 'd' },
		{ "oneshot", no_argument, NULL, '1' }, { "test", no_argument, NULL, 't' },
		{ "scan", no_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct monitor mo = { 0 };
	bool scan = false, oneshot = false, names = true;
	double delay = 60;
	int c, r, n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:d:1th", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': mo.program = optarg; break;
		case 'd':
			if (cli_parse_seconds("pony vol monitor", "--delay", optarg, 0.01, 86400, &delay))
				return CLI_EXIT_USAGE;
			break;
		case '1': oneshot = true; break;
		case 't': mo.test = true; break;
		case 's': scan = true; break;
		case 'h': monitor_usage(stdout); return CLI_EXIT_OK;
		default: monitor_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	n = argc - optind;
	if (scan == (n > 0))
		return cli_usage_error("pony vol monitor", scan ? "--scan takes no volumes"
								 : "give --scan or the volumes to watch");
	for (int i = 0; i < n; i++)
		names &= vol_is_named(argv[optind + i]);
	if (n && !names) {
		mo.members = argv + optind;     /* one volume, by its members */
		mo.nmembers = n;
		n = 1;
	}
	mo.v = n > 0 ? calloc((size_t)n, sizeof(*mo.v)) : NULL;
	if (n && !mo.v)
		return cli_error("out of memory");
	mo.n = (size_t)n;
	for (int i = 0; names && i < n; i++)
		mo.v[i].key = strdup(argv[optind + i]);
	r = monitor_run(&mo, scan, oneshot, delay);
	for (size_t i = 0; i < mo.n; i++) {
		free(mo.v[i].key);
		free(mo.v[i].last);
	}
	free(mo.v);
	return r;
}

const struct cli_command cli_vol_monitor = {
	"monitor", "watch volumes, report events, run a program (mdadm --monitor)", vol_monitor_run };
