/*
 * mount.c - a FUSE session's life: mount with fsname= the source (so df and
 * mount name it), daemonize unless told to stay in the foreground, serve with
 * libfuse's multithreaded loop, and unmount cleanly when the loop ends, which
 * SIGINT, SIGTERM and SIGHUP make it do.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "pony/util.h"

/* fsname= and subtype= values: libfuse's option parser splits on commas. */
static int escape_opt(char *dst, size_t len, const char *src)
{
	size_t j = 0;

	for (; *src; src++) {
		if (j + 3 >= len)
			return -ENAMETOOLONG;
		if (*src == ',' || *src == '\\')
			dst[j++] = '\\';
		dst[j++] = *src;
	}
	dst[j] = '\0';
	return 0;
}

/* A mountinfo path field in place: \ooo escapes (space, tab, newline, \\). */
static void unescape_mountinfo(char *s)
{
	char *d = s;

	for (; *s; s++, d++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d = *s;
		}
	}
	*d = '\0';
}

/*
 * The kernel gives a FUSE mount the block layer's default readahead, 128
 * KiB: INIT's max_readahead can only lower it. A sequential read of a large
 * file then costs a READ round trip per 128-256 KiB. As root, raise the
 * mount's bdi to what INIT asks (a cold 1 GiB read through a union: 4x fewer
 * READs, median 351 -> 278 ms over 7 alternating runs): PONYFUSE_READAHEAD_READS
 * READs' worth (ponyfuse_readahead()). With one READ's worth the kernel
 * kept one READ in flight most of the time, so a READ's whole latency (an
 * encrypted file's decryption too) was paid in series; with four, the
 * next window's READs reach the read helpers while the last ones are
 * answered (pooled_reads_peak). A whole multiple of the READ size, since a
 * window larger than its READs by a few pages costs a small READ more each
 * (only the kernel's ramp to it, windows of 1 and 2 MiB after small
 * reads, leaves one each, once per stream).
 * The device comes
 * from /proc/self/mountinfo, the last mount on real (the mount point's path,
 * resolved before mounting: a stat of it now would wait for this daemon).
 * Without root or sysfs nothing changes.
 */
static void raise_readahead(const char *real, unsigned kb)
{
	_cleanup_(fclosep) FILE *f = geteuid() == 0 ? fopen("/proc/self/mountinfo", "re") : NULL;
	char line[8192], path[64];
	unsigned maj = 0, min = 0, cur = 0;
	bool found = false;

	while (f && fgets(line, sizeof(line), f)) {
		char mnt[4096], type[64];
		unsigned a, b;

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &a, &b, mnt) != 3)
			continue;
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %63s", type) != 1 || strncmp(type, "fuse", 4))
			continue;
		unescape_mountinfo(mnt);
		if (!strcmp(mnt, real))
			maj = a, min = b, found = true;
	}
	if (!found)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	_cleanup_(fclosep) FILE *ra = fopen(path, "r+e");

	if (ra && fscanf(ra, "%u", &cur) == 1 && cur < kb) {
		rewind(ra);
		fprintf(ra, "%u\n", kb);
	}
}

/*
 * The largest READ whose answer libfuse can splice (max_read=, 0: no cap).
 * An answer whose data is a host file (ops.c's req_read over /dev/fuse)
 * goes by a pipe that libfuse wants three pages larger than the answer and
 * grows no further than /proc/sys/fs/pipe-max-size (1 MiB by default).
 * Past that it falls back to a buffer it maps, fills and unmaps for each
 * answer, and the kernel's 1 MiB READs (max_pages 256) all went that way:
 * a cold 1 GiB read through a union took 3.3 s of daemon CPU against 0.14
 * s spliced in 1008 KiB READs. So READs are capped to what the pipe holds.
 */
static unsigned splice_max_read(void)
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/sys/fs/pipe-max-size", "re");
	long page = sysconf(_SC_PAGESIZE);
	unsigned long pipe_max = 0;
	unsigned long room;

	if (!f || fscanf(f, "%lu", &pipe_max) != 1 || page <= 0)
		return 0;
	room = pipe_max - MIN(pipe_max, 3 * (unsigned long)page + sizeof(struct fuse_out_header));
	room -= room % (unsigned long)page;
	/* Below 32 pages a READ is small anyway, and above 1 MiB the kernel
	 * sends none larger: no cap. */
	if (room < 32 * (unsigned long)page || room >= (1ul << 20))
		return 0;
	return (unsigned)room;
}

