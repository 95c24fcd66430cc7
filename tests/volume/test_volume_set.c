/*
 * test_volume_set.c - pony volumes on disk: create, close, assemble in any
 * order; stale members are refused; a replaced member is rebuilt, and a
 * rebuild stopped half way resumes from its checkpoint; corrupt superblocks
 * fall back to the other copy; foreign members are refused; after a crash
 * the write-intent bitmap resyncs exactly what was being written; write
 * errors land in the bad-block log; regions of different geometry share
 * the members; an idle hot spare takes a failed member's place by itself
 * and is rebuilt; members missing, stale or truncated are named and the
 * volume starts without them only when allowed to run degraded, never
 * with fewer than its level needs; a rebuild whose checkpoint cannot be
 * saved stops and says so.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pony/util.h"
#include "pony/volume.h"

#define NDEV 6
#define DEV_SIZE (8u << 20)

/* Members live in memory under fault bdevs; the test keeps the memory ones. */
static struct bdev *mems[NDEV];

static struct bdev *wrap(struct bdev *mem)
{
	struct bdev *f;

	/* A view that does not own mem: a record-free passthrough via volume. */
	assert_int_equal(bdev_fault_new(mem, &f), 0);
	return f;
}

struct view {
	struct bdev b;
	struct bdev *lower;
};

static int view_pread(struct bdev *b, void *buf, size_t len, uint64_t off)
{
	return bdev_pread(((struct view *)b)->lower, buf, len, off);
}

static int view_pwrite(struct bdev *b, const void *buf, size_t len, uint64_t off)
{
	return bdev_pwrite(((struct view *)b)->lower, buf, len, off);
}

static void view_free(struct bdev *b)
{
	free(b);
}

static const struct bdev_ops view_ops = {
	.name = "view", .pread = view_pread, .pwrite = view_pwrite, .free = view_free,
};

/* A bdev over mems[i] that does not free it: each assembly gets fresh ones. */
static struct bdev *view(unsigned i)
{
	struct view *v = calloc(1, sizeof(*v));

	v->b.ops = &view_ops;
	v->b.size = mems[i]->size;
	v->b.block_size = 512;
	snprintf(v->b.name, sizeof(v->b.name), "m%u", i);
	v->lower = mems[i];
	return &v->b;
}

static void fresh_members(void)
{
	for (unsigned i = 0; i < NDEV; i++) {
		bdev_free(mems[i]);
		assert_int_equal(bdev_mem_new(DEV_SIZE, &mems[i]), 0);
	}
}

static const struct volume_region_spec raid6_all = {
	.cls = VOLUME_CLASS_DATA, .type = VOLUME_RAID6, .layout = 2, .chunk = 65536,
};

static struct volume_set *create(const struct volume_region_spec *r, unsigned nr)
{
	struct bdev *d[NDEV];
	struct volume_set_params p = { .name = "test", .regions = r, .nregions = nr,
				       .assume_clean = true };
	struct volume_set *s;

	fresh_members();
	for (unsigned i = 0; i < NDEV; i++)
		d[i] = view(i);
	assert_int_equal(volume_set_create(d, NDEV, &p, &s), 0);
	return s;
}

/* Assembles members order[0..n) with flags; on failure a says why (a may be NULL). */
static int assemble(const unsigned *order, unsigned n, unsigned flags, struct volume_set **s,
		    struct volume_set_assembly *a)
{
	struct bdev *d[NDEV];
	int r;

	for (unsigned i = 0; i < n; i++)
		d[i] = view(order[i]);
	r = volume_set_assemble(d, n, flags, s, a);
	if (r < 0)
		for (unsigned i = 0; i < n; i++)
			bdev_free(d[i]);
	return r;
}

static int open_set(const unsigned *order, unsigned n, struct volume_set **s, unsigned *who)
{
	struct bdev *d[NDEV];
	int r;

	for (unsigned i = 0; i < n; i++)
		d[i] = view(order[i]);
	r = volume_set_open(d, n, 0, s, who);
	if (r < 0)
		for (unsigned i = 0; i < n; i++)
			bdev_free(d[i]);
	return r;
}

static const unsigned all[NDEV] = { 5, 3, 1, 0, 2, 4 };  /* any order assembles */

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 131 + seed + i / 4096);
}

static void test_volume_reassembles_in_any_order_after_a_clean_close(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct volume_set_info info;
	size_t n = 3 << 20;
	uint8_t *w = malloc(n), *r = malloc(n);

	fill(w, n, 1);
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 12345), 0);
	assert_int_equal(volume_set_close(s), 0);
	assert_int_equal(open_set(all, NDEV, &s, NULL), 0);
	volume_set_info(s, &info);
	assert_true(info.was_clean);
	assert_string_equal(info.name, "test");
	assert_int_equal(volume_read(volume_set_volume(s), r, n, 12345), 0);
	assert_memory_equal(w, r, n);
	assert_int_equal(volume_set_close(s), 0);
	free(w);
	free(r);
}

