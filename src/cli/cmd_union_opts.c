/*
 * cmd_union_opts.c - fuse-overlayfs's command line for the union: the -o
 * list `pony union mount -o` takes, and `pony-overlayfs` (pony run under
 * that name, installed beside it), which takes fuse-overlayfs's arguments
 * exactly, so podman and buildah can use it as their overlay driver's
 * mount_program. Every option of fuse-overlayfs's manual and the mount
 * flags it passes to the kernel are known here; what pony does anyway is
 * accepted, what it cannot do as asked is refused by name (fuse-overlayfs
 * only warns about unknown options; a silent difference would be worse).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mount_helper.h"
#include "pony/util.h"
#include "union_opts.h"

/* The kernel's own mount flags, handed to the FUSE mount as they are. */
static const char *const kernel_flags[] = {
	"allow_other", "allow_root", "default_permissions", "suid", "nosuid", "dev",
	"nodev", "exec", "noexec", "atime", "noatime", "diratime", "nodiratime", "ro",
	"rw", "sync", "async", "dirsync", "lazytime", "nolazytime",
};

/*
 * Accepted as what pony does anyway: ACLs are refused through the mount
 * (noacl), lower files are spliced and upper ones passed through (splice_*),
 * the page cache is kept across opens (kernel_cache), inode numbers are
 * always the layer and origin's (xino, fast_ino), redirects are always
 * written and followed (redirect_dir=on), xattrs and ownership are real.
 */
static const char *const same_as_pony[] = {
	"noacl", "splice_read", "splice_write", "splice_move", "kernel_cache",
	"clone_fd", "relatime", "redirect_dir=on", "xino=on", "xino=auto",
	"noxattrs=0", "xattr_permissions=0", "fsync=1", "sync=1", "fast_ino=0",
	"fast_ino=1", "fast_ino_check=0", "fast_ino_check=1",
};

/* What pony cannot honour as asked, with why. */
static const struct {
	const char *prefix;
	const char *why;
} refused[] = {
	{ "ino32_t", "inode numbers are 64-bit (layer << 56 | origin inode)" },
	{ "plugins=", "lower layer plugins are not supported" },
	{ "noxattrs=", "extended attributes cannot be turned off" },
	{ "xattr_permissions=", "ownership and modes are stored as they are, not in "
				"xattrs (only xattr_permissions=0)" },
	{ "redirect_dir=", "directory redirects are always written and followed "
			   "(only redirect_dir=on)" },
	{ "xino=", "inode numbers always carry the layer (only xino=on or auto)" },
	{ "max_write=", "the write size is the kernel's and libfuse's choice" },
};

void cli_union_mount_init(struct union_mount *m)
{
	*m = (struct union_mount){
		.opts = { .subtype = "pony-union", .timeout = 86400, .max_threads = 1 },
	};
	m->cfg.lowers = m->lowers;
}

void cli_union_mount_done(struct union_mount *m)
{
	for (unsigned i = 0; i < m->nowned; i++)
		free(m->owned[i]);
	m->nowned = 0;
}

static char *own(struct union_mount *m, char *s)
{
	if (!s || m->nowned == ARRAY_SIZE(m->owned)) {
		free(s);
		return NULL;
	}
	return m->owned[m->nowned++] = s;
}

/* A copy of s up to an unescaped stop character, backslashes removed. */
static char *unescape_until(const char *s, char stop, const char **ret_end)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s && *s != stop; s++) {
		if (*s == '\\' && s[1])
			s++;
		*o++ = *s;
	}
	*o = '\0';
	*ret_end = s;
	return out;
}

int cli_union_mount_lowers(const char *cmd, const char *key, const char *spec,
			   struct union_mount *m)
{
	unsigned n = 0;

	for (const char *s = spec; *s;) {
		const char *end;
		char *dir;

		if (*s == ':') {
			s++;
			continue;
		}
		if (n == UNION_MAX_LOWERS)
			return cli_usage_error(cmd, "%s: more than %d lowers", key,
					       UNION_MAX_LOWERS);
		dir = own(m, unescape_until(s, ':', &end));
		if (!dir)
			return cli_usage_error(cmd, "%s: too many directories", key);
		m->lowers[n++] = dir;
		s = end;
	}
	if (n == 0)
		return cli_usage_error(cmd, "%s: no directory given", key);
	m->cfg.nlowers = n;
	return 0;
}

