/*
 * cmd_dev_watch.c - `pony dev watch`: keeps the database current without
 * rescans. Netlink uevents report block devices coming, changing and going
 * (udev's through libudev when udevd runs, else the kernel's own:
 * devdb_uevents_open()); inotify reports IN_CLOSE_WRITE on block device nodes
 * and in directories of image files, as udev's own "watch" does, so a mkfs
 * that rewrites a label is probed again the moment the tool closes the
 * device, and a lookup right after finds the new label.
 *
 * SIGTERM and SIGINT end the watch cleanly (the database closed, its WAL
 * checkpointed), as the --timeout does.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <dirent.h>

#include "cli.h"
#include "cmd_dev.h"

#define MAX_WATCHES 4096

struct watch {
	struct devdb *db;
	int ifd;
	int nwd;
	int wd[MAX_WATCHES];
	char *wpath[MAX_WATCHES];
	bool is_dir[MAX_WATCHES];
	bool verbose;
	bool node_watch;                /* inotify on block device nodes */
};

static volatile sig_atomic_t watch_stop;

static void watch_on_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

static void watch_add(struct watch *w, const char *path, bool dir)
{
	int wd;

	if (w->nwd >= MAX_WATCHES)
		return;
	wd = inotify_add_watch(w->ifd, path, dir ? IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE |
					      IN_MOVED_FROM | IN_ONLYDIR : IN_CLOSE_WRITE);
	if (wd < 0)
		return;
	for (int i = 0; i < w->nwd; i++)
		if (w->wd[i] == wd)
			return;
	w->wd[w->nwd] = wd;
	w->wpath[w->nwd] = strdup(path);
	w->is_dir[w->nwd] = dir;
	w->nwd++;
}

static void watch_update(struct watch *w, const char *path, const char *why)
{
	int r = devdb_update_path(w->db, path);

	if (r < 0 && r != -ENOTBLK)
		fprintf(stderr, "pony: watch: %s: %s\n", path, strerror(-r));
	else if (r > 0 && w->verbose)
		printf("%s %s\n", why, path);
	fflush(stdout);
}

static void handle_inotify(struct watch *w)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len = read(w->ifd, buf, sizeof(buf));

	for (char *p = buf; len > 0 && p < buf + len;) {
		const struct inotify_event *ev = (const struct inotify_event *)p;

		for (int i = 0; i < w->nwd; i++) {
			char path[PATH_MAX];

			if (w->wd[i] != ev->wd)
				continue;
			if (w->is_dir[i] && ev->len)
				snprintf(path, sizeof(path), "%s/%s", w->wpath[i], ev->name);
			else
				snprintf(path, sizeof(path), "%s", w->wpath[i]);
			if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
				if (devdb_mark_absent(w->db, path) == 0 && w->verbose)
					printf("gone %s\n", path);
			} else {
				watch_update(w, path, "changed");
			}
		}
		p += sizeof(*ev) + ev->len;
	}
}

static void handle_uevent(struct watch *w, struct devdb_uevents *ev)
{
	struct devdb_uevent e;
	int r;

	while ((r = devdb_uevents_receive(ev, &e)) != 0) {
		if (r < 0) {
			if (r == -ENOBUFS)      /* events were lost: carry on with the next */
				continue;
			fprintf(stderr, "pony: watch: uevent: %s\n", strerror(-r));
			return;
		}
		if (w->verbose)
			printf("uevent %s %s\n", e.action, e.node);
		if (!strcmp(e.action, "remove")) {
			if (devdb_mark_absent(w->db, e.node) == 0 && w->verbose)
				printf("gone %s\n", e.node);
			fflush(stdout);
		} else {
			watch_update(w, e.node, e.action);
			if (w->node_watch)
				watch_add(w, e.node, false);
		}
	}
}

static void add_block_nodes(struct watch *w)
{
	DIR *d = opendir("/sys/class/block");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char p[300];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/dev/%s", e->d_name);
		watch_add(w, p, false);
	}
	if (d)
		closedir(d);
}