static int stop_half_way(uint64_t done, uint64_t total, void *arg)
{
	return done >= total / 2;
}

static void test_stale_member_is_refused_then_replaced_and_rebuilt(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct volume_set_member m;
	struct volume_set_info info;
	size_t n = 4 << 20;
	uint8_t *w = malloc(n), *r = malloc(n);
	uint64_t bad = 9;

	fill(w, n, 2);
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	assert_int_equal(volume_set_fail(s, 2), 0);
	fill(w, 65536, 3);      /* written while member 2 is out */
	assert_int_equal(volume_write(volume_set_volume(s), w, 65536, 0), 0);
	assert_int_equal(volume_set_close(s), 0);

	/* All six again: member 2 has fewer events, so it is refused, and the
	 * volume starts only when allowed to run degraded. */
	assert_int_equal(open_set(all, NDEV, &s, NULL), -ENXIO);
	assert_int_equal(assemble(all, NDEV, VOLUME_SET_DEGRADED, &s, NULL), 0);
	assert_int_equal(volume_set_member(s, 2, &m), 0);
	assert_true(m.stale);
	assert_int_equal(m.state, VOLUME_MEMBER_FAILED);
	assert_int_equal(volume_read(volume_set_volume(s), r, n, 0), 0);
	assert_memory_equal(w, r, n);

	/* Replace it; stop the rebuild half way, as a crash would. */
	assert_int_equal(volume_set_replace(s, 2, view(2)), 0);
	assert_int_equal(volume_set_rebuild(s, 0, stop_half_way, NULL), -ECANCELED);
	assert_int_equal(volume_set_close(s), 0);
	assert_int_equal(open_set(all, NDEV, &s, NULL), 0);
	volume_set_info(s, &info);
	assert_true(info.rebuild_off != UINT64_MAX && info.rebuild_off > 0);
	assert_int_equal(volume_set_member(s, 2, &m), 0);
	assert_int_equal(m.state, VOLUME_MEMBER_REBUILDING);
	assert_int_equal(volume_set_rebuild(s, 0, NULL, NULL), 0);
	assert_int_equal(volume_set_member(s, 2, &m), 0);
	assert_int_equal(m.state, VOLUME_MEMBER_OK);
	assert_int_equal(volume_set_scrub(s, false, 0, NULL, NULL, NULL, NULL, &bad), 0);
	assert_int_equal(bad, 0);
	/* The rebuilt member carries data: lose two others and read. */
	assert_int_equal(volume_set_fail(s, 0), 0);
	assert_int_equal(volume_set_fail(s, 4), 0);
	assert_int_equal(volume_read(volume_set_volume(s), r, n, 0), 0);
	assert_memory_equal(w, r, n);
	assert_int_equal(volume_set_close(s), 0);
	free(w);
	free(r);
}

/*
 * A member lost in the middle of writes, then a crash: the others must
 * already say it failed, or the next assembly takes its stale blocks for
 * current ones (the soak saw files read back as zeros). md's rule: the
 * failure is in the superblocks before a write that left it behind returns.
 */
/* A raid6 set made of fresh members, n bytes of seed's pattern written and the set closed: the bytes. */
static uint8_t *closed_set_holding(size_t n, unsigned seed)
{
	struct volume_set *s = create(&raid6_all, 1);
	uint8_t *w = malloc(n);

	fill(w, n, seed);
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	assert_int_equal(volume_set_close(s), 0);
	return w;
}

/* The first n bytes read back as w; closes s. */
static void check_reads_then_close(struct volume_set *s, const uint8_t *w, size_t n)
{
	uint8_t *r = malloc(n);

	assert_int_equal(volume_read(volume_set_volume(s), r, n, 0), 0);
	assert_memory_equal(w, r, n);
	assert_int_equal(volume_set_close(s), 0);
	free(r);
}

/* Every member's view in d (in the order all[] gives), member 3's under a fault bdev: returned. */
static struct bdev *views_with_faulty_m3(struct bdev **d)
{
	struct bdev *f = NULL;

	for (unsigned i = 0; i < NDEV; i++) {
		d[i] = view(all[i]);
		if (all[i] == 3)
			d[i] = f = wrap(d[i]);
	}
	return f;
}

