/*
 * test_file_layout.c - ponyfs's layouts through the vfs ops table (layout_map,
 * layout_topology): a file's extents say their state (dirty in the cache,
 * written, unwritten, hole), their blocks' CRC32C as stored, whether the
 * file is encrypted, and on a pony RAID6 volume of memory members the
 * member pieces, whose bytes read straight from the members are the file's.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pony/bdev.h"
#include "pony/crypt.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "pony/volume.h"
#include "helpers.h"

#define NDEV 6
#define DEV_SIZE (24u << 20)
#define BLK 4096u

/* ponyfs on a pony volume: metadata mirrored, data RAID6, as pony mkfs makes it. */
struct vol_fixture {
	struct bdev *mem[NDEV];         /* the members, owned by the set */
	struct test_volume_fs v;
};

static int vol_setup(void **state)
{
	struct vol_fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	for (unsigned i = 0; i < NDEV; i++)
		assert_int_equal(bdev_mem_new(DEV_SIZE, &f->mem[i]), 0);
	assert_int_equal(test_volume_fs_new(f->mem, NDEV, &f->v), 0);
	*state = f;
	return 0;
}

static int vol_teardown(void **state)
{
	struct vol_fixture *f = *state;

	vfs_free(f->v.fs);
	assert_int_equal(ponyfs_fsck(f->v.meta, f->v.data, PONYFS_FSCK_DATA, NULL, NULL), 0);
	bdev_free(f->v.meta);
	bdev_free(f->v.data);
	assert_int_equal(volume_set_close(f->v.set), 0);
	free(f);
	return 0;
}

/* Room for a layout answer of up to n extents, csums and pieces. */
struct answer {
	struct vfs_layout l;
	struct vfs_layout_extent e[64];
	uint32_t csums[1024];
	struct vfs_layout_piece p[1024];
};

static int layout_of(struct vfs *fs, uint64_t ino, uint64_t off, uint64_t len, unsigned max_ext,
		     struct answer *a)
{
	memset(a, 0, sizeof(*a));
	a->l = (struct vfs_layout){ .offset = off, .length = len, .extents = a->e,
				    .max_extents = max_ext, .csums = a->csums, .max_csums = 1024,
				    .pieces = a->p, .max_pieces = 1024 };
	return VFS_CALL(fs, layout_map, ino, &a->l);
}

static void test_written_extent_pieces_hold_the_file_bytes(void **state)
{
	struct vol_fixture *f = *state;
	static uint8_t w[5 * BLK], got[5 * BLK];
	struct vfs_layout_topology t;
	struct answer a;
	uint64_t ino, fh, covered = 0;
	unsigned parity = 0;

	test_fill(w, sizeof(w), 21);
	assert_int_equal(test_open(f->v.fs, "f", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->v.fs, write, ino, fh, w, sizeof(w), 0), sizeof(w));
	/* Not yet written back: cached in the daemon, nowhere on the volume. */
	assert_int_equal(layout_of(f->v.fs, ino, 0, UINT64_MAX, 64, &a), 0);
	assert_int_equal(a.l.nextents, 1);
	assert_int_equal(a.e[0].state, VFS_LAYOUT_DIRTY);
	assert_int_equal(a.e[0].length, sizeof(w));
	assert_true(a.e[0].volume_offset == VFS_LAYOUT_NO_OFFSET);
	assert_int_equal(a.l.npieces, 0);
	assert_int_equal(VFS_CALL(f->v.fs, fsync, ino, fh, false), 0);
	assert_int_equal(layout_of(f->v.fs, ino, 0, UINT64_MAX, 64, &a), 0);
	assert_true(a.l.flags & VFS_LAYOUT_ON_VOLUME);
	assert_true(a.l.flags & VFS_LAYOUT_COMPLETE);
	assert_false(a.l.flags & VFS_LAYOUT_ENCRYPTED);
	assert_int_equal(a.l.size, sizeof(w));
	assert_int_equal(a.l.block_size, BLK);
	assert_int_equal(a.l.nextents, 1);
	assert_int_equal(a.e[0].state, VFS_LAYOUT_DATA);
	assert_int_equal(a.e[0].length, sizeof(w));
	assert_int_equal(a.l.ncsums, 5);
	for (unsigned b = 0; b < 5; b++)
		assert_int_equal(a.csums[a.e[0].first_csum + b], util_crc32c(0, w + b * BLK, BLK));
	assert_int_equal(VFS_CALL(f->v.fs, layout_topology, &t), 0);
	assert_string_equal(t.level, "raid6");
	assert_string_equal(t.layout, "left-symmetric");
	assert_int_equal(t.nmembers, NDEV);
	for (unsigned m = 0; m < NDEV; m++)
		assert_true(t.members[m].has_uuid);
	/* Each data piece read from its member is the file's; each has P and Q beside it. */
	for (unsigned i = 0; i < a.e[0].npieces; i++) {
		const struct vfs_layout_piece *p = &a.p[a.e[0].first_piece + i];

		assert_true(p->member < NDEV);
		if (p->role == VFS_PIECE_P || p->role == VFS_PIECE_Q) {
			parity++;
			continue;
		}
		assert_int_equal(p->role, VFS_PIECE_DATA);
		assert_int_equal(p->file_offset, covered);
		assert_int_equal(bdev_pread(f->mem[p->member], got, p->length, p->member_offset), 0);
		assert_memory_equal(got, w + p->file_offset, p->length);
		covered += p->length;
	}
	assert_int_equal(covered, sizeof(w));
	assert_true(parity >= 2);
	assert_int_equal(VFS_CALL(f->v.fs, release, ino, fh), 0);
}