static int set_path(const char *cmd, struct union_mount *m, const char *key,
		    const char *value, const char **ret)
{
	const char *end;

	if (!*value)
		return cli_usage_error(cmd, "%s: no directory given", key);
	*ret = own(m, unescape_until(value, '\0', &end));
	return *ret ? 0 : cli_usage_error(cmd, "%s: out of memory", key);
}

/* "HOST:TO:COUNT[:HOST:TO:COUNT...]", fuse-overlayfs's syntax. */
static int set_idmap(const char *cmd, const char *key, const char *spec,
		     struct union_idmap *map, unsigned *ret_n)
{
	unsigned n = 0, field = 0;
	uint32_t v[3];

	for (const char *s = spec; *s;) {
		char *end;
		unsigned long x;

		if (*s == ':') {
			s++;
			continue;
		}
		errno = 0;
		x = strtoul(s, &end, 10);
		if (errno || end == s || x > UINT32_MAX || (*end && *end != ':'))
			return cli_usage_error(cmd, "%s=%s: ids are HOST:TO:COUNT triples "
					       "of decimal numbers", key, spec);
		v[field++] = (uint32_t)x;
		s = end;
		if (field < 3)
			continue;
		if (n == UNION_MAX_IDMAPS)
			return cli_usage_error(cmd, "%s: more than %d ranges", key, UNION_MAX_IDMAPS);
		if (v[2] == 0 || (uint64_t)v[0] + v[2] > 1ull << 32 ||
		    (uint64_t)v[1] + v[2] > 1ull << 32)
			return cli_usage_error(cmd, "%s=%s: range %u:%u:%u is empty or past "
					       "the last id", key, spec, v[0], v[1], v[2]);
		map[n++] = (struct union_idmap){ .host = v[0], .to = v[1], .count = v[2] };
		field = 0;
	}
	if (field || n == 0)
		return cli_usage_error(cmd, "%s=%s: ids are HOST:TO:COUNT triples", key, spec);
	*ret_n = n;
	return 0;
}

static int add_kernel_opt(const char *cmd, struct union_mount *m, const char *o)
{
	size_t used = strlen(m->fuse_opts), len = strlen(o);

	if (used + len + 2 > sizeof(m->fuse_opts))
		return cli_usage_error(cmd, "too many mount options");
	if (used)
		m->fuse_opts[used++] = ',';
	memcpy(m->fuse_opts + used, o, len + 1);
	return 0;
}

static bool listed(const char *const *names, size_t n, const char *o)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(o, names[i]))
			return true;
	return false;
}

/* A 0/1 (or any number) option value. */
static int flag_value(const char *cmd, const char *key, const char *v, unsigned *ret)
{
	return cli_parse_unsigned(cmd, key, v, 0, UINT32_MAX, ret) ? CLI_EXIT_USAGE : 0;
}

static int key_is(const char *o, const char *key, const char **ret_value)
{
	size_t n = strlen(key);

	if (strncmp(o, key, n) || o[n] != '=')
		return 0;
	*ret_value = o + n + 1;
	return 1;
}

static int parse_valued(const char *cmd, struct union_mount *m, const char *o)
{
	struct union_config *c = &m->cfg;
	const char *v;
	unsigned x;

	if (key_is(o, "lowerdir", &v))
		return cli_union_mount_lowers(cmd, "lowerdir", v, m);
	if (key_is(o, "upperdir", &v))
		return set_path(cmd, m, "upperdir", v, &c->upper);
	if (key_is(o, "workdir", &v))
		return set_path(cmd, m, "workdir", v, &c->work);
	if (key_is(o, "uidmapping", &v))
		return set_idmap(cmd, "uidmapping", v, m->uidmap, &c->nuidmap);
	if (key_is(o, "gidmapping", &v))
		return set_idmap(cmd, "gidmapping", v, m->gidmap, &c->ngidmap);
	if (key_is(o, "squash_to_uid", &v)) {
		c->flags |= UNION_SQUASH_UID;
		return flag_value(cmd, "squash_to_uid", v, &c->squash_uid);
	}
	if (key_is(o, "squash_to_gid", &v)) {
		c->flags |= UNION_SQUASH_GID;
		return flag_value(cmd, "squash_to_gid", v, &c->squash_gid);
	}
	if (key_is(o, "timeout", &v))
		return cli_parse_seconds(cmd, "timeout", v, 0, 86400 * 365, &m->opts.timeout) ?
			CLI_EXIT_USAGE : 0;
	if (key_is(o, "fsync", &v) || key_is(o, "sync", &v)) {
		if (flag_value(cmd, "fsync", v, &x))
			return CLI_EXIT_USAGE;
		if (!x)
			c->flags |= UNION_NO_FSYNC;
		return 0;
	}
	if (key_is(o, "threaded", &v)) {
		if (flag_value(cmd, "threaded", v, &x))
			return CLI_EXIT_USAGE;
		m->opts.max_threads = x ? 4 : 1;
		return 0;
	}
	if (key_is(o, "max_threads", &v))
		return cli_parse_unsigned(cmd, "max_threads", v, 1, 64, &m->opts.max_threads) ?
			CLI_EXIT_USAGE : 0;
	if (key_is(o, "max_idle_threads", &v))
		return flag_value(cmd, "max_idle_threads", v, &x);
	if (key_is(o, "writeback", &v)) {
		if (flag_value(cmd, "writeback", v, &x))
			return CLI_EXIT_USAGE;
		m->opts.writeback = x;
		return 0;
	}
	if (key_is(o, "context", &v) || key_is(o, "fscontext", &v) ||
	    key_is(o, "defcontext", &v) || key_is(o, "rootcontext", &v))
		/* A label for the kernel where SELinux runs; inert elsewhere. */
		return cli_union_host_has_selinux() ? add_kernel_opt(cmd, m, o) : 0;
	return -ENOENT;
}

