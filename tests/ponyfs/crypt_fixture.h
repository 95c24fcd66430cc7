/*
 * crypt_fixture.h - what the ponyfs encryption tests share: the test key
 * (bytes 0..63) and its fscrypt identifier, an encrypted directory "enc"
 * under the root, and the image's extent rows opened on an unmounted
 * filesystem, for the tests that tamper with a block's checksum or seal.
 * Include it after fixture.h.
 */
#ifndef PONYFS_TEST_CRYPT_FIXTURE_H
#define PONYFS_TEST_CRYPT_FIXTURE_H

#include "../../src/ponyfs/internal.h"     /* the tamper tests edit extent rows */
#include "pony/crypt.h"

/* The test key: bytes 0..63 (its identifier: test_crypt.c's key_id_hex). */
static inline void test_key(uint8_t key[64])
{
	for (int i = 0; i < 64; i++)
		key[i] = (uint8_t)i;
}

static inline void add_key(struct vfs *fs, uint8_t id[16])
{
	struct vfs_ctx c = test_ctx();
	uint8_t key[64];

	test_key(key);
	assert_int_equal(VFS_CALL(fs, add_key, &c, key, sizeof(key), id, NULL), 0);
}

static inline void policy_bytes(const uint8_t id[16], enum crypt_mode contents, uint8_t out[24])
{
	struct crypt_policy p = { .contents_mode = contents,
				  .filenames_mode = CRYPT_MODE_AES_256_CTS, .flags = 3 };

	memcpy(p.key_id, id, 16);
	crypt_policy_encode(&p, out);
}

static inline uint64_t mkdir_at(struct vfs *fs, uint64_t parent, const char *name)
{
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;

	assert_int_equal(VFS_CALL(fs, mkdir, &c, parent, name, 0755, &e), 0);
	return e.ino;
}

/* An encrypted directory "enc" under the root, with the test key. */
static inline uint64_t enc_dir(struct vfs *fs, enum crypt_mode contents, uint8_t id[16])
{
	struct vfs_ctx c = test_ctx();
	uint8_t pol[24];
	uint64_t d;

	add_key(fs, id);
	d = mkdir_at(fs, VFS_ROOT_INO, "enc");
	policy_bytes(id, contents, pol);
	assert_int_equal(VFS_CALL(fs, set_policy, &c, d, pol, sizeof(pol)), 0);
	return d;
}

/* The image's database, opened as a mount would (the filesystem unmounted). */
static inline sqlite3 *image_db(struct bdev *dev, struct bdev **meta, struct bdev **data)
{
	struct ponyfs_chunks chunks;
	struct ponyfs_sb sb;
	sqlite3 *db = NULL;

	assert_int_equal(ponyfs_image_regions(dev, meta, data), 0);
	assert_int_equal(ponyfs_sb_read(*meta, &sb), 0);
	assert_int_equal(ponyfs_meta_open(*meta, *data, &sb, &chunks, &db), 0);
	return db;
}

/* The one extent of ino: its first data block and its csums. */
static inline void extent_of(sqlite3 *db, uint64_t ino, uint64_t *pblock, uint8_t *csums, size_t len)
{
	sqlite3_stmt *s;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT pblock, csums, flags FROM extents "
					    "WHERE ino = ?1", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	*pblock = (uint64_t)sqlite3_column_int64(s, 0);
	assert_int_equal(sqlite3_column_bytes(s, 1), len);
	memcpy(csums, sqlite3_column_blob(s, 1), len);
	assert_int_equal(sqlite3_column_int64(s, 2), PONYFS_EXT_SEALED);
	sqlite3_finalize(s);
}

static inline void extent_set_csums(sqlite3 *db, uint64_t ino, const uint8_t *csums, size_t len)
{
	sqlite3_stmt *s;

	assert_int_equal(sqlite3_prepare_v2(db, "UPDATE extents SET csums = ?2 WHERE ino = ?1", -1,
					    &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_blob(s, 2, csums, (int)len, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
}

/* Block blk's GCM tag in ino's one extent, one bit flipped (its CRC still
 * right); *pblock: the extent's first block, csums: its seals (len bytes). */
static inline void gcm_tag_flip(sqlite3 *db, uint64_t ino, uint64_t blk, uint64_t *pblock,
				uint8_t *csums, size_t len)
{
	extent_of(db, ino, pblock, csums, len);
	csums[blk * PONYFS_SEAL_BYTES + 4 + CRYPT_GCM_NONCE_SIZE] ^= 1;
	extent_set_csums(db, ino, csums, len);
	ponyfs_sqlite_close(db);
}

/*
 * enc/f in a new GCM directory holding data, the filesystem then unmounted
 * and its database opened on the image (meta, datadev: its regions), for a
 * test to tamper with what the file's extent records.
 */
static inline sqlite3 *gcm_file_then_unmount(struct fixture *f, const uint8_t *data, size_t len,
					     uint8_t id[16], struct vfs_entry *e, struct bdev **meta,
					     struct bdev **datadev)
{
	struct vfs_ctx c = test_ctx();

	enc_dir(f->fs, CRYPT_MODE_AES_256_GCM, id);
	assert_int_equal(test_put(f->fs, "enc/f", data, len), 0);
	assert_int_equal(vfs_walk(f->fs, &c, "enc/f", e), 0);
	vfs_free(f->fs);
	f->fs = NULL;
	return image_db(f->dev, meta, datadev);
}

#endif