static void test_holes_and_unwritten_blocks_have_their_states(void **state)
{
	struct vol_fixture *f = *state;
	static uint8_t w[BLK];
	struct answer a;
	uint64_t ino, fh;

	test_fill(w, sizeof(w), 3);
	assert_int_equal(test_open(f->v.fs, "sparse", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->v.fs, write, ino, fh, w, BLK, 0), BLK);
	assert_int_equal(VFS_CALL(f->v.fs, fallocate, ino, fh, 0, 4 * BLK, 2 * BLK), 0);
	assert_int_equal(VFS_CALL(f->v.fs, write, ino, fh, w, BLK, 8 * BLK), BLK);
	assert_int_equal(VFS_CALL(f->v.fs, fsync, ino, fh, false), 0);
	assert_int_equal(layout_of(f->v.fs, ino, 0, UINT64_MAX, 64, &a), 0);
	assert_int_equal(a.l.nextents, 5);
	assert_int_equal(a.e[0].state, VFS_LAYOUT_DATA);
	assert_int_equal(a.e[1].state, VFS_LAYOUT_HOLE);
	assert_int_equal(a.e[1].file_offset, BLK);
	assert_int_equal(a.e[1].length, 3 * BLK);
	assert_true(a.e[1].volume_offset == VFS_LAYOUT_NO_OFFSET);
	assert_int_equal(a.e[1].npieces, 0);
	assert_int_equal(a.e[2].state, VFS_LAYOUT_UNWRITTEN);
	assert_int_equal(a.e[2].file_offset, 4 * BLK);
	assert_int_equal(a.e[2].length, 2 * BLK);
	assert_true(a.e[2].npieces > 0);         /* allocated: it has a place */
	assert_int_equal(a.e[3].state, VFS_LAYOUT_HOLE);
	assert_int_equal(a.e[4].state, VFS_LAYOUT_DATA);
	assert_int_equal(a.e[4].file_offset, 8 * BLK);
	assert_int_equal(a.l.ncsums, 2);
	/* A range in the middle: only what it touches. */
	assert_int_equal(layout_of(f->v.fs, ino, 5 * BLK, BLK, 64, &a), 0);
	assert_int_equal(a.l.nextents, 1);
	assert_int_equal(a.e[0].state, VFS_LAYOUT_UNWRITTEN);
	assert_int_equal(a.e[0].file_offset, 5 * BLK);
	assert_int_equal(a.e[0].length, BLK);
	assert_int_equal(VFS_CALL(f->v.fs, release, ino, fh), 0);
}