static int parse_one(const char *cmd, struct union_mount *m, const char *o)
{
	int r;

	if (listed(same_as_pony, ARRAY_SIZE(same_as_pony), o) || cli_mount_opt_is_bookkeeping(o))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		if (!strncmp(o, refused[i].prefix, strlen(refused[i].prefix)))
			return cli_usage_error(cmd, "option '%s' is not supported: %s", o,
					       refused[i].why);
	if (strchr(o, '=')) {
		r = parse_valued(cmd, m, o);
		if (r != -ENOENT)
			return r;
	} else if (!strcmp(o, "squash_to_root")) {
		m->squash_root = true;
		return 0;
	} else if (!strcmp(o, "static_nlink")) {
		m->cfg.flags |= UNION_STATIC_NLINK;
		return 0;
	} else if (!strcmp(o, "volatile")) {
		m->cfg.flags |= UNION_NO_FSYNC;
		return 0;
	} else if (!strcmp(o, "userxattr")) {
		m->cfg.flags |= UNION_USERXATTR;
		return 0;
	} else if (!strcmp(o, "debug")) {
		m->opts.debug = m->opts.foreground = true;
		return 0;
	} else if (listed(kernel_flags, ARRAY_SIZE(kernel_flags), o)) {
		return add_kernel_opt(cmd, m, o);
	}
	return cli_usage_error(cmd, "unknown option '%s'", o);
}

int cli_union_mount_opts(const char *cmd, const char *list, struct union_mount *m)
{
	const char *s = list;
	int r = 0;

	/* fuse-overlayfs's layers: podman extracts whiteouts for it as
	 * aufs's ".wh." files; and it picks trusted. or user. xattrs itself. */
	m->cfg.flags |= UNION_WH_FILES;
	m->xattr_auto = true;
	while (*s && r == 0) {
		const char *end;
		_cleanup_(freep) char *o = NULL;

		/* A comma in a path is written "\,"; the escape stays for
		 * the value's own unescaping (lowerdir's "\:"). */
		for (end = s; *end && *end != ','; end++)
			if (*end == '\\' && end[1])
				end++;
		o = strndup(s, (size_t)(end - s));
		if (!o)
			return cli_error("out of memory");
		if (*o)
			r = parse_one(cmd, m, o);
		s = *end ? end + 1 : end;
	}
	return r;
}

/*
 * Whether this process may write trusted.* xattrs: root of the initial
 * user namespace only. Inside podman's rootless namespace uid 0 may not
 * (the kernel hides trusted.* there), so overlay's xattrs are user.*.
 */
static bool may_write_trusted(void)
{
	_cleanup_(fclosep) FILE *f = NULL;
	unsigned long inside, outside, count;

	if (geteuid() != 0)
		return false;
	f = fopen("/proc/self/uid_map", "re");
	if (!f || fscanf(f, "%lu %lu %lu", &inside, &outside, &count) != 3)
		return true;
	return inside == 0 && outside == 0 && count == 4294967295ul;
}

