/*
 * cmd_ponyfs.c - `pony mkfs`, `pony mount` and `pony fsck`: ponyfs on one
 * image (both regions on it) or on a pony volume of several images, whose
 * regions the volume lays out (metadata mirrored, data RAID6 or as asked).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pony/fuse.h"
#include "pony/layoutd.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "mount_helper.h"
#include "ponyfs.h"
#include "table.h"
#include "vol.h"

#define MAX_IMAGES 32

static bool is_ponyfs_image(struct bdev *dev)
{
	char magic[8];

	return bdev_size(dev) >= 8 && bdev_pread(dev, magic, 8, 0) == 0 && !memcmp(magic, "PONYFS1", 8);
}

static int layout_for(enum volume_target_type t, unsigned *ret)
{
	*ret = 0;
	switch (t) {
	case VOLUME_RAID5: return volume_layout_from_name(5, "left-symmetric", ret);
	case VOLUME_RAID6: return volume_layout_from_name(6, "left-symmetric", ret);
	case VOLUME_RAID10: return volume_layout_from_name(10, "n2", ret);
	default: return 0;
	}
}

/* A pony volume with a metadata and a data region, and ponyfs on them. */
static int mkfs_volume(struct bdev **devs, int n, enum volume_target_type data_type,
		       enum volume_target_type meta_type, uint64_t chunk, bool assume_clean,
		       const struct ponyfs_mkfs_options *o)
{
	uint64_t smallest = UINT64_MAX;
	struct volume_region_spec specs[2] = {
		{ .cls = VOLUME_CLASS_METADATA, .type = meta_type, .chunk = 64 << 10 },
		{ .cls = VOLUME_CLASS_DATA, .type = data_type, .chunk = chunk },
	};
	struct volume_set_params p = { .name = o->label ? o->label : "ponyfs", .regions = specs,
				       .nregions = 2, .assume_clean = assume_clean };
	struct volume_set *set = NULL;
	struct bdev *meta = NULL, *data = NULL;
	int r;

	for (int i = 0; i < n; i++)
		smallest = MIN(smallest, bdev_size(devs[i]));
	specs[0].size = ROUND_UP(MAX(smallest / 16, 8ull << 20), 1ull << 20);
	r = layout_for(meta_type, &specs[0].layout);
	if (r >= 0)
		r = layout_for(data_type, &specs[1].layout);
	if (r >= 0) {
		struct util_progress sync_bar;

		util_progress_init(&sync_bar, "initial sync", 0);
		p.progress = vol_progress;
		p.progress_arg = &sync_bar;
		r = volume_set_create(devs, (unsigned)n, &p, &set);
		util_progress_done(&sync_bar);
	}
	if (r < 0) {
		for (int i = 0; i < n; i++)
			bdev_free(devs[i]);
		return cli_error("cannot create the volume: %s", strerror(-r));
	}
	r = ponyfs_volume_region(volume_set_volume(set), VOLUME_CLASS_METADATA, &meta);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(set), VOLUME_CLASS_DATA, &data);
	if (r >= 0)
		r = ponyfs_mkfs(meta, data, o);
	bdev_free(meta);
	bdev_free(data);
	if (volume_set_close(set) < 0 && r >= 0)
		r = -EIO;
	return r < 0 ? cli_error("mkfs failed: %s", strerror(-r)) : CLI_EXIT_OK;
}