static void test_small_arrays_page_through_the_extents(void **state)
{
	struct vol_fixture *f = *state;
	static uint8_t w[BLK];
	struct answer a;
	uint64_t ino, fh, off = 0;
	unsigned calls = 0;
	enum vfs_layout_state want[] = { VFS_LAYOUT_DATA, VFS_LAYOUT_HOLE, VFS_LAYOUT_DATA,
					 VFS_LAYOUT_HOLE, VFS_LAYOUT_DATA };

	test_fill(w, sizeof(w), 9);
	assert_int_equal(test_open(f->v.fs, "paged", O_CREAT | O_RDWR, &ino, &fh), 0);
	for (unsigned b = 0; b < 5; b += 2)
		assert_int_equal(VFS_CALL(f->v.fs, write, ino, fh, w, BLK, b * BLK), BLK);
	assert_int_equal(VFS_CALL(f->v.fs, fsync, ino, fh, false), 0);
	do {
		assert_int_equal(layout_of(f->v.fs, ino, off, UINT64_MAX - off, 1, &a), 0);
		assert_int_equal(a.l.nextents, 1);
		assert_int_equal(a.e[0].file_offset, off);
		assert_int_equal(a.e[0].state, want[calls]);
		off = a.l.next;
		calls++;
	} while (!(a.l.flags & VFS_LAYOUT_COMPLETE));
	assert_int_equal(calls, 5);
	/* No room for even one block's pieces: said, not a silent empty answer. */
	memset(&a, 0, sizeof(a));
	a.l = (struct vfs_layout){ .length = BLK, .extents = a.e, .max_extents = 4, .csums = a.csums,
				   .max_csums = 4, .pieces = a.p, .max_pieces = 2 };
	assert_int_equal(VFS_CALL(f->v.fs, layout_map, ino, &a.l), -ENOBUFS);
	assert_int_equal(VFS_CALL(f->v.fs, release, ino, fh), 0);
}

static void test_directory_has_no_layout(void **state)
{
	struct vol_fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;
	struct answer a;

	assert_int_equal(VFS_CALL(f->v.fs, mkdir, &c, VFS_ROOT_INO, "d", 0755, &e), 0);
	assert_int_equal(layout_of(f->v.fs, e.ino, 0, 1, 4, &a), -EISDIR);
	assert_int_equal(layout_of(f->v.fs, VFS_ROOT_INO, 0, 1, 4, &a), -EISDIR);
}

static void test_encrypted_file_says_so(void **state)
{
	struct vol_fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct crypt_policy pol = { .contents_mode = CRYPT_MODE_AES_256_XTS,
				    .filenames_mode = CRYPT_MODE_AES_256_CTS, .flags = 3 };
	static uint8_t w[2 * BLK], got[BLK];
	uint8_t key[64], id[16], polb[24];
	struct vfs_entry d;
	struct answer a;
	uint64_t ino = 0, fh = 0;

	for (int i = 0; i < 64; i++)
		key[i] = (uint8_t)(i * 3);
	assert_int_equal(VFS_CALL(f->v.fs, add_key, &c, key, sizeof(key), id, NULL), 0);
	memcpy(pol.key_id, id, 16);
	crypt_policy_encode(&pol, polb);
	assert_int_equal(VFS_CALL(f->v.fs, mkdir, &c, VFS_ROOT_INO, "enc", 0755, &d), 0);
	assert_int_equal(VFS_CALL(f->v.fs, set_policy, &c, d.ino, polb, sizeof(polb)), 0);
	test_fill(w, sizeof(w), 77);
	assert_int_equal(test_open(f->v.fs, "enc/secret", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->v.fs, write, ino, fh, w, sizeof(w), 0), sizeof(w));
	assert_int_equal(VFS_CALL(f->v.fs, fsync, ino, fh, false), 0);
	assert_int_equal(layout_of(f->v.fs, ino, 0, UINT64_MAX, 64, &a), 0);
	assert_true(a.l.flags & VFS_LAYOUT_ENCRYPTED);
	assert_int_equal(a.e[0].state, VFS_LAYOUT_DATA);
	/* The member holds ciphertext, and the checksum is of what it holds. */
	assert_int_equal(a.p[0].role, VFS_PIECE_DATA);
	assert_int_equal(bdev_pread(f->mem[a.p[0].member], got, BLK, a.p[0].member_offset), 0);
	assert_memory_not_equal(got, w, BLK);
	assert_int_equal(a.csums[0], util_crc32c(0, got, BLK));
	assert_int_equal(VFS_CALL(f->v.fs, release, ino, fh), 0);
}