static void test_a_member_lost_before_a_crash_is_stale_at_the_next_assembly(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct volume_set_member m;
	struct bdev *d[NDEV], *f = NULL;
	size_t n = 4 << 20;
	uint8_t *w = malloc(n), *r = malloc(n);
	unsigned who;

	fill(w, n, 21);
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	assert_int_equal(volume_set_close(s), 0);
	f = views_with_faulty_m3(d);
	assert_int_equal(volume_set_open(d, NDEV, 0, &s, &who), 0);
	bdev_fault_vanish(f);
	fill(w, n, 22);         /* member 3 misses all of it */
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	volume_set_abandon(s);  /* the power goes: no clean close */

	assert_int_equal(open_set(all, NDEV, &s, NULL), -ENXIO);
	assert_int_equal(assemble(all, NDEV, VOLUME_SET_DEGRADED, &s, NULL), 0);
	assert_int_equal(volume_set_member(s, 3, &m), 0);
	assert_true(m.stale);
	assert_int_equal(volume_read(volume_set_volume(s), r, n, 0), 0);
	assert_memory_equal(w, r, n);
	assert_int_equal(volume_set_close(s), 0);
	free(w);
	free(r);
}

static void test_a_stopped_scrub_resumes_from_its_checkpoint(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct volume_set_info info;
	uint8_t junk[512];
	uint64_t n = 9;
	unsigned who;

	assert_int_equal(volume_set_scrub(s, false, 0, NULL, NULL, stop_half_way, NULL, &n),
			 -ECANCELED);
	assert_int_equal(volume_set_close(s), 0);
	assert_int_equal(open_set(all, NDEV, &s, &who), 0);
	volume_set_info(s, &info);
	assert_true(info.scrub_off != UINT64_MAX && info.scrub_off > 0);
	/* Damage the first stripe, which the stopped scrub already checked. */
	memset(junk, 0x77, sizeof(junk));
	assert_int_equal(bdev_pwrite(mems[0], junk, sizeof(junk), 1 << 20), 0);
	assert_int_equal(volume_set_scrub(s, false, 0, NULL, NULL, NULL, NULL, &n), 0);
	assert_int_equal(n, 0);         /* resumed past it */
	volume_set_info(s, &info);
	assert_int_equal(info.scrub_off, UINT64_MAX);
	assert_int_equal(volume_set_scrub(s, false, 0, NULL, NULL, NULL, NULL, &n), 0);
	assert_int_equal(n, 1);         /* a fresh scrub starts at 0 (member 0 holds Q there) */
	assert_int_equal(volume_set_close(s), 0);
}

static void test_superblocks_fall_back_to_the_end_copy_and_refuse_corruption(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	uint8_t junk[512];
	unsigned who = 99;

	assert_int_equal(volume_set_close(s), 0);
	memset(junk, 0xab, sizeof(junk));
	assert_int_equal(bdev_pwrite(mems[3], junk, 512, 100), 0);     /* first copy */
	assert_int_equal(open_set(all, NDEV, &s, NULL), 0);
	assert_int_equal(volume_set_close(s), 0);
	assert_int_equal(bdev_pwrite(mems[3], junk, 512, 100), 0);
	assert_int_equal(bdev_pwrite(mems[3], junk, 512, DEV_SIZE - 4096 + 100), 0);
	assert_int_equal(open_set(all, NDEV, &s, &who), -EBADMSG);
	assert_int_equal(who, 1);       /* all[1] == 3 */
}

static void test_a_member_whose_superblocks_cannot_be_read_is_left_out(void **state)
{
	struct volume_set *s;
	struct volume_set_member m;
	struct bdev *d[NDEV];
	size_t n = 2 << 20;
	uint8_t *w = closed_set_holding(n, 31);

	/* The start copy unreadable: the end copy is read, the member is in. */
	assert_int_equal(bdev_fault_add_bad(views_with_faulty_m3(d), 0, 4096, BDEV_FAULT_READ), 0);
	assert_int_equal(volume_set_open(d, NDEV, 0, &s, NULL), 0);
	assert_int_equal(volume_set_member(s, 3, &m), 0);
	assert_int_equal(m.state, VOLUME_MEMBER_OK);
	assert_int_equal(volume_set_close(s), 0);
	/* Both copies unreadable (a dying disk, a server failing every read):
	 * the device is left out, its member absent, and the volume runs only
	 * when allowed to run degraded, with every byte. */
	assert_int_equal(bdev_fault_add_bad(views_with_faulty_m3(d), 0, DEV_SIZE, BDEV_FAULT_READ), 0);
	assert_int_equal(volume_set_open(d, NDEV, 0, &s, NULL), -ENXIO);
	for (unsigned i = 0; i < NDEV; i++)
		bdev_free(d[i]);
	assert_int_equal(bdev_fault_add_bad(views_with_faulty_m3(d), 0, DEV_SIZE, BDEV_FAULT_READ), 0);
	assert_int_equal(volume_set_open(d, NDEV, VOLUME_SET_DEGRADED, &s, NULL), 0);
	assert_int_equal(volume_set_member(s, 3, &m), 0);
	assert_int_equal(m.state, VOLUME_MEMBER_FAILED);
	assert_null(m.device);
	check_reads_then_close(s, w, n);
	free(w);
}