static int mkfs_run(int argc, char **argv)
{
	struct ponyfs_mkfs_options o = { 0 };
	enum volume_target_type data_type = VOLUME_RAID6, meta_type = VOLUME_MIRROR;
	bool data_given = false, assume_clean = false;
	uint64_t chunk = 64 << 10;
	struct bdev *devs[MAX_IMAGES];
	char *used[MAX_IMAGES];
	int c, n, r;

	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'D' },
		{ "metadata", required_argument, NULL, 'M' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "label", required_argument, NULL, 'L' },
		{ "assume-clean", no_argument, NULL, 'a' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cli_targets targets = { .cmd = "pony mkfs" };

	optind = 1;
	while ((c = getopt_long(argc, argv, "L:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'D':
			if (volume_target_from_name(optarg, &data_type) < 0)
				return cli_usage_error("pony mkfs", "unknown data layout '%s'", optarg);
			data_given = true;
			break;
		case 'M':
			/* "mirror3" style: a mirror over every member, however many. */
			if (strncmp(optarg, "mirror", 6) && volume_target_from_name(optarg, &meta_type) < 0)
				return cli_usage_error("pony mkfs", "unknown metadata layout '%s'", optarg);
			break;
		case 'c':
			if (cli_parse_size("pony mkfs", "--chunk", optarg, 4096, 1u << 30, 4096, &chunk))
				return CLI_EXIT_USAGE;
			break;
		case 'L': o.label = optarg; break;
		case 'a': assume_clean = true; break;
		case 'f': targets.force = true; break;
		case 'h':
			printf("Usage: pony mkfs [--data raid6|raid5|raid10|mirror|striped|linear]\n"
			       "                 [--metadata mirror|mirror3] [--chunk SIZE] [--label L]\n"
			       "                 [--assume-clean] [-f] IMG...\n"
			       "Makes a ponyfs. One image holds both regions itself; several images\n"
			       "become a pony volume with a mirrored metadata region and a data\n"
			       "region laid out as --data says (default raid6). --assume-clean skips\n"
			       "the initial parity sync of zeroed images.\n"
			       "mkfs refuses an image that holds a filesystem, a volume member or a\n"
			       "partition table devdb recognises (-f/--force overwrites it), one in\n"
			       "use by a running pony or mounted, and an image given twice; members\n"
			       "of different sizes are used up to the smallest, with a warning.\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error("pony mkfs", "bad option");
		}
	}
	n = argc - optind;
	if (n < 1 || n > MAX_IMAGES)
		return cli_usage_error("pony mkfs", "one to %d images are needed", MAX_IMAGES);
	if (o.label && strlen(o.label) > 31)
		return cli_usage_error("pony mkfs", "the label is longer than 31 bytes");
	r = cli_targets_check(&targets, argv + optind, n);
	if (!r)
		r = cli_open_members(argv + optind, n, O_RDWR, false, false, devs, used, &n);
	if (r)
		return r;
	if (n == 1 && !data_given) {
		r = ponyfs_mkfs_image(devs[0], &o);
		bdev_free(devs[0]);
		return r < 0 ? cli_error("%s: %s", argv[optind], strerror(-r)) : CLI_EXIT_OK;
	}
	return mkfs_volume(devs, n, data_type, meta_type, chunk, assume_clean, &o);
}

/* What a mounted or checked ponyfs stands on. */
struct stand {
	struct volume_set *set;
	struct bdev *meta, *data;
	struct bdev *image;
	char *names[MAX_IMAGES];        /* the volume's devices as given (--auto-readd) */
	int nnames;
	struct util_progress spare_bar; /* a rebuild onto a hot spare: `pony vol detail` sees it */
};

static void stand_done(struct stand *s)
{
	for (int i = 0; i < s->nnames; i++)
		free(s->names[i]);
	bdev_free(s->meta);
	bdev_free(s->data);
	bdev_free(s->image);
	volume_set_close(s->set);       /* stops the spare worker first */
	util_progress_done(&s->spare_bar);
}

/* What an error from opening or mounting means to the person who typed it. */
static const char *why(int r)
{
	switch (r) {
	case -EUCLEAN: return "corrupt or truncated (pony fsck says more)";
	case -EXDEV: return "a member of another pony volume";
	case -EPROTONOSUPPORT: return "made by a newer pony";
	default: return strerror(-r);
	}
}

static void free_paths(char **paths, int n)
{
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

enum {
	STAND_DEGRADED = 1,     /* --degraded: a volume may start with members absent */
	STAND_CHECK = 2,        /* fsck without --repair: a degraded volume is looked at read-only */
	STAND_RDONLY = 4,       /* nothing is written, not even the volume's superblocks (fsck -n) */
};

/*
 * The pony volume of devs (handed over on success), each absent member
 * named on stderr. Members absent need --degraded (a write would leave
 * them stale), but a check writes nothing and may look read-only.
 */
static int stand_volume(char **paths, int n, struct bdev **devs, unsigned flags,
			struct stand *s)
{
	unsigned vflags = (flags & STAND_DEGRADED ? VOLUME_SET_DEGRADED : 0) |
			  (flags & STAND_RDONLY ? VOLUME_SET_RDONLY : 0);
	struct volume_set_assembly a;
	int r = volume_set_assemble(devs, (unsigned)n, vflags, &s->set, &a);

	if (r == -ENXIO && (flags & STAND_CHECK)) {
		vflags = VOLUME_SET_RDONLY | VOLUME_SET_DEGRADED;
		r = volume_set_assemble(devs, (unsigned)n, vflags, &s->set, &a);
	}
	if (r == -ENODATA)
		r = cli_error("%s: not a ponyfs or a pony volume", paths[a.device < (unsigned)n ?
									 a.device : 0]);
	else if (r < 0)
		r = vol_assembly_error(r, &a, paths, (unsigned)n);
	if (r) {
		for (int i = 0; i < n; i++)
			bdev_free(devs[i]);
		return r;
	}
	vol_print_absent(&a);
	vol_print_degraded(&a, vflags & VOLUME_SET_RDONLY);
	if (!(vflags & VOLUME_SET_RDONLY))
		vol_watch_spare(s->set, &s->spare_bar);
	return 0;
}

static int stand_open(char **paths, int n, unsigned flags, struct stand *s)
{
	struct bdev *devs[MAX_IMAGES];
	char *used[MAX_IMAGES];
	int nused;
	char **found = NULL;
	int r;

	memset(s, 0, sizeof(*s));
	if (n == 1 && cli_ponyfs_is_spec(paths[0])) {
		r = cli_ponyfs_find_members(paths[0], &found, &n, MAX_IMAGES);
		if (r)
			return r;
		paths = found;
		r = cli_ponyfs_lock_images(paths, n);
		if (r) {
			free_paths(found, n);
			return r;
		}
	}
	r = cli_open_members(paths, n, flags & STAND_RDONLY ? O_RDONLY : O_RDWR, false,
			     flags & (STAND_DEGRADED | STAND_CHECK), devs, used, &nused);
	if (r) {
		free_paths(found, found ? n : 0);
		return r;
	}
	if (nused == 1 && n == 1 && is_ponyfs_image(devs[0])) {
		s->image = devs[0];
		return 0;
	}
	r = stand_volume(used, nused, devs, flags, s);
	for (int i = 0; !r && i < n; i++)
		if ((s->names[s->nnames] = strdup(paths[i])))
			s->nnames++;
	free_paths(found, found ? n : 0);
	if (r)
		return r;
	r = ponyfs_volume_region(volume_set_volume(s->set), VOLUME_CLASS_METADATA, &s->meta);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(s->set), VOLUME_CLASS_DATA, &s->data);
	if (r < 0) {
		stand_done(s);
		return cli_error("the volume has no ponyfs regions: %s", strerror(-r));
	}
	return 0;
}

/* What starts once the mount serves (after its fork): threads. */
struct serving {
	struct layoutd *layoutd;        /* NULL: none */
	struct stand *s;
	bool auto_readd;
	struct volume_autoreadd *readd; /* started */
};

/* ponyfuse_options.serving: the layout socket's thread, the re-add thread. */
static int serving_start(void *arg)
{
	struct serving *sv = arg;
	int r = sv->layoutd ? layoutd_start(sv->layoutd) : 0;

	if (r >= 0 && sv->auto_readd)
		r = volume_autoreadd_start(sv->s->set, (const char *const *)sv->s->names,
					   (unsigned)sv->s->nnames, cli_member_timeout_ms(), 0,
					   &sv->readd);
	return r;
}

static int mount_main(const char *fsname, int argc, char **argv)
{
	/* One worker thread: one lock serialises ponyfs anyway, and more workers
	 * only add cross-thread wake-ups (an untar of 3,000 files: 2.9 s and
	 * 640 us of daemon CPU a file with libfuse's default, 0.6 s and 90 us
	 * with one). The kernel keeps names and attributes for a day: ponyfs is
	 * their only writer, and every change goes through this mount, so the
	 * kernel's copies never go stale (no LOOKUP or GETATTR a second after
	 * the last one, as a 1 s timeout sent). ponyfs drops set-ID bits itself
	 * on write, truncation and chown (attr.c), so the kernel hands that to
	 * it (KILLPRIV_V2): no GETATTR before each chown, one round trip of
	 * the twelve an untar pays per file. A close sends no FLUSH
	 * (FOPEN_NOFLUSH): ponyfs has nothing to do there, as a write reached
	 * it before write(2) returned and locks are the kernel's; another of
	 * the eleven left (docs/fuse-requests.md). Requests come over
	 * FUSE-over-io_uring rings where the kernel has them, one thread per
	 * CPU serving its own CPU's callers (the single worker only serves
	 * what still comes over /dev/fuse): a /dev/fuse round trip wakes
	 * two halted vCPUs, and an untar ran three times as fast over the
	 * rings (docs/fuse-uring.md, "ponyfs"). A write-only open is direct
	 * I/O: its first write costs no GETXATTR of security.capability,
	 * which the front end drops itself (direct_wronly). */
	struct ponyfuse_options fo = { .subtype = "pony", .timeout = 86400.0, .max_threads = 1,
				       .posix_acl = true, .export_support = true, .killpriv = true,
				       .noflush = true, .direct_wronly = true, .io_uring = true };
	struct ponyfs_options po = { .commit_ms = 5000 };
	_cleanup_(vfs_freep) struct vfs *fs = NULL;
	struct stand s;
	struct mount_opts mo = { 0 };
	unsigned stand = 0;
	int c, n, r;

	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "commit", required_argument, NULL, 'c' },
		{ "options", required_argument, NULL, 'o' },
		{ "log", required_argument, NULL, 'G' },
		{ "degraded", no_argument, NULL, 'D' },
		{ "layout-lease", required_argument, NULL, 'L' },
		{ "layout-socket", required_argument, NULL, 'S' },
		{ "layout-listen", required_argument, NULL, 'T' },
		{ "layout-psk", required_argument, NULL, 'K' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "auto-readd", no_argument, NULL, 'A' },
		{ "no-io-uring", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct serving sv = { 0 };
	const char *log_file = NULL, *layout_socket = NULL, *layout_listen = NULL, *layout_psk = NULL;
	bool insecure = false;
	struct layoutd *layoutd = NULL;
	char mnt[PATH_MAX];
	unsigned lease_s;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fdc:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'G': log_file = optarg; break;
		case 'f': fo.foreground = true; break;
		case 'd': fo.debug = fo.foreground = true; break;
		case 'c':
			if (cli_parse_unsigned("pony mount", "--commit", optarg, 0, 3600000, &po.commit_ms))
				return CLI_EXIT_USAGE;
			break;
		case 'D': stand |= STAND_DEGRADED; break;
		case 'L':
			if (cli_parse_unsigned("pony mount", "--layout-lease", optarg, 1, 86400, &lease_s))
				return CLI_EXIT_USAGE;
			po.layout_lease_ms = lease_s * 1000ull;
			break;
		case 'S': layout_socket = optarg; break;
		case 'T': layout_listen = optarg; break;
		case 'K': layout_psk = optarg; break;
		case 'I': insecure = true; break;
		case 'A': sv.auto_readd = true; break;
		case 'N': fo.io_uring = false; break;
		case 'o':
			r = cli_ponyfs_mount_opts(optarg, &po, &fo, &mo);
			if (r)
				return r;
			break;
		case 'h':
			printf("Usage: pony mount [-f] [-d] [--commit MS] [--degraded] [--auto-readd]\n"
			       "                  [--log FILE] [--no-io-uring]\n"
			       "                  [--layout-lease SECONDS] [--layout-socket PATH]\n"
			       "                  [--layout-listen ADDR --layout-psk FILE|--insecure]\n"
			       "                  [-o OPTS]\n"
			       "                  IMG...|UUID=U|LABEL=L MNT\n"
			       "       mount -t fuse.pony SRC MNT [-o OPTS]   (fstab: SRC MNT fuse.pony OPTS)\n"
			       "Mounts the ponyfs on IMG (or on the pony volume of the images) at\n"
			       "MNT through FUSE. UUID= or LABEL= names a pony volume whose members\n"
			       "the device database knows ($PONY_DEVDB; pony dev scan DIR adds\n"
			       "them). Metadata commits every --commit milliseconds (default\n"
			       "5000), on fsync and on `pony sync MNT`.\n"
			       "--degraded mounts a volume with members missing, stale or\n"
			       "truncated (named on stderr; they go stale until `pony vol add`\n"
			       "rebuilds them); without it such a mount is refused.\n"
			       "--auto-readd: a member on an NBD server that fails (or is absent)\n"
			       "is tried again with backoff while mounted; when its server\n"
			       "answers with the same member, it is re-added online and only what\n"
			       "the write-intent bitmap marks is resynced (docs/nbd.md).\n"
			       "Requests come over FUSE-over-io_uring rings where the kernel has\n"
			       "them (6.14+; the fuse module's enable_uring is turned on for the\n"
			       "machine, and said so): a request is served on its caller's CPU,\n"
			       "about three times an untar's rate over /dev/fuse on a VM\n"
			       "(docs/fuse-uring.md). --no-io-uring serves over /dev/fuse only.\n"
			       "--layout-lease: how long a layout lease holds (default 30 s;\n"
			       "docs/layout.md): blocks a lease names are not reused before.\n"
			       "--layout-socket: also serve layouts and leases, with recalls\n"
			       "pushed, on a Unix socket at PATH (docs/layout.md).\n"
			       "--layout-listen: the same on TCP at HOST:PORT for other hosts,\n"
			       "in TLS with a key of --layout-psk FILE (IDENTITY:HEXKEY lines, as\n"
			       "psktool writes); --insecure serves it in the clear instead.\n"
			       "mount(8)'s SRC: IMG, IMG1:IMG2:... (the members; \\: is a colon in\n"
			       "a name), or pony:UUID=U / pony:LABEL=L (mount(8) looks plain UUID=\n"
			       "and LABEL= up in libblkid, which knows no pony volume).\n"
			       "-o takes mount(8) options. Pony's own: commit=MS, format (mkfs\n"
			       "IMG first when its first MiB is all zeros), format=foreign (also\n"
			       "when IMG is not pony's), relatime (the default), strictatime,\n"
			       "noatime, nodiratime, meta_cache=SIZE (metadata kept in memory, default\n"
			       "16M: all the daemon holds per file), subtype=NAME (the type\n"
			       "fuse.NAME, default fuse.pony; empty: plain fuse, as fstests wants),\n"
			       "no_io_uring (as --no-io-uring);\n"
			       "mount(8)'s own (defaults, nofail, _netdev, x-*...) are dropped;\n"
			       "the rest go to FUSE. docs/ponyfs-mount.md has the fstab lines.\n" CLI_LOG_HELP);
			return CLI_EXIT_OK;
		default: return cli_usage_error("pony mount", "bad option");
		}
	}
	n = argc - optind - 1;
	if (n < 1 || n > MAX_IMAGES)
		return cli_usage_error("pony mount", "IMG... and MNT are needed");
	if (layout_listen && !layout_psk && !insecure)
		return cli_usage_error("pony mount", "--layout-listen needs --layout-psk FILE "
				       "(or --insecure to serve layouts in the clear)");
	if (layout_psk && !layout_listen)
		return cli_usage_error("pony mount", "--layout-psk is for --layout-listen");
	if (mo.remount)
		return cli_mount_remount(argv[argc - 1], mo.fuse);
	/* Before an image is touched: a dead mount there says so. */
	if (cli_check_dir("mount point", argv[argc - 1]))
		return CLI_EXIT_FAILURE;
	if (n == 1 && !cli_ponyfs_is_spec(argv[optind])) {
		bool bound;

		r = cli_ponyfs_bind_existing(argv[optind], argv[argc - 1], po.read_only, &bound);
		if (r || bound)
			return r;
	}
	fo.mount_opts = mo.fuse;
	/* strictatime: each open's reads must reach ponyfs to move atime (the
	 * kernel leaves a FUSE file's atime to it and serves cached pages
	 * without a word). Reads within one open still count once. */
	fo.reread_on_open = po.atime == PONYFS_ATIME_ALWAYS;
	r = cli_ponyfs_lock_images(argv + optind, n);
	if (!r && (mo.format || mo.format_foreign) && n == 1)
		r = cli_ponyfs_format(argv[optind], mo.format_foreign);
	if (!r)
		r = stand_open(argv + optind, n, stand, &s);
	if (r)
		return r;
	if (cli_log_open("pony mount", log_file, fo.foreground)) {
		stand_done(&s);
		return CLI_EXIT_FAILURE;
	}
	if (sv.auto_readd && !s.set) {
		stand_done(&s);
		return cli_usage_error("pony mount", "--auto-readd is for a volume's members");
	}
	po.volume = s.set ? volume_set_volume(s.set) : NULL;      /* layouts name its members */
	r = s.image ? ponyfs_mount_image(s.image, &po, &fs) : ponyfs_mount(s.meta, s.data, &po, &fs);
	if (r < 0) {
		stand_done(&s);
		return cli_error("%s: cannot mount: %s", argv[optind], why(r));
	}
	if (layout_socket || layout_listen) {
		/* Bound now, so a bad address is this command's error; served once mounted. */
		const char *what = layout_socket ? layout_socket : layout_listen;

		r = realpath(argv[argc - 1], mnt) ? layoutd_open(fs, layout_socket, mnt, &layoutd)
						   : -errno;
		if (r >= 0 && layout_listen) {
			what = layout_listen;
			r = layoutd_listen_tcp(layoutd, layout_listen, insecure ? NULL : layout_psk);
			if (r < 0 && layout_psk && (r == -EINVAL || r == -ENOKEY || r == -ENOENT))
				what = layout_psk;
		}
		if (r < 0) {
			layoutd_stop(layoutd);
			vfs_free(TAKE_PTR(fs));
			stand_done(&s);
			return cli_error("%s: cannot serve layouts: %s", what,
					 r == -ENOKEY ? "no IDENTITY:HEXKEY line in it" : why(r));
		}
	}
	sv.layoutd = layoutd;
	sv.s = &s;
	if (sv.layoutd || sv.auto_readd) {
		fo.serving = serving_start;
		fo.serving_arg = &sv;
	}
	umask(0);
	r = cli_fuse_serve(fs, argv[argc - 1], fsname ? fsname : argv[optind], &fo);
	volume_autoreadd_stop(sv.readd);
	layoutd_stop(layoutd);
	vfs_free(TAKE_PTR(fs));
	stand_done(&s);
	return r;
}

