/*
 * test_layout_lease.c - layout leases through the vfs ops table
 * (layout_map with a lease, layout_lease): while a lease is held, the data
 * blocks its layout named keep the bytes they had when it was given,
 * however the file is overwritten, truncated or unlinked and however much
 * is written meanwhile; the change recalls it; once it is returned or
 * expires, the blocks are reused; when space runs short, the lease is
 * revoked instead of a write failing. Each test reads the named blocks
 * straight from the data region, as a direct client would, and a control
 * run without a lease shows the same workload does reuse them.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "pony/bdev.h"
#include "pony/ponyfs.h"
#include "pony/util.h"
#include "helpers.h"

#define BLK 4096u
#define FILE_BLOCKS 64u                 /* the leased file: 256 KiB */

struct fixture {
	struct bdev *meta, *data;
	struct vfs *fs;
	uint8_t old[FILE_BLOCKS * BLK];    /* the leased file's first content */
	uint8_t buf[FILE_BLOCKS * BLK];
};

static int mount_with(struct fixture *f, uint64_t data_bytes, uint64_t lease_ms)
{
	struct ponyfs_options o = { .layout_lease_ms = lease_ms };

	assert_int_equal(bdev_mem_new(16 << 20, &f->meta), 0);
	assert_int_equal(bdev_mem_new(data_bytes, &f->data), 0);
	assert_int_equal(ponyfs_mkfs(f->meta, f->data, NULL), 0);
	return ponyfs_mount(f->meta, f->data, &o, &f->fs);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(mount_with(f, 32 << 20, 0), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vfs_free(f->fs);
	/* The held blocks were free in the table all along: nothing leaked. */
	assert_int_equal(ponyfs_fsck(f->meta, f->data, PONYFS_FSCK_DATA, NULL, NULL), 0);
	bdev_free(f->meta);
	bdev_free(f->data);
	free(f);
	return 0;
}

/* A layout of the whole of ino, asked with lease (0: none); its data runs in e. */
static int layout_get(struct vfs *fs, uint64_t ino, uint32_t *lease,
		      struct vfs_layout_extent e[64], uint32_t *nextents)
{
	static uint32_t csums[4096];
	struct vfs_layout l = { .offset = 0, .length = UINT64_MAX, .extents = e, .max_extents = 64,
				.csums = csums, .max_csums = 4096, .lease = *lease };
	int r = VFS_CALL(fs, layout_map, ino, &l);

	*lease = l.lease;
	*nextents = l.nextents;
	return r;
}

static uint32_t lease_state(struct vfs *fs, uint32_t lease, unsigned op)
{
	uint32_t state = 99;
	uint64_t ms;

	assert_int_equal(VFS_CALL(fs, layout_lease, lease, op, &state, &ms), 0);
	return state;
}

/*
 * Writes the leased file "f" (seed 1), fsynced, and gets its layout with a
 * lease when want_lease: the file's bytes are then in f->old and its
 * written extents in e.
 */
static uint32_t leased_file(struct fixture *f, bool want_lease, struct vfs_layout_extent e[64],
			    uint32_t *n, uint64_t *ret_ino)
{
	uint32_t lease = want_lease ? VFS_LEASE_NEW : 0;
	uint64_t ino, fh;

	test_fill(f->old, sizeof(f->old), 1);
	assert_int_equal(test_open(f->fs, "f", O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, f->old, sizeof(f->old), 0),
			 sizeof(f->old));
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), 0);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(layout_get(f->fs, ino, &lease, e, n), 0);
	assert_true(*n >= 1);
	for (uint32_t i = 0; i < *n; i++)
		assert_int_equal(e[i].state, VFS_LAYOUT_DATA);
	assert_int_equal(lease != 0, want_lease);
	*ret_ino = ino;
	return lease;
}

