/*
 * cmd_mount_helper.c - pony as mount(8)'s helper, for fstab lines and
 * `mount -t fuse.pony` / `mount -t fuse.pony-union`. mount(8) looks for
 * /sbin/mount.fuse.pony (and .pony-union), which `make install` links to
 * pony, and runs it as `mount.fuse.pony SRC MNT [-s] [-f] [-n] [-v] [-o
 * OPTS]`. Without those links it runs mount.fuse3, which runs `pony SRC MNT
 * -o OPTS` (`pony-union SRC MNT -o OPTS` for fuse.pony-union) through the
 * shell's PATH. Both shapes come here.
 *
 * For ponyfs, SRC is an image, the members of a volume joined by ':' (as
 * bcachefs's fstab spells a multi-device filesystem; "\:" is a colon in a
 * name), or pony:UUID=U / pony:LABEL=L. Plain UUID= and LABEL= cannot be
 * used: libmount resolves them (and PARTUUID=, PARTLABEL=, ID=) itself
 * through libblkid before it looks for any helper, and libblkid knows no
 * pony volume member, so mount(8) fails with "can't find LABEL=L" (util-
 * linux 2.38 and today's, mnt_context_prepare_srcpath()). The source stays
 * as spelled in /proc/mounts, so mount -a sees the line is mounted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "mount_helper.h"
#include "pony/bdev.h"
#include "pony/fuse.h"
#include "pony/util.h"
#include "ponyfs.h"
#include "union_opts.h"

#define MAX_MEMBERS 32
#define DEVDB_PREFIX "pony:"

struct helper_call {
	const char *prog;               /* the name run, for messages */
	bool is_union;                  /* fuse.pony-union: a union, not a ponyfs */
	const char *source, *mnt;
	bool fake;                      /* mount -f: do everything but mount */
	char opts[4096];                /* every -o list, comma-joined */
};

int cli_mount_remount(const char *mountpoint, const char *opts)
{
	int fd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	/* A kernel filesystem syncs when remounted (read-only above all); a
	 * FUSE one never hears of it (generic/599), so the daemon commits
	 * first. A mount that is not a ponyfs, or is shut down, just remounts. */
	if (fd >= 0) {
		ioctl(fd, PONYFUSE_IOC_SYNCFS);
		close(fd);
	}
	execlp("mount", "mount", "-i", "-o", opts, mountpoint, (char *)NULL);
	return cli_error("cannot run mount: %s", strerror(errno));
}

static void helper_usage(const char *prog)
{
	printf("Usage: %s SRC MNT [-s] [-f] [-n] [-v] [-o OPTS]\n"
	       "mount(8)'s helper for the types fuse.pony and fuse.pony-union, as\n"
	       "`mount -t fuse.pony SRC MNT -o OPTS` and fstab lines run it:\n"
	       "  SRC MNT fuse.pony OPTS 0 0\n"
	       "    SRC: IMG, or IMG1:IMG2:... (a pony volume's members; \\: is a colon\n"
	       "    in a name), or pony:UUID=U / pony:LABEL=L (found in the device\n"
	       "    database, $PONY_DEVDB); OPTS as `pony mount -o` takes them\n"
	       "  NAME MNT fuse.pony-union lowerdir=A:B,upperdir=U,workdir=W[,...] 0 0\n"
	       "    NAME: the source /proc/mounts shows; OPTS as `pony union mount -o`\n"
	       "mount(8)'s own options (defaults, nofail, _netdev, x-*...) are dropped.\n"
	       "  -f  fake: check the command line, mount nothing\n"
	       "  -s, -n, -v  accepted, as mount(8) passes them\n"
	       "docs/ponyfs-mount.md has the fstab lines and every option.\n", prog);
}

static int add_opts(struct helper_call *h, const char *list)
{
	size_t used = strlen(h->opts), len = strlen(list);

	if (!len)
		return 0;
	if (used + len + 2 > sizeof(h->opts))
		return cli_usage_error(h->prog, "too many -o options");
	if (used)
		h->opts[used++] = ',';
	memcpy(h->opts + used, list, len + 1);
	return 0;
}

/* SRC MNT, then mount(8)'s flags, in the order exec_helper() gives them. */
static int helper_parse(int argc, char **argv, struct helper_call *h)
{
	int r = 0;

	if (cli_wants_help(argc < 2 ? argc : 2, argv)) {
		helper_usage(h->prog);
		return -1;
	}
	if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-')
		return cli_usage_error(h->prog, "SRC and MNT come first");
	h->source = argv[1];
	h->mnt = argv[2];
	for (int i = 3; i < argc && !r; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-o") || !strcmp(a, "-t")) {
			if (i + 1 == argc)
				return cli_usage_error(h->prog, "%s needs a value", a);
			/* -t: the type mount.fuse3 is told; the name run says it. */
			if (a[1] == 'o')
				r = add_opts(h, argv[i + 1]);
			i++;
		} else if (!strcmp(a, "-f")) {
			h->fake = true;
		} else if (!strcmp(a, "-s") || !strcmp(a, "-n") || !strcmp(a, "-v")) {
			continue;       /* sloppy, no mtab, verbose: nothing to do */
		} else if (!strcmp(a, "-N")) {
			return cli_error("%s: mount --namespace is not supported", h->prog);
		} else {
			return cli_usage_error(h->prog, "unknown argument '%s'", a);
		}
	}
	return r;
}