static int mount_run(int argc, char **argv)
{
	return mount_main(NULL, argc, argv);
}

int cli_ponyfs_mount_as(const char *fsname, int argc, char **argv)
{
	return mount_main(fsname, argc, argv);
}

/* fsck(8)'s exit codes, added together as it does. */
enum {
	FSCK_EXIT_OK = 0,
	FSCK_EXIT_FIXED = 1,            /* problems found, all fixed */
	FSCK_EXIT_LEFT = 4,             /* problems left as they are */
	FSCK_EXIT_ERROR = 8,            /* could not check (cannot open, truncated, corrupt) */
	FSCK_EXIT_USAGE = 16,
};

struct fsck_out {
	const char *dev;                /* as the user named it */
	const char *mode;               /* "check", "preen" or "repair" */
	struct cli_table *problems;     /* --json: the problems, printed at the end; NULL: lines */
};

static void fsck_report(void *arg, const struct ponyfs_fsck_problem *p)
{
	struct fsck_out *o = arg;
	struct cli_table_line *l;

	if (!o->problems) {
		printf("%s: %s\n", p->path ? p->path : o->dev, p->text);
		return;
	}
	l = cli_table_line(o->problems, NULL);
	cli_table_set(l, 0, "%s", p->check);
	if (p->ino)
		cli_table_set_u64(l, 1, p->ino);
	else
		cli_table_set(l, 1, NULL);
	cli_table_set(l, 2, p->path ? "%s" : NULL, p->path);
	cli_table_set(l, 3, "%s", p->text);
	cli_table_set_bool(l, 4, p->fixed);
}