int ponyfuse_mount(struct vfs *fs, const char *mountpoint,
		   const struct ponyfuse_options *opts, struct ponyfuse **ret)
{
	struct fuse_lowlevel_ops ops;
	char fsname[4200], subtype[300], optstr[8800], max_read[32] = "";
	unsigned read_cap = splice_max_read();
	const char *argv[] = { "pony", "-o", optstr, NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, (char **)argv);
	struct ponyfuse *pf;
	int r;

	r = escape_opt(fsname, sizeof(fsname), opts->fsname ? opts->fsname : "pony");
	if (r < 0)
		return r;
	/* No subtype at all when asked for "": the type is then plain "fuse",
	 * which is what fstests' FSTYP=fuse expects to find in /proc/mounts. */
	snprintf(subtype, sizeof(subtype), "subtype=%s,",
		 opts->subtype ? opts->subtype : "pony");
	if (opts->subtype && !*opts->subtype)
		subtype[0] = '\0';
	if (read_cap)
		snprintf(max_read, sizeof(max_read), ",max_read=%u", read_cap);
	r = snprintf(optstr, sizeof(optstr), "fsname=%s,%sdefault_permissions%s%s%s%s",
		     fsname, subtype, max_read, geteuid() == 0 ? ",allow_other,suid,dev" : "",
		     opts->mount_opts && *opts->mount_opts ? "," : "",
		     opts->mount_opts ? opts->mount_opts : "");
	if (r < 0 || (size_t)r >= sizeof(optstr))
		return -E2BIG;
	if (opts->debug)
		argv[args.argc++] = "-d";
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->fs = fs;
	pf->opts = *opts;
	pf->max_read = read_cap;
	pf->mountpoint = strdup(mountpoint);
	ponyfuse_init_ops(&ops);
	pf->se = pf->mountpoint ? fuse_session_new(&args, &ops, sizeof(ops), pf) : NULL;
	fuse_opt_free_args(&args);
	if (!pf->se) {
		/* Mostly an option libfuse does not know (it has said which on
		 * stderr: lazytime, strictatime, relatime in 3.14), not memory. */
		ponyfuse_free(pf);
		return -EINVAL;
	}
	char real[PATH_MAX];
	bool resolved = realpath(mountpoint, real) != NULL;

	/* Before the mount appears: whoever sees it may stop the daemon at
	 * once, and a signal that came before the handlers was lost (SIGINT,
	 * ignored in a shell's background job: the daemon served on) or
	 * killed the daemon with its mount left behind (SIGTERM). A signal
	 * now only marks the session exited; ponyfuse_run() then returns at
	 * once and ponyfuse_free() unmounts. */
	pf->signals_caught = true;      /* released by ponyfuse_free(), even half set */
	if (ponyfuse_stop_signals_catch(pf->se) < 0) {
		ponyfuse_free(pf);
		return -EIO;
	}
	if (fuse_session_mount(pf->se, mountpoint) != 0) {
		ponyfuse_free(pf);
		return -ENOTCONN;
	}
	pf->mounted = true;
	if (resolved)
		raise_readahead(real, ponyfuse_readahead(pf) / 1024);
	/* Passthrough only for an instance with host files behind its data,
	 * and without the writeback cache, which the kernel will not combine
	 * with it (negotiating it makes the mount a stacked filesystem). */
	if (!opts->no_passthrough && !opts->writeback && fs->ops->data_fd &&
	    ponyfuse_pt_new(&pf->pt) < 0) {
		ponyfuse_free(pf);
		return -ENOMEM;
	}
	if (ponyfuse_devio_setup(pf) < 0) {
		ponyfuse_free(pf);
		return -EIO;
	}
	*ret = pf;
	return 0;
}

int ponyfuse_run(struct ponyfuse *pf)
{
	struct fuse_loop_config *cfg;
	struct timespec started;
	int r;

	if (fuse_daemonize(pf->opts.foreground) != 0)
		return -EIO;
	/* A daemon's child serves: its stop signals go to this thread (stop.c). */
	if (pf->signals_caught)
		ponyfuse_stop_signals_loop_thread();
	cfg = fuse_loop_cfg_create();
	/* After daemonizing, which keeps only the calling thread. */
	if (!cfg || ((pf->fs->ops->data_fd || pf->fs->ops->read_parallel) &&
		     ponyfuse_readpool_start(pf) < 0)) {
		fuse_loop_cfg_destroy(cfg);
		return -ENOMEM;
	}
	r = pf->opts.serving ? pf->opts.serving(pf->opts.serving_arg) : 0;
	if (r < 0) {
		ponyfuse_readpool_stop(pf);
		fuse_loop_cfg_destroy(cfg);
		return r;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	if (pf->opts.max_threads)
		fuse_loop_cfg_set_max_threads(cfg, pf->opts.max_threads);
	clock_gettime(CLOCK_MONOTONIC, &started);
	r = fuse_session_loop_mt(pf->se, cfg);
	ponyfuse_reqlog_write(pf, &started);
	ponyfuse_readpool_stop(pf);
	fuse_loop_cfg_destroy(cfg);
	/* The loop ends on a signal (r is 0 or the signal), or on unmount. */
	return r < 0 ? r : 0;
}

int ponyfuse_transport_new(const struct ponyfuse_options *opts, struct ponyfuse **ret)
{
	struct ponyfuse *pf = calloc(1, sizeof(*pf));

	if (!pf)
		return -ENOMEM;
	pf->opts = *opts;
	pf->borrowed = true;
	*ret = pf;
	return 0;
}

int ponyfuse_transport_attach(struct ponyfuse *pf, struct fuse_session *se)
{
	pf->se = se;
	return ponyfuse_devio_setup(pf);
}

void ponyfuse_free(struct ponyfuse *pf)
{
	if (!pf)
		return;
	if (pf->signals_caught)
		ponyfuse_stop_signals_release();
	if (pf->borrowed) {
		/* The daemon's own session: it unmounts and destroys it. */
		ponyfuse_uring_stop(pf->uring);
	} else if (pf->se) {
		if (pf->mounted)
			fuse_session_unmount(pf->se);
		/* The rings hold /dev/fuse: close them before the session does. */
		ponyfuse_uring_stop(pf->uring);
		fuse_session_destroy(pf->se);
	}
	/* After the rings: their threads may hand READs to the pool. */
	ponyfuse_readpool_free(pf);
	ponyfuse_pt_free(pf->pt);
	ponyfuse_forget_fini(pf);
	free(pf->mountpoint);
	free(pf);
}