/* Writes files "w0".. of 256 KiB each, different bytes, and commits: the freed blocks' reusers. */
static int churn(struct fixture *f, unsigned nfiles, unsigned seed)
{
	for (unsigned i = 0; i < nfiles; i++) {
		char name[16];
		int r;

		snprintf(name, sizeof(name), "w%u", i);
		test_fill(f->buf, sizeof(f->buf), seed + i);
		r = test_put(f->fs, name, f->buf, sizeof(f->buf));
		if (r < 0)
			return r;
	}
	return VFS_CALL(f->fs, syncfs);
}

/* Whether every block the extents name still holds the leased file's old bytes. */
static bool blocks_hold_old(struct fixture *f, const struct vfs_layout_extent *e, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(bdev_pread(f->data, f->buf, e[i].length, e[i].volume_offset), 0);
		if (memcmp(f->buf, f->old + e[i].file_offset, e[i].length))
			return false;
	}
	return true;
}

/* Overwrites all of "f" with other bytes, committed: copy-on-write frees its old blocks. */
static void overwrite_f(struct fixture *f)
{
	test_fill(f->buf, sizeof(f->buf), 2);
	assert_int_equal(test_put(f->fs, "f", f->buf, sizeof(f->buf)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
}

static void test_without_lease_freed_blocks_are_reused(void **state)
{
	struct fixture *f = *state;
	struct vfs_layout_extent e[64];
	uint32_t n;
	uint64_t ino;

	leased_file(f, false, e, &n, &ino);
	overwrite_f(f);
	assert_int_equal(churn(f, 8, 100), 0);
	/* The control: this workload does reuse the blocks, so the tests
	 * below would see other bytes there if the lease did nothing. */
	assert_false(blocks_hold_old(f, e, n));
}

/* layout_recall_watch's callback: the recalls heard, the last lease. */
struct recalls {
	unsigned n;
	uint32_t last;
};

static void heard_recall(void *arg, uint32_t lease)
{
	struct recalls *r = arg;

	r->n++;
	r->last = lease;
}

static void test_lease_keeps_overwritten_blocks_and_is_recalled(void **state)
{
	struct fixture *f = *state;
	struct vfs_layout_extent e[64];
	struct recalls heard = { 0 };
	uint32_t n, lease;
	uint64_t ino;

	f->fs->ops->layout_recall_watch(f->fs, heard_recall, &heard);
	lease = leased_file(f, true, e, &n, &ino);
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_STATUS), VFS_LEASE_HELD);
	assert_int_equal(heard.n, 0);
	overwrite_f(f);
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_STATUS), VFS_LEASE_RECALLED);
	/* Heard once, however often the file changes after. */
	assert_int_equal(heard.n, 1);
	assert_int_equal(heard.last, lease);
	overwrite_f(f);
	assert_int_equal(heard.n, 1);
	f->fs->ops->layout_recall_watch(f->fs, NULL, NULL);
	assert_int_equal(churn(f, 8, 100), 0);
	assert_true(blocks_hold_old(f, e, n));
	/* Returned: the blocks go back to use. */
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_RETURN), VFS_LEASE_RECALLED);
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_STATUS), VFS_LEASE_EXPIRED);
	assert_int_equal(churn(f, 8, 200), 0);
	assert_false(blocks_hold_old(f, e, n));
}

static void test_lease_survives_truncate_and_unlink(void **state)
{
	struct fixture *f = *state;
	struct vfs_layout_extent e[64];
	struct vfs_ctx c = test_ctx();
	struct vfs_setattr sa = { .valid = VFS_SET_SIZE, .size = 0 };
	struct statx stx;
	uint32_t n, lease;
	uint64_t ino;

	lease = leased_file(f, true, e, &n, &ino);
	assert_int_equal(VFS_CALL(f->fs, setattr, &c, ino, VFS_NO_FH, &sa, &stx), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_STATUS), VFS_LEASE_RECALLED);
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, VFS_ROOT_INO, "f"), 0);
	assert_int_equal(churn(f, 8, 100), 0);
	assert_true(blocks_hold_old(f, e, n));
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_RETURN), VFS_LEASE_RECALLED);
}