static int fsck_exit(int r, const struct ponyfs_fsck_result *res)
{
	/* A check that stopped leaves what it found unfixed: that is the 8. */
	if (r < 0)
		return FSCK_EXIT_ERROR | (res->fixed ? FSCK_EXIT_FIXED : 0);
	return (res->fixed ? FSCK_EXIT_FIXED : 0) | (res->found > res->fixed ? FSCK_EXIT_LEFT : 0);
}

/* --json's problems table, filled as the check reports. */
static struct cli_table *fsck_problems_table(void)
{
	struct cli_table *t = cli_table_new("problems", true);

	cli_table_column(t, "check", 0);
	cli_table_column(t, "inode", CLI_COL_NUMBER);
	cli_table_column(t, "path", CLI_COL_WRAP);
	cli_table_column(t, "problem", CLI_COL_WRAP);
	cli_table_column(t, "fixed", CLI_COL_BOOL);
	return t;
}

/* The summary: a line, or with --json the record of the run beside its problems. */
static void fsck_summary(struct fsck_out *o, int r, const struct ponyfs_fsck_result *res)
{
	unsigned left = res->found - res->fixed;

	if (o->problems) {
		struct cli_record *rec = cli_record_new("fsck", true);

		cli_record_set(rec, "device", 0, "%s", o->dev);
		cli_record_set(rec, "mode", 0, "%s", o->mode);
		cli_record_set_u64(rec, "found", res->found);
		cli_record_set_u64(rec, "fixed", res->fixed);
		cli_record_set_u64(rec, "left", left);
		cli_record_set_u64(rec, "mirror_unsynced", res->mirror_unsynced);
		cli_record_set(rec, "error", 0, r < 0 ? "%s" : NULL, strerror(-r));
		cli_record_set_u64(rec, "exit", (uint64_t)fsck_exit(r, res));
		cli_tables_print((struct cli_table *[]){ cli_record_table(rec), o->problems }, 2);
		o->problems = NULL;
	} else {
		if (res->mirror_unsynced)
			printf("%s: %llu bytes of the metadata mirror's copies differ where writes "
			       "were in flight at an unclean shutdown; the next writable open resyncs "
			       "them\n", o->dev, (unsigned long long)res->mirror_unsynced);
		if (r >= 0 && !res->found)
			printf("%s: clean\n", o->dev);
		else if (r >= 0)
			printf("%s: %u problem%s: %u fixed, %u left\n", o->dev, res->found,
			       res->found == 1 ? "" : "s", res->fixed, left);
	}
	if (r < 0)
		cli_error("%s: cannot check%s: %s", o->dev, res->found ? " further" : "",
			  r == -EUCLEAN ? "corrupt or truncated (the lines above say where)" : why(r));
}

