/*
 * test_volume_map.c - volume_map() says where every byte lives: for each
 * target and md layout, data written through the volume is read back
 * straight from the member bdev at each piece the map names (every copy of
 * a mirror), and a parity row's P is the XOR of its data pieces and its Q
 * what the parity engine makes of them with the map's syndrome slots.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pony/bdev.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "pony/volume_repair.h"
#include "layout.h"
#include "parity.h"

#define MEMBER_SIZE (1u << 20)
#define DATA_OFFSET 8192u               /* members' data starts here: dev_start must say so */
#define CHUNK 16384u
#define MAX_DEVS 8

struct map_case {
	const char *what;
	enum volume_target_type type;
	unsigned level;                 /* for layout names */
	const char *layout;             /* NULL: 0 */
	unsigned ndevs;
	uint64_t chunk;
};

/* A volume of one segment over memory members, filled through the volume. */
struct rig {
	struct volume *v;
	struct bdev *mem[MAX_DEVS];     /* the members, owned by v */
	uint8_t *data;                  /* what was written */
	uint64_t size;
};

static uint64_t case_size(const struct map_case *c, unsigned layout)
{
	struct layout_geom g = { .layout = layout, .ndisks = c->ndevs, .chunk = c->chunk,
				 .dev_size = (MEMBER_SIZE - DATA_OFFSET) / CHUNK * CHUNK };

	switch (c->type) {
	case VOLUME_LINEAR:
	case VOLUME_MIRROR:
		return g.dev_size;
	case VOLUME_STRIPED:
		return g.dev_size * c->ndevs;
	default:
		g.level = c->level;
		return layout_array_size(&g);
	}
}

static void rig_make(struct rig *rg, const struct map_case *c)
{
	uint64_t offsets[MAX_DEVS];
	struct volume_target_spec spec = { .type = c->type, .chunk = c->chunk, .ndevs = c->ndevs,
					   .devs = rg->mem, .offsets = offsets };

	memset(rg, 0, sizeof(*rg));
	if (c->layout)
		assert_int_equal(volume_layout_from_name(c->level, c->layout, &spec.layout), 0);
	for (unsigned i = 0; i < c->ndevs; i++) {
		assert_int_equal(bdev_mem_new(MEMBER_SIZE, &rg->mem[i]), 0);
		offsets[i] = DATA_OFFSET;
	}
	rg->size = case_size(c, spec.layout);
	assert_int_equal(volume_new(&rg->v), 0);
	assert_int_equal(volume_add_segment(rg->v, 0, rg->size, &spec), 0);
	rg->data = malloc(rg->size);
	assert_non_null(rg->data);
	for (uint64_t i = 0; i < rg->size; i++)
		rg->data[i] = (uint8_t)(i * 131 + i / 4096 * 7 + 1);
	assert_int_equal(volume_write(rg->v, rg->data, rg->size, 0), 0);
}

static void rig_free(struct rig *rg)
{
	volume_free(rg->v);
	free(rg->data);
}

/* The whole of [off, off+len) mapped: *ret_n pieces, malloc'd. */
static struct volume_piece *map_all(struct volume *v, uint64_t off, uint64_t len, size_t *ret_n)
{
	int64_t n = volume_map(v, off, len, NULL, 0);
	struct volume_piece *p;

	assert_true(n > 0);
	p = calloc((size_t)n, sizeof(*p));
	assert_non_null(p);
	assert_int_equal(volume_map(v, off, len, p, (size_t)n), n);
	*ret_n = (size_t)n;
	return p;
}

/* The piece's bytes, read from its member's device where the map says. */
static uint8_t *piece_read(const struct rig *rg, const struct volume_piece *p)
{
	uint8_t *buf = aligned_alloc(PARITY_ALIGN, (p->len + PARITY_ALIGN - 1) / PARITY_ALIGN *
					       PARITY_ALIGN);

	assert_non_null(buf);
	assert_int_equal(p->dev_start, DATA_OFFSET);
	assert_int_equal(bdev_pread(rg->mem[p->member], buf, p->len, p->dev_start + p->dev_off), 0);
	return buf;
}

/* Data and copies hold the volume's bytes; data pieces cover the range once, in order. */
static void check_data_pieces(const struct rig *rg, const struct volume_piece *p, size_t n,
			      uint64_t off, uint64_t len)
{
	uint64_t next = off;

	for (size_t i = 0; i < n; i++) {
		uint8_t *buf;

		if (p[i].role == VOLUME_PIECE_DATA) {
			assert_int_equal(p[i].vol_off, next);
			next += p[i].len;
		}
		if (p[i].role != VOLUME_PIECE_DATA && p[i].role != VOLUME_PIECE_COPY)
			continue;
		buf = piece_read(rg, &p[i]);
		assert_memory_equal(buf, rg->data + p[i].vol_off, p[i].len);
		free(buf);
	}
	assert_int_equal(next, off + len);
}