/* What only the whole command line decides, then the checks of what it names. */
int cli_union_mount_finish(const char *cmd, struct union_mount *m)
{
	struct union_config *c = &m->cfg;

	if (m->squash_root && !(c->flags & UNION_SQUASH_UID))
		c->flags |= UNION_SQUASH_UID, c->squash_uid = 0;
	if (m->squash_root && !(c->flags & UNION_SQUASH_GID))
		c->flags |= UNION_SQUASH_GID, c->squash_gid = 0;
	c->uidmap = m->uidmap;
	c->gidmap = m->gidmap;
	if (m->xattr_auto && !may_write_trusted())
		c->flags |= UNION_USERXATTR;
	if (!c->nlowers)
		return cli_usage_error(cmd, "no lower directory given (lowerdir=, --lower)");
	if (c->upper && !c->work)
		return cli_usage_error(cmd, "an upper directory needs a work directory "
				       "(workdir=, --work)");
	/* As the kernel's overlayfs: a work directory is useless without an
	 * upper, and ignored. */
	if (!c->upper)
		c->work = NULL;
	/* Read-only in the kernel too, as the kernel's overlayfs mounts it:
	 * writes fail there, before a request is made. */
	if (!c->upper && add_kernel_opt(cmd, m, "ro"))
		return CLI_EXIT_USAGE;
	/* Each directory named by the option that gave it (any -o list set
	 * xattr_auto: lowerdir=; else --lower). */
	for (unsigned i = 0; i < c->nlowers; i++)
		if (cli_check_dir(m->xattr_auto ? "lowerdir" : "--lower", c->lowers[i]))
			return CLI_EXIT_FAILURE;
	if ((c->upper && cli_check_dir(m->xattr_auto ? "upperdir" : "--upper", c->upper)) ||
	    (c->work && cli_check_dir(m->xattr_auto ? "workdir" : "--work", c->work)))
		return CLI_EXIT_FAILURE;
	return 0;
}

static void overlayfs_usage(FILE *out)
{
	fprintf(out,
		"Usage: pony-overlayfs [-f] [-d|--debug] [-s] -o lowerdir=A[:B...][,upperdir=U,\n"
		"                      workdir=W][,OPTIONS] MNT\n"
		"fuse-overlayfs's command line for pony's union (podman's mount_program):\n"
		"the union of the lowers (top first) and the upper at MNT; without an\n"
		"upper, a read-only union of the lowers.\n\n"
		"  -f              stay in the foreground\n"
		"  -d, --debug     log every FUSE request (implies -f)\n"
		"  -s              one thread (the default)\n"
		"  -o OPTIONS      fuse-overlayfs's: uidmapping=, gidmapping=, squash_to_root,\n"
		"                  squash_to_uid=, squash_to_gid=, static_nlink, noacl,\n"
		"                  volatile, fsync=0, threaded=1, timeout=, writeback=,\n"
		"                  context=, and the kernel's mount flags (docs/union.md)\n"
		"  -h, --help      this help\n"
		"  -V, --version   pony's version\n");
}

int cli_union_overlayfs_main(int argc, char **argv)
{
	static const char cmd[] = "pony-overlayfs";
	struct union_mount m;
	const char *mnt = NULL;
	int r = 0;

	cli_union_mount_init(&m);
	for (int i = 1; i < argc && r == 0; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			overlayfs_usage(stdout);
			goto done;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("pony-overlayfs: pony %s\n", PONY_VERSION);
			goto done;
		} else if (!strcmp(a, "-f")) {
			m.opts.foreground = true;
		} else if (!strcmp(a, "-d") || !strcmp(a, "--debug")) {
			m.opts.debug = m.opts.foreground = true;
		} else if (!strcmp(a, "-s")) {
			m.opts.max_threads = 1;
		} else if (!strcmp(a, "-o")) {
			r = i + 1 < argc ? cli_union_mount_opts(cmd, argv[++i], &m) :
				cli_usage_error(cmd, "-o needs a list of options");
		} else if (!strncmp(a, "-o", 2)) {
			r = cli_union_mount_opts(cmd, a + 2, &m);
		} else if (a[0] == '-') {
			r = cli_usage_error(cmd, "unknown argument '%s'", a);
		} else if (mnt) {
			r = cli_usage_error(cmd, "one mount point is needed, got '%s' and '%s'",
					    mnt, a);
		} else {
			mnt = a;
		}
	}
	if (r == 0 && !mnt)
		r = cli_usage_error(cmd, "no mount point given");
	if (r == 0)
		r = cli_union_mount_serve(cmd, &m, mnt);
done:
	cli_union_mount_done(&m);
	return r;
}