static int fsck_usage(const char *why_not)
{
	cli_usage_error("pony fsck", "%s", why_not);
	return FSCK_EXIT_USAGE;
}

static int fsck_run(int argc, char **argv)
{
	unsigned flags = PONYFS_FSCK_DATA;
	bool no = false;                /* -n */
	struct ponyfs_fsck_result res = { 0 };
	struct fsck_out o = { 0 };
	struct ponyfs_fsck_params p = { .report = fsck_report, .report_arg = &o };
	struct util_progress bar;
	bool json = false;
	unsigned stand = 0;
	struct stand s;
	int c, n, r;

	static const struct option longopts[] = {
		{ "repair", no_argument, NULL, 'y' },
		{ "no-data", no_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'J' },
		{ "degraded", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "nypafh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': no = true; break;
		case 'y': flags |= PONYFS_FSCK_REPAIR; break;
		case 'p': case 'a': flags |= PONYFS_FSCK_PREEN; break;
		case 'f': break;        /* every run is a full check: there is no clean flag to trust */
		case 'D': flags &= ~(unsigned)PONYFS_FSCK_DATA; break;
		case 'J': json = true; break;
		case 'G': stand |= STAND_DEGRADED; break;
		case 'h':
			printf("Usage: pony fsck [-n|-y|-p] [-f] [--no-data] [--json] [--degraded]\n"
			       "                 IMG...|UUID=U|LABEL=L\n"
			       "Checks an unmounted ponyfs: the superblock and the image's size, the\n"
			       "copies of a volume's metadata mirror, SQLite's integrity, reachability,\n"
			       "orphans, link counts, extents, free space and every block's checksum.\n"
			       "Problems name files by path (inode number when no path reaches them).\n"
			       "  -n         check only, read-only: not a byte is written (the default)\n"
			       "  -y         repair all that can be: also drops entries from non-directories\n"
			       "             and stray extents, links unreachable files into /lost+found\n"
			       "             (--repair is the same)\n"
			       "  -p, -a     preen: repair what needs no decision (link counts, orphans,\n"
			       "             free space, names of nothing, checksums from redundancy, the\n"
			       "             metadata mirror from the one copy that is a clean database)\n"
			       "  -f         force a full check: accepted for fsck(8); every check is full\n"
			       "  --no-data  skip reading data blocks for their checksums\n"
			       "  --json     JSON: the run's record (counts, exit) and its problems\n"
			       "  --degraded -y/-p on a volume with members missing, stale or truncated\n"
			       "             (without it such a volume is only checked, read-only)\n"
			       "Exit status, added together as fsck(8)'s: 0 clean; 1 problems fixed; 4\n"
			       "problems left; 8 could not check (cannot open, truncated, corrupt);\n"
			       "16 usage. docs/fsck.md says more.\n");
			return CLI_EXIT_OK;
		default:
			return fsck_usage("bad option");
		}
	}
	if (no + !!(flags & PONYFS_FSCK_REPAIR) + !!(flags & PONYFS_FSCK_PREEN) > 1)
		return fsck_usage("-n, -y and -p exclude each other");
	n = argc - optind;
	if (n < 1 || n > MAX_IMAGES)
		return fsck_usage("one or more images are needed");
	r = cli_ponyfs_lock_images(argv + optind, n);
	no = !(flags & (PONYFS_FSCK_REPAIR | PONYFS_FSCK_PREEN));
	if (no)
		stand |= STAND_CHECK | STAND_RDONLY;
	if (!r)
		r = stand_open(argv + optind, n, stand, &s);
	if (r)
		return FSCK_EXIT_ERROR;
	o.dev = argv[optind];
	o.mode = flags & PONYFS_FSCK_REPAIR ? "repair" : flags & PONYFS_FSCK_PREEN ? "preen" : "check";
	if (json)
		o.problems = fsck_problems_table();
	p.flags = flags;
	p.volume = s.set ? volume_set_volume(s.set) : NULL;
	p.set = s.set;
	util_progress_init(&bar, "checking file data", 0);
	p.progress = vol_progress;
	p.progress_arg = &bar;
	r = s.image ? ponyfs_fsck_run_image(s.image, &p, &res) : ponyfs_fsck_run(s.meta, s.data, &p, &res);
	util_progress_done(&bar);
	stand_done(&s);
	fsck_summary(&o, r, &res);
	return fsck_exit(r, &res);
}

const struct cli_command cli_mkfs_command = {
	.name = "mkfs",
	.summary = "make a ponyfs on an image or a pony volume of images",
	.run = mkfs_run,
};

const struct cli_command cli_mount_command = {
	.name = "mount",
	.summary = "mount a ponyfs through FUSE",
	.run = mount_run,
};

const struct cli_command cli_fsck_command = {
	.name = "fsck",
	.summary = "check (and repair) an unmounted ponyfs",
	.run = fsck_run,
};