/*
 * Every row of a map of whole stripes: P is the XOR of the row's data
 * pieces, Q what the parity engine computes from them and their slots.
 */
static void check_parity_rows(const struct rig *rg, const struct volume_piece *p, size_t n,
			      unsigned ndata, bool has_q)
{
	const struct parity_ops *ops = parity_ops_get(NULL);
	size_t group = 1 + 1 + has_q;   /* each data piece, then P (and Q) */

	assert_int_equal(n % (group * ndata), 0);
	for (size_t row = 0; row < n; row += group * ndata) {
		uint8_t *blk[PARITY_MAX_DATA], qexp[PARITY_MAX_DATA];
		uint8_t *stored_p = piece_read(rg, &p[row + 1]), *stored_q = NULL;
		size_t len = p[row].len;
		struct parity_stripe ps = { .ndata = ndata, .len = len, .data = blk, .qexp = qexp };

		for (unsigned b = 0; b < ndata; b++) {
			const struct volume_piece *d = &p[row + b * group];

			assert_int_equal(d->role, VOLUME_PIECE_DATA);
			assert_int_equal(d->stripe, p[row].stripe);
			assert_int_equal(p[row + b * group + 1].role, VOLUME_PIECE_P);
			assert_int_equal(p[row + b * group + 1].member, p[row + 1].member);
			assert_int_equal(p[row + b * group + 1].dev_off, d->dev_off);
			assert_true(has_q ? d->q_slot >= 0 : d->q_slot == -1);
			blk[b] = piece_read(rg, d);
			qexp[b] = (uint8_t)(has_q ? d->q_slot : 0);
		}
		ps.p = aligned_alloc(PARITY_ALIGN, len);
		ps.q = has_q ? aligned_alloc(PARITY_ALIGN, len) : NULL;
		ops->gen(&ps);
		assert_memory_equal(ps.p, stored_p, len);
		if (has_q) {
			assert_int_equal(p[row + 2].role, VOLUME_PIECE_Q);
			stored_q = piece_read(rg, &p[row + 2]);
			assert_memory_equal(ps.q, stored_q, len);
		}
		for (unsigned b = 0; b < ndata; b++)
			free(blk[b]);
		free(stored_p);
		free(stored_q);
		free(ps.p);
		free(ps.q);
	}
}

static const struct map_case cases[] = {
	{ "linear", VOLUME_LINEAR, 0, NULL, 1, 0 },
	{ "striped", VOLUME_STRIPED, 0, NULL, 4, CHUNK },
	{ "mirror", VOLUME_MIRROR, 1, NULL, 3, 0 },
	{ "raid10 n2", VOLUME_RAID10, 10, "n2", 4, CHUNK },
	{ "raid10 f2", VOLUME_RAID10, 10, "f2", 5, CHUNK },
	{ "raid10 o2", VOLUME_RAID10, 10, "o2", 4, CHUNK },
	{ "raid4", VOLUME_RAID4, 4, NULL, 4, CHUNK },
	{ "raid5 left-symmetric", VOLUME_RAID5, 5, "left-symmetric", 5, CHUNK },
	{ "raid5 left-asymmetric", VOLUME_RAID5, 5, "left-asymmetric", 5, CHUNK },
	{ "raid5 right-symmetric", VOLUME_RAID5, 5, "right-symmetric", 4, CHUNK },
	{ "raid5 right-asymmetric", VOLUME_RAID5, 5, "right-asymmetric", 4, CHUNK },
	{ "raid6 left-symmetric", VOLUME_RAID6, 6, "left-symmetric", 6, CHUNK },
	{ "raid6 left-asymmetric", VOLUME_RAID6, 6, "left-asymmetric", 6, CHUNK },
	{ "raid6 right-symmetric", VOLUME_RAID6, 6, "right-symmetric", 5, CHUNK },
	{ "raid6 ddf-zero-restart", VOLUME_RAID6, 6, "raid6_zr", 6, CHUNK },
	{ "raid6 ddf-N-continue", VOLUME_RAID6, 6, "raid6_nc", 6, CHUNK },
	{ "raid6 left-symmetric-6", VOLUME_RAID6, 6, "left-symmetric-6", 6, CHUNK },
	{ "raid10 n3", VOLUME_RAID10, 10, "n3", 5, CHUNK },
	{ "raid10 f3", VOLUME_RAID10, 10, "f3", 5, CHUNK },
	{ "raid10 o3", VOLUME_RAID10, 10, "o3", 5, CHUNK },
};

