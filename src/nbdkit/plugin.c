/*
 * plugin.c - nbdkit-pony-plugin.so: a pony volume served over NBD by
 * nbdkit, so any NBD client (qemu, nbdcopy, the Linux nbd driver, another
 * pony) uses it. `nbdkit pony member=DEV member=DEV ...` assembles the
 * volume from its members (paths or NBD URIs, any order) in the server
 * process and serves its bytes; `nbdkit pony volume=UUID=...` (or LABEL=)
 * finds the members through devdb as `pony vol assemble UUID=...` does.
 *
 * What is advertised is what the volume does: flush flushes every member,
 * so FUA is a write then a flush (native), and one flush covers the writes
 * of every connection, which share the volume (multi-conn). Zeroing writes
 * zeros (never fast); trim is not offered, as a volume has no discard. The
 * preferred block size is the full stripe: smaller writes cost a
 * read-modify-write of parity.
 *
 * The volume is assembled after nbdkit forked into the background (its
 * threads and connections would not survive the fork) and closed clean
 * when the server exits. Its events (a member failed) go to nbdkit's log.
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pony/bdev.h"
#include "pony/devdb.h"
#include "pony/util.h"
#include "pony/volume.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
#define PONY_NBD_MAX_REQUEST (32u << 20)
#define PONY_NBD_ZERO_CHUNK (1u << 20)

static const char *members[VOLUME_MAX_MEMBERS];
static unsigned nmembers;
static const char *volume_spec;         /* volume=: members from devdb */
static char **found;                    /* its members' names (ours), nfound */
static size_t nfound;
static bool readonly, degraded, auto_readd;
static unsigned timeout_ms;
static struct volume_set *set;
static struct volume *vol;
static struct volume_autoreadd *readd;  /* auto-readd=true */

static void pony_log_sink(void *arg, int prio, const char *text)
{
	if (prio <= LOG_WARNING)
		nbdkit_error("%s", text);
	else
		nbdkit_debug("%s", text);
}

static void pony_load(void)
{
	util_log_set_sink(pony_log_sink, NULL);
}

static int pony_config(const char *key, const char *value)
{
	int r;

	if (!strcmp(key, "member")) {
		if (nmembers == VOLUME_MAX_MEMBERS) {
			nbdkit_error("more than %d members", VOLUME_MAX_MEMBERS);
			return -1;
		}
		members[nmembers++] = value;
		return 0;
	}
	if (!strcmp(key, "volume")) {
		if (!devdb_is_volume_spec(value) || !strchr(value, '=')[1]) {
			nbdkit_error("volume=%s: expected UUID=... or LABEL=...", value);
			return -1;
		}
		volume_spec = value;
		return 0;
	}
	if (!strcmp(key, "readonly") || !strcmp(key, "degraded") || !strcmp(key, "auto-readd")) {
		r = nbdkit_parse_bool(value);
		if (r < 0)
			return -1;
		*(key[0] == 'r' ? &readonly : key[0] == 'd' ? &degraded : &auto_readd) = r;
		return 0;
	}
	if (!strcmp(key, "member-timeout")) {
		char *end;
		double s = strtod(value, &end);

		if (!*value || *end || !(s > 0 && s <= 86400)) {
			nbdkit_error("member-timeout: '%s' is not a number of seconds (0 to 86400)",
				     value);
			return -1;
		}
		timeout_ms = (unsigned)(s * 1000 + 0.5);
		return 0;
	}
	nbdkit_error("unknown parameter '%s' (member=, volume=, readonly=, degraded=, "
		     "auto-readd=, member-timeout=)", key);
	return -1;
}

