/*
 * soak.c - the fault-injection soak's supervisor: `pony-soak [--seconds N]
 * [--dir DIR] [--seed S]`. It makes a ponyfs on a RAID6 pony volume of six
 * image files, then runs cycles until the time is up: fork a daemon
 * (daemon.c) that mounts it over fault bdevs and writes while faults land
 * on at most two members; SIGKILL it at a random moment; then, as an admin
 * would, reassemble, rebuild what failed, scrub with repair, fsck, mount
 * and check every file against the model (model.c), and check that the
 * daemon logged every member it lost. Any finding stops the run with exit
 * 1 and says what and where. The last line is the figures: cycles, kills
 * survived, faults injected, bytes verified.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "pony/bdev.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "soak.h"

struct totals {
	uint64_t cycles, kills, member_failures, read_errors, bit_flips, full_phases;
	uint64_t rebuilds, scrub_repairs, fsck_fixes, files_verified, bytes_verified, ops, enospc;
};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "soak: FAILED: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static int open_members(const struct soak_config *cfg, struct bdev **devs)
{
	for (unsigned m = 0; m < SOAK_MEMBERS; m++) {
		int r = bdev_file_open(cfg->member[m], O_RDWR, &devs[m]);

		if (r < 0) {
			fail("%s: %s", cfg->member[m], strerror(-r));
			for (unsigned k = 0; k < m; k++)
				bdev_free(devs[k]);
			return -1;
		}
	}
	return 0;
}

static int make_fs(struct soak_config *cfg)
{
	struct volume_region_spec specs[2] = {
		{ .cls = VOLUME_CLASS_METADATA, .type = VOLUME_MIRROR, .chunk = 64 << 10,
		  .size = 8u << 20 },
		{ .cls = VOLUME_CLASS_DATA, .type = VOLUME_RAID6, .chunk = 64 << 10 },
	};
	struct volume_set_params p = { .name = "soak", .regions = specs, .nregions = 2,
				       .assume_clean = true };
	struct bdev *devs[SOAK_MEMBERS], *meta = NULL, *data = NULL;
	struct volume_set *set = NULL;
	int r;

	for (unsigned m = 0; m < SOAK_MEMBERS; m++) {
		int fd;

		snprintf(cfg->member[m], sizeof(cfg->member[m]), "%s/m%u.img", cfg->dir, m);
		fd = open(cfg->member[m], O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)cfg->member_size) < 0)
			return fail("%s: %s", cfg->member[m], strerror(errno));
		close(fd);
	}
	snprintf(cfg->log, sizeof(cfg->log), "%s/daemon.log", cfg->dir);
	if (open_members(cfg, devs) < 0)
		return -1;
	r = volume_layout_from_name(6, "left-symmetric", &specs[1].layout);
	if (r >= 0)
		r = volume_set_create(devs, SOAK_MEMBERS, &p, &set);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(set), VOLUME_CLASS_METADATA, &meta);
	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(set), VOLUME_CLASS_DATA, &data);
	if (r >= 0)
		r = ponyfs_mkfs(meta, data, &(struct ponyfs_mkfs_options){ .label = "soak" });
	bdev_free(meta);
	bdev_free(data);
	if (set && volume_set_close(set) < 0 && r >= 0)
		r = -EIO;
	return r < 0 ? fail("mkfs: %s", strerror(-r)) : 0;
}

/* Runs one daemon until a random moment and kills it. */
static int run_daemon(const struct soak_config *cfg, struct soak_shared *sh, uint64_t seed,
		      unsigned ms)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0)
		soak_daemon_run(cfg, sh, seed);
	for (unsigned waited = 0; !__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE); waited += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return fail("the daemon ended before it mounted (status %d)", status);
		if (waited > 60000) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return fail("the daemon did not mount in 60 s");
		}
		usleep(10000);
	}
	usleep(ms * 1000u);
	if (waitpid(pid, &status, WNOHANG) == pid)
		return fail("the daemon died on its own (status %d)", status);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return 0;
}

static void count_repair(const struct volume_mismatch *m, void *arg)
{
	(*(uint64_t *)arg)++;
}