static unsigned case_ndata(const struct map_case *c)
{
	return c->ndevs - (c->type == VOLUME_RAID6 ? 2 : 1);
}

static bool case_has_parity(const struct map_case *c)
{
	return c->type == VOLUME_RAID4 || c->type == VOLUME_RAID5 || c->type == VOLUME_RAID6;
}

static void test_every_mapped_piece_holds_the_bytes_written(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct map_case *c = &cases[i];
		struct volume_piece *p;
		struct rig rg;
		size_t n;

		print_message("%s\n", c->what);
		rig_make(&rg, c);
		p = map_all(rg.v, 0, rg.size, &n);
		check_data_pieces(&rg, p, n, 0, rg.size);
		if (case_has_parity(c))
			check_parity_rows(&rg, p, n, case_ndata(c), c->type == VOLUME_RAID6);
		free(p);
		/* An unaligned range inside: pieces start and end where it does. */
		p = map_all(rg.v, CHUNK / 2 + 512, 3 * CHUNK + 1000, &n);
		check_data_pieces(&rg, p, n, CHUNK / 2 + 512, 3 * CHUNK + 1000);
		free(p);
		rig_free(&rg);
	}
}

/* volume_unmap() inverts volume_map() for every piece of every target
 * (raid10's near, far and offset copies too): a data or copy byte gives
 * back its volume byte, P and Q the row they protect; bytes before the
 * data offset belong to no segment. */
static void test_unmap_inverts_map_for_every_piece(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct map_case *c = &cases[i];
		struct volume_piece *p, u;
		struct rig rg;
		size_t n;

		print_message("%s\n", c->what);
		rig_make(&rg, c);
		p = map_all(rg.v, 0, rg.size, &n);
		for (size_t k = 0; k < n; k++) {
			uint64_t in = p[k].len / 2;

			assert_int_equal(volume_unmap(rg.v, p[k].member, p[k].dev_start + p[k].dev_off + in,
						      &u), 0);
			assert_int_equal(u.role, p[k].role);
			assert_int_equal(u.member, p[k].member);
			assert_int_equal(u.dev_off, p[k].dev_off + in);
			if (p[k].role == VOLUME_PIECE_P || p[k].role == VOLUME_PIECE_Q) {
				assert_int_equal(u.stripe, p[k].stripe);
				assert_true(u.vol_off <= p[k].vol_off &&
					    p[k].vol_off + p[k].len <= u.vol_off + u.len);
			} else {
				assert_int_equal(u.vol_off, p[k].vol_off + in);
			}
		}
		assert_int_equal(volume_unmap(rg.v, 0, DATA_OFFSET - 512, &u), -ENOENT);
		free(p);
		rig_free(&rg);
	}
}

static void test_mirror_maps_every_copy(void **state)
{
	struct rig rg;
	struct volume_piece p[8];

	rig_make(&rg, &cases[2]);
	assert_int_equal(volume_map(rg.v, 4096, 8192, p, 8), 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(p[i].role, i ? VOLUME_PIECE_COPY : VOLUME_PIECE_DATA);
		assert_int_equal(p[i].member, i);
		assert_int_equal(p[i].dev_off, 4096);
		assert_int_equal(p[i].len, 8192);
	}
	rig_free(&rg);
}

static void test_map_counts_beyond_the_array_and_refuses_outside(void **state)
{
	struct rig rg;
	struct volume_piece p[2], whole[6];

	rig_make(&rg, &cases[11]);      /* raid6, 4 data chunks a row */
	/* Two chunks: 2 x (data, P, Q), only the first two kept. */
	assert_int_equal(volume_map(rg.v, 0, 2 * CHUNK, p, 2), 6);
	assert_int_equal(volume_map(rg.v, 0, 2 * CHUNK, whole, 6), 6);
	assert_memory_equal(p, whole, sizeof(p));
	assert_int_equal(volume_map(rg.v, rg.size, 1, p, 2), -EINVAL);
	assert_int_equal(volume_map(rg.v, rg.size - 512, 1024, p, 2), -EINVAL);
	assert_int_equal(volume_map(rg.v, rg.size, 0, p, 2), 0);
	rig_free(&rg);
}