static void free_members(char **members, int n)
{
	for (int i = 0; i < n; i++)
		free(members[i]);
}

/*
 * SRC as `pony mount` takes it, into members (malloc'd): UUID=/LABEL= from
 * pony:UUID=..., one image or NBD URI as it is, else the ':' list. 0, or
 * a message and a CLI exit code.
 */
static int source_split(const struct helper_call *h, char **members, int *ret_n)
{
	const char *s = h->source;
	int n = 0;

	if (!strncmp(s, DEVDB_PREFIX, strlen(DEVDB_PREFIX))) {
		s += strlen(DEVDB_PREFIX);
		if (!cli_ponyfs_is_spec(s))
			return cli_usage_error(h->prog, "%s: pony: is followed by UUID= or LABEL=",
					       h->source);
	}
	if (cli_ponyfs_is_spec(s) || access(s, F_OK) == 0 || bdev_name_is_nbd(s)) {
		members[0] = strdup(s);
		*ret_n = 1;
		return members[0] ? 0 : cli_error("out of memory");
	}
	while (*s) {
		char *m = malloc(strlen(s) + 1), *o = m;

		if (!m || n == MAX_MEMBERS) {
			free(m);
			free_members(members, n);
			return m ? cli_usage_error(h->prog, "%s: more than %d members", h->source,
						   MAX_MEMBERS)
				 : cli_error("out of memory");
		}
		for (; *s && *s != ':'; s++) {
			if (*s == '\\' && s[1])
				s++;
			*o++ = *s;
		}
		*o = '\0';
		if (*s)
			s++;
		if (!*m) {
			free(m);
			continue;
		}
		members[n++] = m;
	}
	if (!n)
		return cli_usage_error(h->prog, "no image given");
	*ret_n = n;
	return 0;
}

/* `pony mount -o OPTS MEMBER... MNT`, the mount's source SRC as given. */
static int ponyfs_helper(const struct helper_call *h)
{
	char *members[MAX_MEMBERS];
	char *argv[MAX_MEMBERS + 5];
	int n, argc = 0, r = source_split(h, members, &n);

	if (r)
		return r;
	argv[argc++] = "mount";
	if (h->opts[0]) {
		argv[argc++] = "-o";
		argv[argc++] = (char *)h->opts;
	}
	/* After "--": a member named "-x" is not an option. */
	argv[argc++] = "--";
	for (int i = 0; i < n; i++)
		argv[argc++] = members[i];
	argv[argc++] = (char *)h->mnt;
	argv[argc] = NULL;
	r = h->fake ? CLI_EXIT_OK : cli_ponyfs_mount_as(h->source, argc, argv);
	free_members(members, n);
	return r;
}

/* Whether the comma-separated list holds the option o. */
static bool has_option(const char *list, const char *o)
{
	size_t n = strlen(o);

	for (const char *s = list; s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
		if (!strncmp(s, o, n) && (s[n] == ',' || s[n] == '\0'))
			return true;
	return false;
}

/* The union of the -o list's lowerdir=, upperdir=, workdir= at MNT, source SRC. */
static int union_helper(const struct helper_call *h)
{
	_cleanup_(cli_union_mount_done) struct union_mount m;
	int r;

	cli_union_mount_init(&m);
	/* mount(8) hands a remount every option the mount has (user_id=,
	 * max_read= ...): the kernel's to change, not the union's to parse. */
	if (has_option(h->opts, "remount"))
		return cli_mount_remount(h->mnt, h->opts);
	r = cli_union_mount_opts(h->prog, h->opts, &m);
	if (r)
		return r;
	if (h->fake)
		return cli_union_mount_finish(h->prog, &m);
	m.fsname = h->source;
	return cli_union_mount_serve(h->prog, &m, h->mnt);
}

/* `pony SRC MNT ...`: mount.fuse3's call for fuse.pony, not a pony command. */
static bool is_pony_call(int argc, char **argv)
{
	const char *src = argc >= 3 ? argv[1] : "-";
	struct stat st;

	if (src[0] == '-' || argv[2][0] == '-')
		return false;
	/* The mount point: a directory, or a dead mount (which then says so). */
	if (stat(argv[2], &st) == 0 ? !S_ISDIR(st.st_mode) : errno != ENOTCONN)
		return false;
	if (stat(src, &st) == 0)
		return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
	return !strncmp(src, DEVDB_PREFIX, strlen(DEVDB_PREFIX)) || cli_ponyfs_is_spec(src) ||
	       strchr(src, ':');
}

int cli_mount_helper_main(int argc, char **argv)
{
	const char *self = argv[0] ? strrchr(argv[0], '/') : NULL;
	struct helper_call h = { 0 };
	int r;

	self = self ? self + 1 : argv[0] ? argv[0] : "pony";
	if (!strcmp(self, "mount.fuse.pony-union") || !strcmp(self, "pony-union"))
		h.is_union = true;
	else if (strcmp(self, "mount.fuse.pony") && !is_pony_call(argc, argv))
		return -1;
	h.prog = self;
	r = helper_parse(argc, argv, &h);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	return h.is_union ? union_helper(&h) : ponyfs_helper(&h);
}