/* volume=: the members the device database knows ($PONY_DEVDB or its default). */
static int members_find(void)
{
	struct devdb *db;
	int r = devdb_open(NULL, 0, &db);

	if (r < 0) {
		nbdkit_error("volume=%s: the device database: %s", volume_spec, strerror(-r));
		return -1;
	}
	r = devdb_volume_members(db, volume_spec, &found, &nfound);
	devdb_close(db);
	if (r == -ENOENT)
		nbdkit_error("volume=%s: no member known to the device database (pony dev scan, "
			     "pony dev register)", volume_spec);
	else if (r < 0)
		nbdkit_error("volume=%s: %s", volume_spec, strerror(-r));
	else if (nfound > VOLUME_MAX_MEMBERS)
		nbdkit_error("volume=%s: %zu members found, %d at most", volume_spec, nfound,
			     VOLUME_MAX_MEMBERS);
	if (r < 0 || nfound > VOLUME_MAX_MEMBERS)
		return -1;
	for (size_t i = 0; i < nfound; i++) {
		members[nmembers++] = found[i];
		nbdkit_debug("volume=%s: member %s", volume_spec, found[i]);
	}
	return 0;
}

static int pony_config_complete(void)
{
	if (volume_spec && nmembers) {
		nbdkit_error("member= and volume= name the members twice: give one of them");
		return -1;
	}
	if (volume_spec)
		return members_find();
	if (!nmembers) {
		nbdkit_error("no member=DEV or volume=UUID=... given: the volume's members");
		return -1;
	}
	return 0;
}

static void pony_unload(void)
{
	for (size_t i = 0; i < nfound; i++)
		free(found[i]);
	free(found);
	found = NULL;
	nfound = 0;
}

/* Why assembly failed, naming the member where it names one. */
static void pony_assembly_error(int r, const struct volume_set_assembly *a)
{
	const char *dev = a->device < nmembers ? members[a->device] : "?";

	switch (r) {
	case -ENODATA: nbdkit_error("%s: not a pony volume member (no superblock)", dev); break;
	case -EBADMSG: nbdkit_error("%s: both superblocks are corrupt", dev); break;
	case -EXDEV: nbdkit_error("%s: a member of another pony volume", dev); break;
	case -EEXIST: nbdkit_error("%s: two devices claim the same member index", dev); break;
	case -ENXIO:
		nbdkit_error("%u of %u members present; not started without degraded=true",
			     a->present, a->nmembers);
		break;
	case -ENODEV:
		nbdkit_error("%u of %u members present, %s needs at least %u", a->present,
			     a->nmembers, volume_target_name(a->needed_type), a->needed);
		break;
	default: nbdkit_error("cannot assemble the volume: %s", strerror(-r));
	}
}

static int pony_after_fork(void)
{
	struct bdev *devs[VOLUME_MAX_MEMBERS];
	struct volume_set_assembly a;
	unsigned flags = (readonly ? VOLUME_SET_RDONLY | VOLUME_SET_DEGRADED : 0) |
			 (degraded ? VOLUME_SET_DEGRADED : 0);
	int r = 0;

	for (unsigned i = 0; i < nmembers; i++) {
		char why[512] = "";
		struct bdev_open_params p = { .flags = readonly ? O_RDONLY : O_RDWR,
					      .timeout_ms = timeout_ms, .why = why,
					      .why_size = sizeof(why) };

		r = bdev_open(members[i], &p, &devs[i]);
		if (r < 0) {
			nbdkit_error("%s: %s", members[i], why[0] ? why : strerror(-r));
			while (i--)
				bdev_free(devs[i]);
			return -1;
		}
	}
	r = volume_set_assemble(devs, nmembers, flags, &set, &a);
	if (r < 0) {
		pony_assembly_error(r, &a);
		for (unsigned i = 0; i < nmembers; i++)
			bdev_free(devs[i]);
		return -1;
	}
	vol = volume_set_volume(set);
	if (a.present < a.nmembers)
		nbdkit_error("the volume runs degraded: %u of %u members", a.present, a.nmembers);
	/* Threads of its own: after the fork, as the volume's. */
	if (auto_readd && !readonly) {
		r = volume_autoreadd_start(set, members, nmembers, timeout_ms, 0, &readd);
		if (r < 0)
			nbdkit_error("auto-readd: %s", strerror(-r));
	}
	return 0;
}