/* As an admin after a crash: assemble, rebuild what failed, scrub with repair. */
static int heal(const struct soak_config *cfg, struct totals *t, struct volume_set **ret,
		bool *found_out)
{
	struct bdev *devs[SOAK_MEMBERS];
	struct volume_set *set = NULL;
	unsigned bad = 0;
	uint64_t found = 0;
	bool replaced = false;
	int r;

	/* A member the daemon lost is stale: as an admin, assemble --degraded then. */
	for (unsigned flags = 0;; flags = VOLUME_SET_DEGRADED) {
		if (open_members(cfg, devs) < 0)
			return -1;
		r = volume_set_open(devs, SOAK_MEMBERS, flags, &set, &bad);
		if (r >= 0)
			break;
		for (unsigned m = 0; m < SOAK_MEMBERS; m++)
			bdev_free(devs[m]);
		if (r != -ENXIO || flags)
			return fail("assemble: member %u: %s", bad, strerror(-r));
	}
	for (unsigned m = 0; m < SOAK_MEMBERS; m++) {
		struct volume_set_member info;
		struct bdev *fresh;

		volume_set_member(set, m, &info);
		found_out[m] = info.state != VOLUME_MEMBER_OK || info.stale;
		if (!found_out[m])
			continue;
		r = bdev_file_open(cfg->member[m], O_RDWR, &fresh);
		if (r >= 0 && info.state == VOLUME_MEMBER_OK)
			r = volume_set_fail(set, m);
		if (r >= 0)
			r = volume_set_replace(set, m, fresh);
		if (r < 0) {
			volume_set_close(set);
			return fail("replace member %u (%s): %s", m, cfg->member[m], strerror(-r));
		}
		replaced = true;
		t->rebuilds++;
	}
	if (replaced && (r = volume_set_rebuild(set, 0, NULL, NULL)) < 0) {
		volume_set_close(set);
		return fail("rebuild: %s", strerror(-r));
	}
	r = volume_set_scrub(set, true, 0, count_repair, &found, NULL, NULL, NULL);
	if (r < 0) {
		volume_set_close(set);
		return fail("scrub: %s", strerror(-r));
	}
	t->scrub_repairs += found;
	*ret = set;
	return 0;
}

static void fsck_line(void *arg, const struct ponyfs_fsck_problem *p)
{
	fprintf(stderr, "soak: fsck: %s%s%s%s\n", p->path ? p->path : "", p->path ? ": " : "",
		p->text, p->fixed ? " (fixed)" : "");
}

/* fsck, then mount and read every file of the model. */
static int verify(const struct soak_config *cfg, struct soak_shared *sh, struct volume_set *set,
		  struct totals *t)
{
	static uint8_t buf[SOAK_MAX_LEN + 1];
	struct bdev *meta = NULL, *data = NULL;
	struct vfs *fs = NULL;
	char why[200];
	int r = ponyfs_volume_region(volume_set_volume(set), VOLUME_CLASS_METADATA, &meta);

