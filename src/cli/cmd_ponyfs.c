/*
 * cmd_ponyfs.c - `pony mkfs`, `pony mount` and `pony fsck`: ponyfs on one
 * image (both regions on it) or on a pony volume of several images, whose
 * regions the volume lays out (metadata mirrored, data RAID6 or as asked).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pony/fuse.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "ponyfs.h"
#include "vol.h"

#define MAX_IMAGES 32

/* The images, opened read-write; on failure the ones opened are freed. */
static int open_images(char **paths, int n, struct bdev **devs)
{
	for (int i = 0; i < n; i++) {
		int r = bdev_file_open(paths[i], O_RDWR, &devs[i]);

		if (r < 0) {
			while (i--)
				bdev_free(devs[i]);
			return cli_error("%s: %s", paths[i], strerror(-r));
		}
	}
	return 0;
}

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
	if (r >= 0)
		r = volume_set_create(devs, (unsigned)n, &p, &set);
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
	int c, n, r;

	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'D' },
		{ "metadata", required_argument, NULL, 'M' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "label", required_argument, NULL, 'L' },
		{ "assume-clean", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "L:h", longopts, NULL)) != -1) {
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
			if (util_parse_size(optarg, &chunk) < 0 || !chunk || chunk % 4096)
				return cli_usage_error("pony mkfs", "bad chunk size '%s'", optarg);
			break;
		case 'L': o.label = optarg; break;
		case 'a': assume_clean = true; break;
		case 'h':
			printf("Usage: pony mkfs [--data raid6|raid5|raid10|mirror|striped|linear]\n"
			       "                 [--metadata mirror|mirror3] [--chunk SIZE] [--label L]\n"
			       "                 [--assume-clean] IMG...\n"
			       "Makes a ponyfs. One image holds both regions itself; several images\n"
			       "become a pony volume with a mirrored metadata region and a data\n"
			       "region laid out as --data says (default raid6). --assume-clean skips\n"
			       "the initial parity sync of zeroed images.\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error("pony mkfs", "bad option");
		}
	}
	n = argc - optind;
	if (n < 1 || n > MAX_IMAGES)
		return cli_usage_error("pony mkfs", "one to %d images are needed", MAX_IMAGES);
	if (o.label && strlen(o.label) > 31)
		return cli_usage_error("pony mkfs", "the label is longer than 31 bytes");
	r = open_images(argv + optind, n, devs);
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
};

static void stand_done(struct stand *s)
{
	bdev_free(s->meta);
	bdev_free(s->data);
	bdev_free(s->image);
	volume_set_close(s->set);
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
};

/*
 * The pony volume of devs (handed over on success), each absent member
 * named on stderr. Members absent need --degraded (a write would leave
 * them stale), but a check writes nothing and may look read-only.
 */
static int stand_volume(char **paths, int n, struct bdev **devs, unsigned flags,
			struct stand *s)
{
	unsigned vflags = flags & STAND_DEGRADED ? VOLUME_SET_DEGRADED : 0;
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
	return 0;
}