static void test_lease_untouched_file_is_held(void **state)
{
	struct fixture *f = *state;
	struct vfs_layout_extent e[64];
	uint32_t n, lease, joined, n2;
	uint64_t ino;

	lease = leased_file(f, true, e, &n, &ino);
	assert_int_equal(churn(f, 4, 100), 0);
	/* Other files' writes recall nothing. */
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_STATUS), VFS_LEASE_HELD);
	/* A page of the same layout joins the lease; a gone lease cannot be joined. */
	joined = lease;
	assert_int_equal(layout_get(f->fs, ino, &joined, e, &n2), 0);
	assert_int_equal(joined, lease);
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_RETURN), VFS_LEASE_HELD);
	assert_int_equal(layout_get(f->fs, ino, &joined, e, &n2), -ESTALE);
	/* Returning twice, or an unknown lease: EXPIRED, not an error. */
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_RETURN), VFS_LEASE_EXPIRED);
	assert_int_equal(lease_state(f->fs, 12345, VFS_LEASE_STATUS), VFS_LEASE_EXPIRED);
}

static void test_lease_expires(void **state)
{
	struct fixture *f = *state;
	struct vfs_layout_extent e[64];
	struct timespec nap = { 0, 300 * 1000000 };
	uint32_t n, lease;
	uint64_t ino;

	vfs_free(f->fs);
	bdev_free(f->meta);
	bdev_free(f->data);
	assert_int_equal(mount_with(f, 32 << 20, 200), 0);
	lease = leased_file(f, true, e, &n, &ino);
	overwrite_f(f);
	assert_int_equal(churn(f, 2, 100), 0);
	assert_true(blocks_hold_old(f, e, n));
	nanosleep(&nap, NULL);
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_STATUS), VFS_LEASE_EXPIRED);
	assert_int_equal(churn(f, 8, 200), 0);
	assert_false(blocks_hold_old(f, e, n));
}

static void test_space_pressure_revokes_instead_of_enospc(void **state)
{
	struct fixture *f = *state;
	struct vfs_layout_extent e[64];
	struct statvfs sv;
	uint64_t ino, fit;
	uint32_t n, lease;
	int r = 0;

	/* A data region of 4 MiB: the leased file is a sixteenth of it. */
	vfs_free(f->fs);
	bdev_free(f->meta);
	bdev_free(f->data);
	assert_int_equal(mount_with(f, 4 << 20, 0), 0);
	lease = leased_file(f, true, e, &n, &ino);
	overwrite_f(f);
	/* Writes that need every free block, the held ones too, still succeed. */
	assert_int_equal(VFS_CALL(f->fs, statfs, VFS_ROOT_INO, &sv), 0);
	fit = sv.f_bavail * sv.f_frsize / sizeof(f->buf);
	assert_true(fit >= 2);
	r = churn(f, (unsigned)fit, 100);
	assert_int_equal(r, 0);
	assert_int_equal(lease_state(f->fs, lease, VFS_LEASE_STATUS), VFS_LEASE_EXPIRED);
}

/* Any user may ask for leases: past 1024 at once, the one nearest its end goes. */
static void test_leases_are_capped(void **state)
{
	struct fixture *f = *state;
	struct vfs_layout_extent e[64];
	uint32_t n, first, last = 0;
	uint64_t ino;

	first = leased_file(f, true, e, &n, &ino);
	for (unsigned i = 0; i < 1024; i++) {
		last = VFS_LEASE_NEW;
		assert_int_equal(layout_get(f->fs, ino, &last, e, &n), 0);
	}
	assert_int_equal(lease_state(f->fs, first, VFS_LEASE_STATUS), VFS_LEASE_EXPIRED);
	assert_int_equal(lease_state(f->fs, last, VFS_LEASE_STATUS), VFS_LEASE_HELD);
	assert_int_equal(lease_state(f->fs, last - 1023, VFS_LEASE_STATUS), VFS_LEASE_HELD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_without_lease_freed_blocks_are_reused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lease_keeps_overwritten_blocks_and_is_recalled,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_survives_truncate_and_unlink, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lease_untouched_file_is_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_expires, setup, teardown),
		cmocka_unit_test_setup_teardown(test_space_pressure_revokes_instead_of_enospc, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_leases_are_capped, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