static void watch_usage(FILE *f)
{
	fprintf(f, "Usage: pony dev watch [--db PATH] [--timeout SECONDS] [--verbose]\n"
		   "                      [--no-node-watch] [DIR...]\n"
		   "Keeps the database current: uevents for block devices (udev's when udevd\n"
		   "runs, else the kernel's; PONY_UEVENT_SOURCE=kernel|udev forces one), inotify\n"
		   "IN_CLOSE_WRITE on block device nodes and on directories of image files (the\n"
		   "ones the database knows, and DIRs given). Runs until SIGTERM/SIGINT, or SECONDS.\n"
		   "--no-node-watch: no inotify on device nodes, uevents alone (udevd's \"watch\"\n"
		   "rule re-announces a close after a write as a change event).\n"
		   "Prints 'watching ...' on stderr once every watch is in place; --verbose\n"
		   "prints each update (and each block device uevent: 'uevent ACTION NODE').\n");
}

int dev_watch_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' }, { "timeout", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' }, { "no-node-watch", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct watch w = { .ifd = -1, .node_watch = true };
	struct sigaction sa = { .sa_handler = watch_on_signal };   /* no SA_RESTART: poll wakes */
	enum devdb_uevent_source src = DEVDB_UEVENT_AUTO;
	_cleanup_(devdb_uevents_freep) struct devdb_uevents *ev = NULL;
	const char *source = getenv("PONY_UEVENT_SOURCE");
	const char *dbpath = NULL;
	double timeout = 0;
	char **dirs = NULL;
	size_t ndirs = 0;
	uint64_t end;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dbpath = optarg; break;
		case 't':
			if (cli_parse_seconds("pony dev watch", "--timeout", optarg, 0, 31536000, &timeout))
				return CLI_EXIT_USAGE;
			break;
		case 'v': w.verbose = true; break;
		case 'n': w.node_watch = false; break;
		case 'h':
			watch_usage(stdout);
			return CLI_EXIT_OK;
		default:
			watch_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (source && !strcmp(source, "udev"))
		src = DEVDB_UEVENT_UDEV;
	else if (source && !strcmp(source, "kernel"))
		src = DEVDB_UEVENT_KERNEL;
	else if (source && *source)
		return cli_usage_error("pony dev watch",
				       "PONY_UEVENT_SOURCE must be 'kernel' or 'udev', not '%s'",
				       source);
	r = devdb_open(dbpath, 0, &w.db);
	if (r < 0)
		return cli_error("cannot open the device database: %s", strerror(-r));
	w.ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w.ifd < 0) {
		devdb_close(w.db);
		return cli_error("inotify: %s", strerror(errno));
	}
	for (int i = optind; i < argc; i++) {
		char *abs = realpath(argv[i], NULL);

		if (!abs) {
			cli_error("%s: %s", argv[i], strerror(errno));
			continue;
		}
		watch_add(&w, abs, true);
		free(abs);
	}
	if (devdb_image_dirs(w.db, &dirs, &ndirs) == 0) {
		for (size_t i = 0; i < ndirs; i++) {
			watch_add(&w, dirs[i], true);
			free(dirs[i]);
		}
		free(dirs);
	}
	if (w.node_watch)
		add_block_nodes(&w);
	r = devdb_uevents_open(src, &ev);
	if (r < 0)
		cli_error("no device events (%s): only inotify", strerror(-r));
	fprintf(stderr, "pony: watching %d paths%s\n", w.nwd, !ev ? "" :
		devdb_uevents_source(ev) == DEVDB_UEVENT_UDEV ? " and udev events" :
		" and kernel uevents");
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	end = timeout > 0 ? util_now_ns() + (uint64_t)(timeout * 1e9) : 0;
	while (!watch_stop) {
		struct pollfd pfd[2] = { { .fd = w.ifd, .events = POLLIN },
					 { .fd = ev ? devdb_uevents_fd(ev) : -1, .events = POLLIN } };
		int ms = -1;

		if (end) {
			uint64_t now = util_now_ns();

			if (now >= end)
				break;
			ms = (int)((end - now) / 1000000) + 1;
		}
		if (poll(pfd, 2, ms) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN)
			handle_inotify(&w);
		if (ev && (pfd[1].revents & POLLIN))
			handle_uevent(&w, ev);
	}
	for (int i = 0; i < w.nwd; i++)
		free(w.wpath[i]);
	close(w.ifd);
	devdb_close(w.db);
	return CLI_EXIT_OK;
}