static void test_members_of_another_volume_are_refused(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct bdev *other, *d[NDEV];
	unsigned who = 99;

	assert_int_equal(volume_set_close(s), 0);
	/* A member of another volume, made on a copy of member 0's size. */
	{
		struct bdev *od[4];
		struct volume_set *o;
		struct volume_region_spec mirror = { .type = VOLUME_MIRROR };
		struct volume_set_params p = { .regions = &mirror, .nregions = 1, .assume_clean = true };

		for (int i = 0; i < 4; i++)
			assert_int_equal(bdev_mem_new(DEV_SIZE, &od[i]), 0);
		other = od[0];
		assert_int_equal(volume_set_create(od, 4, &p, &o), 0);
		assert_int_equal(volume_set_close(o), 0);
	}
	assert_int_equal(bdev_mem_new(DEV_SIZE, &other), 0);  /* (that set freed its devices) */
	bdev_free(other);
	for (unsigned i = 0; i < NDEV; i++)
		d[i] = view(i);
	/* A blank device in the list is named. */
	assert_int_equal(bdev_mem_new(DEV_SIZE, &other), 0);
	bdev_free(d[4]);
	d[4] = other;
	assert_int_equal(volume_set_open(d, NDEV, 0, &s, &who), -ENODATA);
	assert_int_equal(who, 4);
	for (unsigned i = 0; i < NDEV; i++)
		bdev_free(d[i]);
}

static void test_crash_resyncs_only_what_the_bitmap_marked(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct volume_set_info info;
	uint8_t w[8192], junk[8192];
	uint64_t bad = 9;
	unsigned who;

	fill(w, sizeof(w), 4);
	assert_int_equal(volume_set_close(s), 0);
	assert_int_equal(open_set(all, NDEV, &s, &who), 0);
	assert_int_equal(volume_write(volume_set_volume(s), w, sizeof(w), 1 << 20), 0);
	/* The crash hit mid-stripe: that row (stripe 4: 1 MiB in, on every
	 * member past the 1 MiB data offset) no longer agrees with itself. */
	memset(junk, 0x5c, sizeof(junk));
	for (unsigned i = 0; i < NDEV; i++)
		assert_int_equal(bdev_pwrite(mems[i], junk, 512, (1 << 20) + 4 * 65536), 0);
	volume_set_abandon(s);
	assert_int_equal(open_set(all, NDEV, &s, &who), 0);
	volume_set_info(s, &info);
	assert_false(info.was_clean);
	assert_true(info.resynced > 0 && info.resynced <= (64u << 20));
	assert_int_equal(volume_set_scrub(s, false, 0, NULL, NULL, NULL, NULL, &bad), 0);
	assert_int_equal(bad, 0);
	assert_int_equal(volume_set_close(s), 0);
}

static void test_write_errors_go_to_the_bad_block_log_and_survive_reassembly(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct volume_set_member m;
	uint8_t w[65536 * 4], r[sizeof(w)];
	struct bdev *d[NDEV], *f;
	unsigned who;

	assert_int_equal(volume_set_close(s), 0);
	for (unsigned i = 0; i < NDEV; i++)
		d[i] = view(i);
	f = wrap(d[1]);
	d[1] = f;
	assert_int_equal(bdev_fault_add_bad(f, (1 << 20), 65536, BDEV_FAULT_WRITE), 0);
	assert_int_equal(volume_set_open(d, NDEV, 0, &s, &who), 0);
	fill(w, sizeof(w), 5);
	assert_int_equal(volume_write(volume_set_volume(s), w, sizeof(w), 0), 0);
	assert_int_equal(volume_set_member(s, 1, &m), 0);
	assert_int_equal(m.state, VOLUME_MEMBER_OK);
	assert_true(m.badblocks >= 1);
	assert_int_equal(volume_set_close(s), 0);
	assert_int_equal(open_set(all, NDEV, &s, &who), 0);
	assert_int_equal(volume_set_member(s, 1, &m), 0);
	assert_true(m.badblocks >= 1);
	assert_int_equal(volume_read(volume_set_volume(s), r, sizeof(r), 0), 0);
	assert_memory_equal(w, r, sizeof(w));
	assert_int_equal(volume_set_close(s), 0);
}

/* With members a and b failed too, the first n bytes read back as w; closes s. */
static void check_reads_without(struct volume_set *s, unsigned a, unsigned b, const uint8_t *w,
				size_t n)
{
	assert_int_equal(volume_set_fail(s, a), 0);
	assert_int_equal(volume_set_fail(s, b), 0);
	check_reads_then_close(s, w, n);
}

/* A bdev over any memory bdev that does not free it. */
static struct bdev *view_of(struct bdev *mem, const char *name)
{
	struct view *v = calloc(1, sizeof(*v));