static void pony_cleanup(void)
{
	int r;

	if (!set)
		return;
	volume_autoreadd_stop(readd);
	readd = NULL;
	r = volume_set_close(set);
	if (r < 0)
		nbdkit_error("closing the volume: %s", strerror(-r));
	set = NULL;
	vol = NULL;
}

static void *pony_open(int ro)
{
	return vol ? vol : NULL;
}

static int64_t pony_get_size(void *h)
{
	return (int64_t)volume_size(h);
}

static int pony_can_write(void *h)
{
	return !readonly;
}

static int pony_can_flush(void *h)
{
	return 1;
}

static int pony_can_fua(void *h)
{
	return NBDKIT_FUA_NATIVE;
}

static int pony_can_multi_conn(void *h)
{
	return 1;
}

static int pony_can_zero(void *h)
{
	return 1;
}

static int pony_can_fast_zero(void *h)
{
	return 0;
}

static int pony_block_size(void *h, uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
	uint64_t stripe = volume_full_stripe(h, 0);
	uint32_t pref = 4096;

	/* The largest power of two that divides the stripe, within nbdkit's limits. */
	while (pref < stripe && pref < PONY_NBD_MAX_REQUEST && stripe % (pref * 2) == 0)
		pref *= 2;
	*minimum = 1;           /* the volume reads and writes any byte range */
	*preferred = pref;
	*maximum = PONY_NBD_MAX_REQUEST;
	return 0;
}

/* nbdkit's convention: -1 with the error set. */
static int pony_result(int r)
{
	if (r >= 0)
		return 0;
	nbdkit_set_error(-r);
	return -1;
}

static int pony_pread(void *h, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	return pony_result(volume_read(h, buf, count, offset));
}

static int pony_pwrite(void *h, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	int r = volume_write(h, buf, count, offset);

	if (r >= 0 && (flags & NBDKIT_FLAG_FUA))
		r = volume_flush(h);
	return pony_result(r);
}

static int pony_flush(void *h, uint32_t flags)
{
	return pony_result(volume_flush(h));
}

static int pony_zero(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
	static const uint8_t zeros[PONY_NBD_ZERO_CHUNK];
	int r = 0;

	if (flags & NBDKIT_FLAG_FAST_ZERO)
		return pony_result(-ENOTSUP);
	while (count && r >= 0) {
		uint32_t n = count < sizeof(zeros) ? count : (uint32_t)sizeof(zeros);

		r = volume_write(h, zeros, n, offset);
		count -= n;
		offset += n;
	}
	if (r >= 0 && (flags & NBDKIT_FLAG_FUA))
		r = volume_flush(h);
	return pony_result(r);
}

static struct nbdkit_plugin plugin = {
	.name = "pony",
	.longname = "pony volume",
	.version = PONY_VERSION,
	.description = "serves a pony volume (RAID over files, devices or NBD exports)",
	.load = pony_load,
	.unload = pony_unload,
	.config = pony_config,
	.config_complete = pony_config_complete,
	.config_help = "member=DEV      (repeat) a member: a path or an NBD URI, any order\n"
		       "volume=UUID=...|LABEL=...  the members found through devdb ($PONY_DEVDB)\n"
		       "readonly=BOOL   serve it read-only (writes nothing to the members)\n"
		       "degraded=BOOL   start with members absent\n"
		       "auto-readd=BOOL NBD members that fail are re-added when back\n"
		       "member-timeout=SECONDS  NBD members: failed after this (default 30)",
	.magic_config_key = "member",
	.after_fork = pony_after_fork,
	.cleanup = pony_cleanup,
	.open = pony_open,
	.get_size = pony_get_size,
	.can_write = pony_can_write,
	.can_flush = pony_can_flush,
	.can_fua = pony_can_fua,
	.can_multi_conn = pony_can_multi_conn,
	.can_zero = pony_can_zero,
	.can_fast_zero = pony_can_fast_zero,
	.block_size = pony_block_size,
	.pread = pony_pread,
	.pwrite = pony_pwrite,
	.flush = pony_flush,
	.zero = pony_zero,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