	if (r >= 0)
		r = ponyfs_volume_region(volume_set_volume(set), VOLUME_CLASS_DATA, &data);
	if (r >= 0) {
		/* As an admin's boot does: fsck -p, which may fix from redundancy. */
		struct ponyfs_fsck_params fp = { .flags = PONYFS_FSCK_DATA | PONYFS_FSCK_PREEN,
						 .report = fsck_line,
						 .volume = volume_set_volume(set) };
		struct ponyfs_fsck_result res;

		r = ponyfs_fsck_run(meta, data, &fp, &res);
		t->fsck_fixes += res.fixed;
		if (r < 0) {
			fail("fsck: %s", strerror(-r));
		} else if (res.found > res.fixed) {
			fail("fsck left %u of %u problems after the kill", res.found - res.fixed,
			     res.found);
			r = -EUCLEAN;
		}
	}
	if (r >= 0 && (r = ponyfs_mount(meta, data, &(struct ponyfs_options){ 0 }, &fs)) < 0)
		fail("mount after the kill: %s", strerror(-r));
	for (unsigned w = 0; r >= 0 && w < SOAK_WRITERS; w++) {
		char dname[16];
		uint64_t dir;

		snprintf(dname, sizeof(dname), "w%u", w);
		r = soak_walk_dir(fs, dname, &dir);
		for (unsigned j = 0; r >= 0 && j < SOAK_SLOTS; j++) {
			char name[32];
			size_t len = 0;
			uint64_t v;
			int g;

			soak_slot_name(w, j, name, sizeof(name));
			g = soak_get(fs, dir, name, buf, sizeof(buf), &len);
			if (g < 0 && g != -ENOENT) {
				r = fail("w%u/%s: read: %s", w, name, strerror(-g));
				break;
			}
			if (soak_check_file(&sh->slot[w][j], w, j, g >= 0, buf, len, &v, why, sizeof(why))) {
				const struct soak_slot *sl = &sh->slot[w][j];

				r = fail("w%u/%s: %s (versions: durable %" PRIu64 ", acked %" PRIu64
					 ", started %" PRIu64 ", kinds %u %u %u)", w, name, why, sl->durable,
					 sl->acked, sl->started, sl->kind[(sl->started - 2) % SOAK_RING],
					 sl->kind[(sl->started - 1) % SOAK_RING],
					 sl->kind[sl->started % SOAK_RING]);
				break;
			}
			/* What survived is the truth from here: a later syncfs must not
			 * count a version the crash took as made durable. */
			sh->slot[w][j].exists = g >= 0;
			sh->slot[w][j].acked = sh->slot[w][j].durable = v;
			t->files_verified += v != 0;
			t->bytes_verified += len;
		}
	}
	vfs_free(fs);
	bdev_free(meta);
	bdev_free(data);
	return r < 0 ? -1 : 0;
}

/*
 * Every member the volume recorded as failed (found out at the next
 * assembly) was named in the daemon's log. A member that vanished with no
 * I/O sent to it before the kill went unnoticed, and needs no line.
 */
static int check_log(const struct soak_config *cfg, const bool *found_out)
{
	_cleanup_(fclosep) FILE *f = fopen(cfg->log, "r");
	bool named[SOAK_MEMBERS] = { false };
	char line[1200];

	if (!f)
		return fail("%s: %s", cfg->log, strerror(errno));
	while (fgets(line, sizeof(line), f))
		for (unsigned m = 0; m < SOAK_MEMBERS; m++)
			named[m] |= strstr(line, strrchr(cfg->member[m], '/') + 1) != NULL;
	for (unsigned m = 0; m < SOAK_MEMBERS; m++)
		if (found_out[m] && !named[m])
			return fail("member %u (%s) was lost, and the log does not name it", m,
				    cfg->member[m]);
	return 0;
}

static void dump_log(const struct soak_config *cfg)
{
	_cleanup_(fclosep) FILE *f = fopen(cfg->log, "r");
	char line[1200];

	fprintf(stderr, "soak: the daemon's log (%s):\n", cfg->log);
	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "  %s", line);
}

static void add_cycle(struct totals *t, const struct soak_shared *sh)
{
	t->member_failures += sh->faults.member_failures;
	t->read_errors += sh->faults.read_errors;
	t->bit_flips += sh->faults.bit_flips;
	t->full_phases += sh->faults.full_phases;
	t->ops += sh->ops;
	t->enospc += sh->enospc;
}