	v->b.ops = &view_ops;
	v->b.size = mem->size;
	v->b.block_size = 512;
	snprintf(v->b.name, sizeof(v->b.name), "%s", name);
	v->lower = mem;
	return &v->b;
}

static bool mem_is_zero(struct bdev *mem, uint64_t off, size_t len)
{
	uint8_t *b = malloc(len);
	bool zero = true;

	assert_int_equal(bdev_pread(mem, b, len, off), 0);
	for (size_t i = 0; i < len; i++)
		zero &= b[i] == 0;
	free(b);
	return zero;
}

static int count_progress(uint64_t done, uint64_t total, void *arg)
{
	(*(unsigned *)arg)++;
	return done > total;    /* never stops it */
}

static void test_an_idle_spare_takes_a_failed_members_place_and_is_rebuilt(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct bdev *spare_mem, *d[NDEV + 1], *f = NULL;
	struct volume_set_member m;
	struct volume_set_info info;
	size_t n = 4 << 20;
	uint8_t *w = malloc(n);
	unsigned who, calls = 0;
	uint64_t bad = 9;

	assert_int_equal(bdev_mem_new(DEV_SIZE, &spare_mem), 0);
	fill(w, n, 11);
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	assert_int_equal(volume_set_add_spare(s, view_of(spare_mem, "spare")), 0);
	volume_set_info(s, &info);
	assert_int_equal(info.nspares, 1);
	assert_string_equal(volume_set_spare_device(s, 0), "spare");
	/* The same device again (opened anew, as a second 'vol add' would):
	 * refused by its superblock, not given a second slot. */
	f = view_of(spare_mem, "spare again");
	assert_int_equal(volume_set_add_spare(s, f), -EEXIST);
	bdev_free(f);
	f = NULL;
	volume_set_info(s, &info);
	assert_int_equal(info.nspares, 1);
	/* Idle: a healthy volume keeps writing to its members only. */
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	assert_int_equal(volume_set_wait(s), 0);
	for (unsigned i = 0; i < NDEV; i++) {
		assert_int_equal(volume_set_member(s, i, &m), 0);
		assert_int_equal(m.state, VOLUME_MEMBER_OK);
	}
	assert_true(mem_is_zero(spare_mem, 1 << 20, 1 << 20));
	assert_int_equal(volume_set_close(s), 0);

	/* Reassembled with the spare among the members, in any order; member 3 dies. */
	for (unsigned i = 0; i < NDEV; i++)
		d[i] = view(all[i]);
	d[NDEV] = d[2];
	d[2] = view_of(spare_mem, "spare");
	for (unsigned i = 0; i <= NDEV; i++)
		if (!strcmp(d[i]->name, "m3"))
			d[i] = f = wrap(d[i]);
	assert_int_equal(volume_set_open(d, NDEV + 1, 0, &s, &who), 0);
	volume_set_info(s, &info);
	assert_int_equal(info.nspares, 1);
	volume_set_watch(s, count_progress, &calls);
	bdev_fault_vanish(f);
	fill(w, 65536, 12);
	assert_int_equal(volume_write(volume_set_volume(s), w, 65536, 0), 0);
	/* The write error failed member 3; the spare took its place and was rebuilt. */
	assert_int_equal(volume_set_wait(s), 0);
	assert_true(calls > 0);
	volume_set_info(s, &info);
	assert_int_equal(info.nspares, 0);
	assert_int_equal(volume_set_member(s, 3, &m), 0);
	assert_int_equal(m.state, VOLUME_MEMBER_OK);
	assert_string_equal(m.device, "spare");
	assert_false(mem_is_zero(spare_mem, 1 << 20, 1 << 20));
	assert_int_equal(volume_set_scrub(s, false, 0, NULL, NULL, NULL, NULL, &bad), 0);
	assert_int_equal(bad, 0);
	assert_int_equal(volume_set_close(s), 0);

	/* The spare is member 3 now: with two others gone, the data reads back. */
	for (unsigned i = 0; i < NDEV; i++)
		d[i] = i == 3 ? view_of(spare_mem, "spare") : view(i);
	assert_int_equal(volume_set_open(d, NDEV, 0, &s, &who), 0);
	check_reads_without(s, 0, 5, w, n);
	bdev_free(spare_mem);
	free(w);
}