/* A member failing (or being rebuilt) recalls the leases given before: the pieces changed meaning. */
static void test_member_failure_recalls_leases(void **state)
{
	struct vol_fixture *f = *state;
	static uint8_t w[4 * BLK];
	struct answer a;
	uint64_t ino, fh, ms;
	uint32_t st = 99;

	test_fill(w, sizeof(w), 5);
	assert_int_equal(test_open(f->v.fs, "f", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->v.fs, write, ino, fh, w, sizeof(w), 0), sizeof(w));
	assert_int_equal(VFS_CALL(f->v.fs, fsync, ino, fh, false), 0);
	memset(&a, 0, sizeof(a));
	a.l = (struct vfs_layout){ .length = UINT64_MAX, .extents = a.e, .max_extents = 64,
				   .csums = a.csums, .max_csums = 1024, .pieces = a.p,
				   .max_pieces = 1024, .lease = VFS_LEASE_NEW };
	assert_int_equal(VFS_CALL(f->v.fs, layout_map, ino, &a.l), 0);
	assert_int_not_equal(a.l.lease, 0);
	assert_int_equal(VFS_CALL(f->v.fs, layout_lease, a.l.lease, VFS_LEASE_STATUS, &st, &ms), 0);
	assert_int_equal(st, VFS_LEASE_HELD);
	assert_int_equal(volume_fail_member(volume_set_volume(f->v.set), 1, 2), 0);
	assert_int_equal(VFS_CALL(f->v.fs, layout_lease, a.l.lease, VFS_LEASE_STATUS, &st, &ms), 0);
	assert_int_equal(st, VFS_LEASE_RECALLED);
	assert_int_equal(VFS_CALL(f->v.fs, release, ino, fh), 0);
}

/* A one-image ponyfs: extents and checksums, but no volume to name. */
static void test_image_layout_has_no_pieces(void **state)
{
	struct bdev *dev;
	struct vfs *fs;
	struct vfs_layout_topology t;
	struct vfs_extent old;
	struct vfs_entry e;
	struct vfs_ctx c = test_ctx();
	static uint8_t w[3 * BLK];
	struct answer a;

	assert_int_equal(bdev_mem_new(64u << 20, &dev), 0);
	assert_int_equal(ponyfs_mkfs_image(dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(dev, NULL, &fs), 0);
	test_fill(w, sizeof(w), 4);
	assert_int_equal(test_put(fs, "f", w, sizeof(w)), 0);
	assert_int_equal(VFS_CALL(fs, syncfs), 0);
	assert_int_equal(VFS_CALL(fs, lookup, &c, VFS_ROOT_INO, "f", &e), 0);
	assert_int_equal(layout_of(fs, e.ino, 0, UINT64_MAX, 64, &a), 0);
	assert_false(a.l.flags & VFS_LAYOUT_ON_VOLUME);
	assert_int_equal(a.l.nextents, 1);
	assert_int_equal(a.l.npieces, 0);
	assert_int_equal(a.e[0].state, VFS_LAYOUT_DATA);
	/* The same place the older layout hook gives. */
	assert_int_equal(VFS_CALL(fs, layout, e.ino, 0, sizeof(w), &old, 1), 1);
	assert_int_equal(a.e[0].volume_offset, old.device_offset);
	assert_int_equal(VFS_CALL(fs, layout_topology, &t), -ENODEV);
	VFS_FORGET(fs, e.ino, 1);
	vfs_free(fs);
	bdev_free(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_written_extent_pieces_hold_the_file_bytes,
						vol_setup, vol_teardown),
		cmocka_unit_test_setup_teardown(test_holes_and_unwritten_blocks_have_their_states,
						vol_setup, vol_teardown),
		cmocka_unit_test_setup_teardown(test_small_arrays_page_through_the_extents,
						vol_setup, vol_teardown),
		cmocka_unit_test_setup_teardown(test_directory_has_no_layout, vol_setup, vol_teardown),
		cmocka_unit_test_setup_teardown(test_encrypted_file_says_so, vol_setup, vol_teardown),
		cmocka_unit_test_setup_teardown(test_member_failure_recalls_leases, vol_setup,
						vol_teardown),
		cmocka_unit_test(test_image_layout_has_no_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