static int stand_open(char **paths, int n, unsigned flags, struct stand *s)
{
	struct bdev *devs[MAX_IMAGES];
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
	r = open_images(paths, n, devs);
	if (r) {
		free_paths(found, found ? n : 0);
		return r;
	}
	if (n == 1 && is_ponyfs_image(devs[0])) {
		s->image = devs[0];
		return 0;
	}
	r = stand_volume(paths, n, devs, flags, s);
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

/* Repairs done while mounted: a line on the daemon's stderr. */
static void mount_report(void *arg, const char *text)
{
	fprintf(stderr, "pony: %s\n", text);
}

static int mount_run(int argc, char **argv)
{
	/* One worker thread: one lock serialises ponyfs anyway, and more workers
	 * only add cross-thread wake-ups (an untar of 3,000 files: 2.9 s and
	 * 640 us of daemon CPU a file with libfuse's default, 0.6 s and 90 us
	 * with one). */
	struct ponyfuse_options fo = { .subtype = "pony", .timeout = 1.0, .max_threads = 1,
				       .posix_acl = true, .export_support = true };
	struct ponyfs_options po = { .commit_ms = 5000, .report = mount_report };
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
		{ "degraded", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "fdc:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': fo.foreground = true; break;
		case 'd': fo.debug = fo.foreground = true; break;
		case 'c': po.commit_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'D': stand |= STAND_DEGRADED; break;
		case 'o':
			r = cli_ponyfs_mount_opts(optarg, &po, &fo, &mo);
			if (r)
				return r;
			break;
		case 'h':
			printf("Usage: pony mount [-f] [-d] [--commit MS] [--degraded] [-o OPTS]\n"
			       "                  IMG...|UUID=U|LABEL=L MNT\n"
			       "       pony IMG MNT -o OPTS   (as mount.fuse3 runs it for\n"
			       "                              `mount -t fuse.pony IMG MNT`)\n"
			       "Mounts the ponyfs on IMG (or on the pony volume of the images) at\n"
			       "MNT through FUSE. UUID= or LABEL= names a pony volume whose members\n"
			       "the device database knows ($PONY_DEVDB; pony dev scan DIR adds\n"
			       "them). Metadata commits every --commit milliseconds (default\n"
			       "5000), on fsync and on `pony sync MNT`.\n"
			       "--degraded mounts a volume with members missing, stale or\n"
			       "truncated (named on stderr; they go stale until `pony vol add`\n"
			       "rebuilds them); without it such a mount is refused.\n"
			       "-o takes mount(8) options; then the mount's type is plain fuse\n"
			       "and its source IMG. Pony's own: commit=MS, format (mkfs IMG\n"
			       "first when its first MiB is all zeros), format=foreign (also\n"
			       "when IMG is not pony's); the rest go to FUSE.\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error("pony mount", "bad option");
		}
	}
	n = argc - optind - 1;
	if (n < 1 || n > MAX_IMAGES)
		return cli_usage_error("pony mount", "IMG... and MNT are needed");
	if (mo.remount)
		return cli_ponyfs_remount(argv[argc - 1], &mo);
	if (n == 1 && !cli_ponyfs_is_spec(argv[optind])) {
		bool bound;

		r = cli_ponyfs_bind_existing(argv[optind], argv[argc - 1], po.read_only, &bound);
		if (r || bound)
			return r;
	}
	fo.mount_opts = mo.fuse;
	r = cli_ponyfs_lock_images(argv + optind, n);
	if (!r && (mo.format || mo.format_foreign) && n == 1)
		r = cli_ponyfs_format(argv[optind], mo.format_foreign);
	if (!r)
		r = stand_open(argv + optind, n, stand, &s);
	if (r)
		return r;
	r = s.image ? ponyfs_mount_image(s.image, &po, &fs) : ponyfs_mount(s.meta, s.data, &po, &fs);
	if (r < 0) {
		stand_done(&s);
		return cli_error("%s: cannot mount: %s", argv[optind], why(r));
	}
	umask(0);
	r = cli_fuse_serve(fs, argv[argc - 1], argv[optind], &fo);
	vfs_free(TAKE_PTR(fs));
	stand_done(&s);
	return r;
}

static void fsck_report(void *arg, const char *text)
{
	printf("%s\n", text);
}

static int fsck_run(int argc, char **argv)
{
	unsigned flags = PONYFS_FSCK_DATA, stand = 0;
	struct stand s;
	int c, n, r;

	static const struct option longopts[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ "no-data", no_argument, NULL, 'n' },
		{ "degraded", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "rh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': flags |= PONYFS_FSCK_REPAIR; break;
		case 'n': flags &= ~(unsigned)PONYFS_FSCK_DATA; break;
		case 'D': stand |= STAND_DEGRADED; break;
		case 'h':
			printf("Usage: pony fsck [--repair] [--no-data] [--degraded] IMG...|UUID=U|LABEL=L\n"
			       "Checks an unmounted ponyfs: SQLite integrity, reachability, link\n"
			       "counts, extents and free space, and every block's checksum (unless\n"
			       "--no-data; --repair rewrites a bad block from the volume's\n"
			       "redundancy). A volume with members missing, stale or truncated is\n"
			       "checked read-only, saying so; --repair on it needs --degraded.\n"
			       "Exit 0: clean; 1: problems (fixed with --repair where possible);\n"
			       "2: usage.\n");
			return CLI_EXIT_OK;
		default: return cli_usage_error("pony fsck", "bad option");
		}
	}
	n = argc - optind;
	if (n < 1 || n > MAX_IMAGES)
		return cli_usage_error("pony fsck", "one or more images are needed");
	if (!(flags & PONYFS_FSCK_REPAIR))
		stand |= STAND_CHECK;
	r = cli_ponyfs_lock_images(argv + optind, n);
	if (!r)
		r = stand_open(argv + optind, n, stand, &s);
	if (r)
		return r;
	r = s.image ? ponyfs_fsck_image(s.image, flags, fsck_report, NULL)
		    : ponyfs_fsck(s.meta, s.data, flags, fsck_report, NULL);
	stand_done(&s);
	if (r < 0)
		return cli_error("%s: cannot check: %s", argv[optind], why(r));
	printf("%s: %d problem%s%s\n", argv[optind], r, r == 1 ? "" : "s",
	       r && (flags & PONYFS_FSCK_REPAIR) ? " (repaired what could be)" : "");
	return r ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
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