/* A spare added to a volume already missing a member is taken at once. */
static void test_a_spare_added_to_a_degraded_volume_is_rebuilt_at_once(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct bdev *spare_mem;
	struct volume_set_member m;
	size_t n = 2 << 20;
	uint8_t *w = malloc(n);

	assert_int_equal(bdev_mem_new(DEV_SIZE, &spare_mem), 0);
	fill(w, n, 13);
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	assert_int_equal(volume_set_fail(s, 1), 0);
	assert_int_equal(volume_set_wait(s), 0);        /* no spare: nothing happens */
	assert_int_equal(volume_set_member(s, 1, &m), 0);
	assert_int_equal(m.state, VOLUME_MEMBER_FAILED);
	assert_int_equal(volume_set_add_spare(s, view_of(spare_mem, "spare")), 0);
	assert_int_equal(volume_set_wait(s), 0);
	assert_int_equal(volume_set_member(s, 1, &m), 0);
	assert_int_equal(m.state, VOLUME_MEMBER_OK);
	check_reads_without(s, 0, 2, w, n);
	bdev_free(spare_mem);
	free(w);
}

static void test_regions_have_their_own_geometry_on_shared_members(void **state)
{
	const struct volume_region_spec regions[] = {
		{ .cls = VOLUME_CLASS_METADATA, .type = VOLUME_RAID10, .layout = 3 | 1 << 8,
		  .chunk = 65536, .size = 1 << 20 },
		{ .cls = VOLUME_CLASS_DATA, .type = VOLUME_RAID6, .layout = 2, .chunk = 262144 },
	};
	struct volume_set *s = create(regions, 2);
	uint64_t ms, ml, mfs, ds, dl, dfs;
	uint8_t *w = malloc(1 << 20), *r = malloc(1 << 20);
	unsigned who;

	assert_int_equal(volume_region_find(volume_set_volume(s), VOLUME_CLASS_METADATA, &ms, &ml,
					    &mfs), 0);
	assert_int_equal(volume_region_find(volume_set_volume(s), VOLUME_CLASS_DATA, &ds, &dl,
					    &dfs), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(ml, 1 << 20);
	assert_int_equal(ds, 1 << 20);
	assert_int_equal(dfs, 4 * 262144);      /* 6 members, RAID6: 4 data chunks */
	assert_true(dl >= 4 * 262144);
	fill(w, 1 << 20, 6);
	assert_int_equal(volume_write(volume_set_volume(s), w, 1 << 20, ms), 0);
	assert_int_equal(volume_write(volume_set_volume(s), w, 1 << 20, ds), 0);
	assert_int_equal(volume_set_close(s), 0);
	assert_int_equal(open_set(all, NDEV, &s, &who), 0);
	assert_int_equal(volume_set_fail(s, 1), 0);
	assert_int_equal(volume_set_fail(s, 2), 0);
	assert_int_equal(volume_read(volume_set_volume(s), r, 1 << 20, ms), 0);
	assert_memory_equal(w, r, 1 << 20);
	assert_int_equal(volume_read(volume_set_volume(s), r, 1 << 20, ds), 0);
	assert_memory_equal(w, r, 1 << 20);
	assert_int_equal(volume_set_close(s), 0);
	free(w);
	free(r);
}

/* Log lines captured from util_log. */
struct logged {
	unsigned n;
	char text[16][1024];
};

static void log_sink(void *arg, int prio, const char *text)
{
	struct logged *l = arg;

	if (l->n < 16)
		snprintf(l->text[l->n], sizeof(l->text[0]), "%s", text);
	l->n++;
}

static bool logged_has(const struct logged *l, const char *a, const char *b)
{
	for (unsigned i = 0; i < l->n && i < 16; i++)
		if (strstr(l->text[i], a) && (!b || strstr(l->text[i], b)))
			return true;
	return false;
}

static int max_done(uint64_t done, uint64_t total, void *arg)
{
	uint64_t *m = arg;

	*m = MAX(*m, done);
	return 0;
}

/*
 * A rebuild whose checkpoint cannot be saved (every superblock write
 * fails) stops at once with the commit's error and says so in the log,
 * rather than rebuilding on with nothing recorded.
 */
static void test_a_rebuild_stops_when_its_checkpoint_cannot_be_saved(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct bdev *d[NDEV], *f[NDEV];
	struct logged log = { 0 };
	uint64_t done = 0;
	unsigned who;

	assert_int_equal(volume_set_close(s), 0);
	for (unsigned i = 0; i < NDEV; i++)
		d[i] = f[i] = wrap(view(i));
	assert_int_equal(volume_set_open(d, NDEV, 0, &s, &who), 0);
	assert_int_equal(volume_set_fail(s, 2), 0);
	f[2] = wrap(view(2));
	assert_int_equal(volume_set_replace(s, 2, f[2]), 0);
	for (unsigned i = 0; i < NDEV; i++)
		assert_int_equal(bdev_fault_add_bad(f[i], 0, 4096, BDEV_FAULT_WRITE), 0);
	util_log_set_sink(log_sink, &log);
	assert_true(volume_set_rebuild(s, 0, max_done, &done) < 0);
	util_log_set_sink(NULL, NULL);
	assert_true(done < volume_size(volume_set_volume(s)) / 2);
	assert_true(logged_has(&log, "checkpoint", "rebuild"));
	volume_set_abandon(s);
}

/* Lines logged that hold a (and b). */
static unsigned logged_count(const struct logged *l, const char *a, const char *b)
{
	unsigned n = 0;

	for (unsigned i = 0; i < l->n && i < 16; i++)
		n += strstr(l->text[i], a) && (!b || strstr(l->text[i], b));
	return n;
}

/*
 * A running volume's events, one log line each, naming the volume, member
 * and device: a member failing on a write (and where), a rebuild starting
 * and finishing, a scrub finding.
 */
static void test_member_events_are_logged_one_line_each(void **state)
{
	struct volume_set *s = create(&raid6_all, 1);
	struct logged log = { 0 };
	struct bdev *d[NDEV], *f;
	uint8_t w[65536], junk[512];
	uint64_t n = 0;
	unsigned who;

	assert_int_equal(volume_set_close(s), 0);
	for (unsigned i = 0; i < NDEV; i++)
		d[i] = view(i);
	d[3] = f = wrap(d[3]);
	assert_int_equal(volume_set_open(d, NDEV, 0, &s, &who), 0);
	util_log_set_sink(log_sink, &log);
	bdev_fault_vanish(f);
	fill(w, sizeof(w), 31);
	assert_int_equal(volume_write(volume_set_volume(s), w, sizeof(w), 0), 0);
	/* The write-intent bitmap is written first, so that is what fails. */
	assert_int_equal(logged_count(&log, "pony volume test: member 3 (fault:m3) failed: ",
				      "write at byte 4096: No such device"), 1);
	assert_int_equal(logged_count(&log, "failed", NULL), 1);

	assert_int_equal(volume_set_replace(s, 3, view(3)), 0);
	assert_int_equal(volume_set_rebuild(s, 0, NULL, NULL), 0);
	assert_int_equal(logged_count(&log, "rebuild of member 3 (m3) started at region 0, byte 0",
				      NULL), 1);
	assert_int_equal(logged_count(&log, "rebuild of member 3 (m3) finished", NULL), 1);

	memset(junk, 0x3c, sizeof(junk));
	assert_int_equal(bdev_pwrite(mems[1], junk, sizeof(junk), (1 << 20) + 4096), 0);
	assert_int_equal(volume_set_scrub(s, true, 0, NULL, NULL, NULL, NULL, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(logged_count(&log, "region 0 stripe 0: member 1 (m1) bytes 4096+512 "
				      "disagree with the rest: rewritten", NULL), 1);
	util_log_set_sink(NULL, NULL);
	assert_int_equal(volume_set_close(s), 0);
}

/* A view of member i that claims only size bytes: the image cut short. */
static struct bdev *view_short(unsigned i, uint64_t size)
{
	struct bdev *b = view(i);

	b->size = size;
	return b;
}

/*
 * Five of six members: refused (-ENXIO) unless allowed to run degraded,
 * the missing one named by its UUID. Run degraded, it is said in the log;
 * data written meanwhile is never read from the sixth member once it is
 * back (it is stale: named, refused, left out), and the volume still
 * needs the flag until it is rebuilt.
 */
static void test_missing_members_need_the_degraded_flag_and_are_named(void **state)
{
	static const unsigned five[] = { 0, 1, 2, 3, 5 };
	struct volume_set_assembly *a = calloc(1, sizeof(*a));
	struct volume_set *s = create(&raid6_all, 1);
	struct volume_set_member m4;
	struct logged log = { 0 };
	struct bdev *d[NDEV];
	size_t n = 2 << 20;
	uint8_t *w = malloc(n);
	char uuid[VOLUME_UUID_STRLEN], want[128];

	fill(w, n, 21);
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	assert_int_equal(volume_set_member(s, 4, &m4), 0);
	volume_uuid_format(m4.uuid, uuid);
	assert_int_equal(volume_set_close(s), 0);

	for (unsigned i = 0; i < 5; i++)
		d[i] = view(five[i]);
	assert_int_equal(volume_set_assemble(d, 5, 0, &s, a), -ENXIO);
	assert_true(a->known);
	assert_int_equal(a->nmembers, 6);
	assert_int_equal(a->present, 5);
	assert_null(a->members[4].device);
	assert_memory_equal(a->members[4].uuid, m4.uuid, 16);
	assert_string_equal(a->members[3].device, "m3");     /* names: the caller's devices */
	for (unsigned i = 0; i < 5; i++)
		bdev_free(d[i]);

	util_log_set_sink(log_sink, &log);
	assert_int_equal(assemble(five, 5, VOLUME_SET_DEGRADED, &s, a), 0);
	snprintf(want, sizeof(want), "member 4 (UUID %s) is missing", uuid);
	assert_true(logged_has(&log, want, NULL));
	assert_true(logged_has(&log, "running degraded: 5 of 6 members", NULL));
	fill(w, n, 22);         /* written while member 4 is away */
	assert_int_equal(volume_write(volume_set_volume(s), w, n, 0), 0);
	assert_int_equal(volume_set_close(s), 0);

	log.n = 0;
	assert_int_equal(assemble(all, NDEV, 0, &s, a), -ENXIO);
	assert_true(a->members[4].stale);
	assert_int_equal(assemble(all, NDEV, VOLUME_SET_DEGRADED, &s, a), 0);
	assert_string_equal(a->members[4].device, "m4");
	util_log_set_sink(NULL, NULL);
	assert_true(logged_has(&log, "member 4 (m4) is stale", NULL));
	check_reads_then_close(s, w, n);
	free(w);
	free(a);
}

/* Three of six raid6 members: not "no volume" but how many there are and need. */
static void test_too_few_members_say_how_many_the_level_needs(void **state)
{
	static const unsigned three[] = { 4, 0, 2 };
	struct volume_set_assembly *a = calloc(1, sizeof(*a));
	struct volume_set *s = create(&raid6_all, 1);

	assert_int_equal(volume_set_close(s), 0);
	assert_int_equal(assemble(three, 3, VOLUME_SET_DEGRADED, &s, a), -ENODEV);
	assert_true(a->known);
	assert_int_equal(a->nmembers, 6);
	assert_int_equal(a->present, 3);
	assert_int_equal(a->needed, 4);
	assert_int_equal(a->needed_type, VOLUME_RAID6);
	free(a);
}

/*
 * A member image cut short is named with its size and the size it needs,
 * and left out: the volume runs degraded without it (when allowed), with
 * its data rebuilt from the others.
 */
static void test_a_truncated_member_is_named_and_left_out(void **state)
{
	struct volume_set_assembly *a = calloc(1, sizeof(*a));
	struct volume_set *s;
	struct bdev *d[NDEV];
	size_t n = 2 << 20;
	uint8_t *w = closed_set_holding(n, 23);

	for (unsigned pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < NDEV; i++)
			d[i] = i == 3 ? view_short(3, DEV_SIZE / 2) : view(i);
		if (pass == 0) {
			assert_int_equal(volume_set_assemble(d, NDEV, 0, &s, a), -ENXIO);
			for (unsigned i = 0; i < NDEV; i++)
				bdev_free(d[i]);
			continue;
		}
		assert_int_equal(volume_set_assemble(d, NDEV, VOLUME_SET_DEGRADED, &s, a), 0);
	}
	assert_true(a->members[3].truncated);
	assert_false(a->members[3].stale);
	assert_string_equal(a->members[3].device, "m3");
	assert_int_equal(a->members[3].size, DEV_SIZE / 2);
	assert_true(a->members[3].need > DEV_SIZE / 2 && a->members[3].need <= DEV_SIZE);
	assert_int_equal(a->members[3].state, VOLUME_MEMBER_FAILED);
	assert_int_equal(a->present, 5);
	check_reads_then_close(s, w, n);
	free(w);
	free(a);
}

static int teardown(void **state)
{
	for (unsigned i = 0; i < NDEV; i++) {
		bdev_free(mems[i]);
		mems[i] = NULL;
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_volume_reassembles_in_any_order_after_a_clean_close),
		cmocka_unit_test(test_stale_member_is_refused_then_replaced_and_rebuilt),
		cmocka_unit_test(test_a_member_lost_before_a_crash_is_stale_at_the_next_assembly),
		cmocka_unit_test(test_a_stopped_scrub_resumes_from_its_checkpoint),
		cmocka_unit_test(test_superblocks_fall_back_to_the_end_copy_and_refuse_corruption),
		cmocka_unit_test(test_a_member_whose_superblocks_cannot_be_read_is_left_out),
		cmocka_unit_test(test_members_of_another_volume_are_refused),
		cmocka_unit_test(test_crash_resyncs_only_what_the_bitmap_marked),
		cmocka_unit_test(test_write_errors_go_to_the_bad_block_log_and_survive_reassembly),
		cmocka_unit_test(test_regions_have_their_own_geometry_on_shared_members),
		cmocka_unit_test(test_an_idle_spare_takes_a_failed_members_place_and_is_rebuilt),
		cmocka_unit_test(test_a_spare_added_to_a_degraded_volume_is_rebuilt_at_once),
		cmocka_unit_test(test_a_rebuild_stops_when_its_checkpoint_cannot_be_saved),
		cmocka_unit_test(test_missing_members_need_the_degraded_flag_and_are_named),
		cmocka_unit_test(test_too_few_members_say_how_many_the_level_needs),
		cmocka_unit_test(test_a_truncated_member_is_named_and_left_out),
		cmocka_unit_test(test_member_events_are_logged_one_line_each),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