static void test_zero_segment_maps_to_no_member_and_walks_segments(void **state)
{
	struct volume *v;
	struct bdev *mem;
	struct volume_target_spec zero = { .type = VOLUME_ZERO };
	struct volume_target_spec lin = { .type = VOLUME_LINEAR, .ndevs = 1, .devs = &mem };
	struct volume_piece p[4];

	assert_int_equal(bdev_mem_new(MEMBER_SIZE, &mem), 0);
	assert_int_equal(volume_new(&v), 0);
	assert_int_equal(volume_add_segment(v, 0, 65536, &zero), 0);
	assert_int_equal(volume_add_segment(v, 65536, 65536, &lin), 0);
	assert_int_equal(volume_map(v, 61440, 8192, p, 4), 2);
	assert_int_equal(p[0].role, VOLUME_PIECE_NONE);
	assert_int_equal(p[0].member, VOLUME_NO_MEMBER);
	assert_int_equal(p[0].len, 4096);
	assert_int_equal(p[1].role, VOLUME_PIECE_DATA);
	assert_int_equal(p[1].seg, 1);
	assert_int_equal(p[1].dev_off, 0);
	assert_int_equal(p[1].len, 4096);
	assert_int_equal(volume_member_uuid(v, 1, 0, (uint8_t[16]){ 0 }), -ENOENT);
	volume_free(v);
}

static void test_set_members_have_their_superblock_uuids(void **state)
{
	struct volume_region_spec r = { .cls = VOLUME_CLASS_DATA, .type = VOLUME_RAID5,
					.chunk = CHUNK };
	struct volume_set_params sp = { .name = "map", .regions = &r, .nregions = 1,
					.assume_clean = true };
	struct bdev *devs[4];
	struct volume_set *s;
	struct volume_set_member m;
	uint8_t uuid[16];

	assert_int_equal(volume_layout_from_name(5, "left-symmetric", &r.layout), 0);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(bdev_mem_new(4 * MEMBER_SIZE, &devs[i]), 0);
	assert_int_equal(volume_set_create(devs, 4, &sp, &s), 0);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(volume_member_uuid(volume_set_volume(s), 0, i, uuid), 0);
		assert_int_equal(volume_set_member(s, i, &m), 0);
		assert_memory_equal(uuid, m.uuid, 16);
	}
	assert_int_equal(volume_member_uuid(volume_set_volume(s), 0, 4, uuid), -EINVAL);
	assert_int_equal(volume_set_close(s), 0);
}

/*
 * A block corrupted on its member, as a direct reader of the map finds it:
 * volume_read_to_checksum() gives the good bytes and the member to blame
 * without writing it (the reader may not), volume_repair_to_checksum()
 * then rewrites that member.
 */
static void test_read_to_checksum_finds_a_bad_member_and_leaves_it(void **state)
{
	const struct map_case c = { "raid6", VOLUME_RAID6, 6, "left-symmetric", 6, CHUNK };
	uint8_t good[4096], bad[4096], buf[4096], onmember[4096];
	struct volume_piece p;
	uint32_t crc;
	struct rig rg;

	rig_make(&rg, &c);
	assert_int_equal(volume_map(rg.v, 3 * CHUNK + 4096, 4096, &p, 1), 3);
	memcpy(good, rg.data + 3 * CHUNK + 4096, sizeof(good));
	crc = util_crc32c(0, good, sizeof(good));
	memset(bad, 0xa5, sizeof(bad));
	assert_int_equal(bdev_pwrite(rg.mem[p.member], bad, sizeof(bad), p.dev_start + p.dev_off), 0);

	assert_int_equal(volume_read_to_checksum(rg.v, buf, sizeof(buf), 3 * CHUNK + 4096, crc),
			 (int)p.member);
	assert_memory_equal(buf, good, sizeof(good));
	assert_int_equal(bdev_pread(rg.mem[p.member], onmember, sizeof(onmember),
				    p.dev_start + p.dev_off), 0);
	assert_memory_equal(onmember, bad, sizeof(bad));       /* nothing was written */
	assert_int_equal(volume_read_to_checksum(rg.v, buf, sizeof(buf), 3 * CHUNK + 4096, ~crc),
			 -EBADMSG);

	assert_int_equal(volume_repair_to_checksum(rg.v, buf, sizeof(buf), 3 * CHUNK + 4096, crc),
			 (int)p.member);
	assert_int_equal(bdev_pread(rg.mem[p.member], onmember, sizeof(onmember),
				    p.dev_start + p.dev_off), 0);
	assert_memory_equal(onmember, good, sizeof(good));     /* the repair rewrote it */
	rig_free(&rg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_mapped_piece_holds_the_bytes_written),
		cmocka_unit_test(test_mirror_maps_every_copy),
		cmocka_unit_test(test_unmap_inverts_map_for_every_piece),
		cmocka_unit_test(test_map_counts_beyond_the_array_and_refuses_outside),
		cmocka_unit_test(test_zero_segment_maps_to_no_member_and_walks_segments),
		cmocka_unit_test(test_set_members_have_their_superblock_uuids),
		cmocka_unit_test(test_read_to_checksum_finds_a_bad_member_and_leaves_it),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