static int cycle(const struct soak_config *cfg, struct soak_shared *sh, uint64_t *rng,
		 struct totals *t)
{
	struct volume_set *set = NULL;
	unsigned ms = 1000 + (unsigned)(*rng % 5000);
	bool found_out[SOAK_MEMBERS] = { false };
	int r;

	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	memset(&sh->faults, 0, sizeof(sh->faults));
	memset(sh->vanished, 0, sizeof(sh->vanished));
	sh->ops = sh->enospc = 0;
	sh->ready = false;
	/* A quarter of the cycles run clean; the rest damage one or two members. */
	sh->victim[0] = (*rng >> 20) % 4 ? (int)((*rng >> 24) % SOAK_MEMBERS) : -1;
	sh->victim[1] = (*rng >> 28) % 2 ? (int)((*rng >> 32) % SOAK_MEMBERS) : -1;
	if (truncate(cfg->log, 0) < 0 && errno != ENOENT)
		return fail("%s: %s", cfg->log, strerror(errno));
	r = run_daemon(cfg, sh, *rng, ms);
	add_cycle(t, sh);
	if (r < 0)
		return r;
	t->kills++;
	if (sh->unexpected_errno) {
		dump_log(cfg);
		return fail("the daemon saw %s (%s)", strerror(sh->unexpected_errno), sh->unexpected_what);
	}
	if (heal(cfg, t, &set, found_out) < 0)
		return -1;
	if (check_log(cfg, found_out) < 0) {
		volume_set_close(set);
		return -1;
	}
	r = verify(cfg, sh, set, t);
	if (volume_set_close(set) < 0 && r >= 0)
		r = fail("closing the volume after the check");
	t->cycles++;
	return r;
}

static void print_totals(const struct totals *t, double secs)
{
	printf("soak: %.0f s, %" PRIu64 " cycles, %" PRIu64 " kills survived, %" PRIu64
	       " writer calls (%" PRIu64 " ENOSPC), faults injected: %" PRIu64
	       " member failures, %" PRIu64 " read-error ranges, %" PRIu64 " bit flips, %" PRIu64
	       " full phases; %" PRIu64 " members rebuilt, %" PRIu64 " scrub repairs, %" PRIu64
	       " fsck fixes; %" PRIu64
	       " files and %" PRIu64 " bytes verified\n",
	       secs, t->cycles, t->kills, t->ops, t->enospc,
	       t->member_failures, t->read_errors, t->bit_flips, t->full_phases, t->rebuilds,
	       t->scrub_repairs, t->fsck_fixes, t->files_verified, t->bytes_verified);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct soak_config cfg = { .member_size = 64u << 20, .seed = (uint64_t)time(NULL) };
	char tmpl[] = "/tmp/pony-soak-XXXXXX";
	struct soak_shared *sh;
	struct totals t = { 0 };
	unsigned long seconds = 600;
	uint64_t start = util_now_ns(), rng;
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': seconds = strtoul(optarg, NULL, 10); break;
		case 'd': cfg.dir = optarg; break;
		case 'S': cfg.seed = strtoull(optarg, NULL, 0); break;
		case 'h':
			printf("Usage: pony-soak [--seconds N (600)] [--dir DIR] [--seed S]\n"
			       "Kills and remounts a ponyfs on a RAID6 of fault bdevs while\n"
			       "writers, full phases and faults run; checks every file against\n"
			       "the model after each kill. Exit 0 clean, 1 on a finding.\n");
			return 0;
		default: return 2;
		}
	}
	if (!cfg.dir && !(cfg.dir = mkdtemp(tmpl)))
		return fail("mkdtemp: %s", strerror(errno)), 1;
	if (mkdir(cfg.dir, 0700) < 0 && errno != EEXIST)
		return fail("%s: %s", cfg.dir, strerror(errno)), 1;
	rng = cfg.seed * 2862933555777941757ull + 3037000493ull;
	printf("soak: seed %" PRIu64 ", %lu s, images in %s\n", cfg.seed, seconds, cfg.dir);
	fflush(stdout);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return fail("mmap: %s", strerror(errno)), 1;
	memset(sh, 0, sizeof(*sh));
	if (make_fs(&cfg) < 0)
		return 1;
	while (r >= 0 && util_now_ns() - start < seconds * 1000000000ull)
		r = cycle(&cfg, sh, &rng, &t);
	print_totals(&t, (double)(util_now_ns() - start) / 1e9);
	if (r >= 0 && !getenv("PONY_SOAK_KEEP")) {
		for (unsigned m = 0; m < SOAK_MEMBERS; m++)
			unlink(cfg.member[m]);
		unlink(cfg.log);
		if (cfg.dir == tmpl)
			rmdir(cfg.dir);
	}
	return r < 0 ? 1 : 0;
}
