/*
 * fixture.h - the cmocka fixture of the ponyfs tests that drive one
 * filesystem through its vfs ops table: a fresh ponyfs on a 64 MiB memory
 * bdev per test, checked clean by fsck when the test is done and at every
 * remount(). Include it after <cmocka.h>.
 */
#ifndef PONYFS_TEST_FIXTURE_H
#define PONYFS_TEST_FIXTURE_H

#include "helpers.h"

#define IMG_SIZE (64u << 20)

struct fixture {
	struct bdev *dev;
	struct vfs *fs;
};

static inline int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(bdev_mem_new(IMG_SIZE, &f->dev), 0);
	assert_int_equal(ponyfs_mkfs_image(f->dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	*state = f;
	return 0;
}

static inline void check_clean(struct bdev *dev)
{
	assert_int_equal(ponyfs_fsck_image(dev, PONYFS_FSCK_DATA, NULL, NULL), 0);
}

static inline int teardown(void **state)
{
	struct fixture *f = *state;

	vfs_free(f->fs);
	check_clean(f->dev);
	bdev_free(f->dev);
	free(f);
	return 0;
}

static inline void remount(struct fixture *f)
{
	vfs_free(f->fs);
	check_clean(f->dev);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
}

#endif
