/*
 * test_crypt.c - ponyfs encryption through its vfs ops table: a policy set
 * on an empty directory and inherited, names, symlink targets and contents
 * encrypted on the media (markers searched for in the whole image, WAL
 * included), the same key identifier as Linux's fscrypt, what a mount
 * without the key shows and refuses, key removal (busy files, forced),
 * every bad input the issue lists, and the errors of the data path's
 * second thread (a split read's bad tag, a pipelined write's failure). The FUSE side (ioctls, the CLI, the
 * kernel's caches) is tests/ponyfs/ponyfs_crypt_cli.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include "fixture.h"
#include "crypt_fixture.h"
#include "pony/bdev.h"
#include "pony/util.h"

#define MARK_DATA "PONYMARKERCONTENTS"
#define MARK_NAME "ponymarkername"
#define MARK_LINK "ponymarkertarget/of/the/link"

/* The test key: bytes 0..63; Linux's fscrypt names it this (a kernel's
 * FS_IOC_ADD_ENCRYPTION_KEY gives the same, see tests/crypt). */
static const char key_id_hex[] = "8699c2c53707405da5aba5ae4d8583c0";

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static bool image_has(struct bdev *dev, const char *marker)
{
	size_t len = strlen(marker), chunk = 1u << 20;
	uint8_t *buf = malloc(chunk + len);
	bool found = false;

	assert_non_null(buf);
	for (uint64_t off = 0; !found && off < IMG_SIZE; off += chunk) {
		size_t n = (size_t)MIN((uint64_t)chunk + len, IMG_SIZE - off);

		assert_int_equal(bdev_pread(dev, buf, n, off), 0);
		found = memmem(buf, n, marker, len) != NULL;
	}
	free(buf);
	return found;
}

static void test_key_id_and_policy_inherited(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	uint8_t id[16], pol[24], got[24], n1[16], n2[16];
	struct vfs_entry e;
	char idhex[33];
	uint64_t d, sub;

	d = enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	hex(id, 16, idhex);
	assert_string_equal(idhex, key_id_hex);
	policy_bytes(id, CRYPT_MODE_AES_256_XTS, pol);
	assert_int_equal(VFS_CALL(f->fs, get_policy, d, got, sizeof(got)), 24);
	assert_memory_equal(got, pol, 24);
	sub = mkdir_at(f->fs, d, "sub");
	assert_int_equal(VFS_CALL(f->fs, get_policy, sub, got, sizeof(got)), 24);
	assert_memory_equal(got, pol, 24);
	assert_int_equal(test_put(f->fs, "enc/sub/file", "x", 1), 0);
	assert_int_equal(vfs_walk(f->fs, &c, "enc/sub/file", &e), 0);
	assert_int_equal(VFS_CALL(f->fs, get_policy, e.ino, got, sizeof(got)), 24);
	assert_memory_equal(got, pol, 24);
	/* Each inode its own nonce. */
	assert_int_equal(VFS_CALL(f->fs, get_nonce, sub, n1), 0);
	assert_int_equal(VFS_CALL(f->fs, get_nonce, e.ino, n2), 0);
	assert_memory_not_equal(n1, n2, 16);
	assert_int_equal(VFS_CALL(f->fs, get_policy, VFS_ROOT_INO, got, sizeof(got)), -ENODATA);
	/* A device node has nothing to encrypt. */
	assert_int_equal(VFS_CALL(f->fs, mknod, &c, d, "fifo", S_IFIFO | 0644, 0, &e), 0);
	assert_int_equal(VFS_CALL(f->fs, get_policy, e.ino, got, sizeof(got)), -ENODATA);
}

static void test_nothing_in_clear_on_the_media(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	static uint8_t data[3 * 4096 + 100], back[sizeof(data)];
	struct vfs_entry e;
	char target[64];
	uint8_t id[16];
	uint64_t d;

	for (size_t i = 0; i + strlen(MARK_DATA) <= sizeof(data); i += strlen(MARK_DATA))
		memcpy(data + i, MARK_DATA, strlen(MARK_DATA));
	d = enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	assert_int_equal(test_put(f->fs, "enc/" MARK_NAME, data, sizeof(data)), 0);
	assert_int_equal(VFS_CALL(f->fs, symlink, &c, MARK_LINK, d, "link", &e), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, d, MARK_NAME "dir", 0755, &e), 0);
	/* The control: the same marker outside the policy is found, so the
	 * search would see one. */
	assert_int_equal(test_put(f->fs, "plain", "PONYCONTROLMARKER", 17), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	assert_true(image_has(f->dev, "PONYCONTROLMARKER"));
	assert_false(image_has(f->dev, MARK_DATA));
	assert_false(image_has(f->dev, MARK_NAME));
	assert_false(image_has(f->dev, "ponymarkertarget"));
	/* With the key, all of it reads back. */
	assert_int_equal(test_get(f->fs, "enc/" MARK_NAME, back, sizeof(back)), sizeof(data));
	assert_memory_equal(back, data, sizeof(data));
	assert_int_equal(vfs_walk(f->fs, &c, "enc/link", &e), 0);
	assert_int_equal(VFS_CALL(f->fs, readlink, &c, e.ino, target, sizeof(target)),
			 strlen(MARK_LINK));
	assert_memory_equal(target, MARK_LINK, strlen(MARK_LINK));
	/* And after a remount with the key added again. */
	remount(f);
	add_key(f->fs, id);
	memset(back, 0, sizeof(back));
	assert_int_equal(test_get(f->fs, "enc/" MARK_NAME, back, sizeof(back)), sizeof(data));
	assert_memory_equal(back, data, sizeof(data));
	assert_false(image_has(f->dev, MARK_DATA));
}

struct listing { char names[8][256]; unsigned n; };

static int collect(void *data, const char *name, uint64_t ino, unsigned type, uint64_t next)
{
	struct listing *l = data;

	if (strcmp(name, ".") && strcmp(name, "..") && l->n < 8)
		snprintf(l->names[l->n++], 256, "%s", name);
	return 0;
}

static void list_dir(struct vfs *fs, uint64_t dir, struct listing *l)
{
	struct vfs_ctx c = test_ctx();
	uint64_t fh;

	memset(l, 0, sizeof(*l));
	assert_int_equal(VFS_CALL(fs, opendir, &c, dir, &fh), 0);
	assert_int_equal(VFS_CALL(fs, readdir, &c, dir, fh, 0, collect, l), 0);
	VFS_CALL(fs, releasedir, dir, fh);
}

struct inval_seen { unsigned inodes, entries; bool saw_name, saw_file; };

static void seen_inode(void *data, uint64_t ino)
{
	((struct inval_seen *)data)->inodes++;
}

static void seen_entry(void *data, uint64_t parent, const char *name)
{
	struct inval_seen *s = data;

	s->entries++;
	s->saw_name |= !strcmp(name, "file");
	s->saw_file |= !strcmp(name, "secret");
}

static void test_without_the_key(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	char long_name[256], buf[256];
	struct vfs_entry e, file = { 0 };
	struct listing l;
	uint64_t fh, d;
	uint8_t id[16];
	int target_len;

	memset(long_name, 'L', 255);
	long_name[255] = '\0';
	d = enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	assert_int_equal(test_put(f->fs, "enc/secret", "12345", 5), 0);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, d, long_name, 0755, &e), 0);
	assert_int_equal(VFS_CALL(f->fs, symlink, &c, "somewhere", d, "ln", &e), 0);
	remount(f);     /* keys are per mount: this one has none */
	assert_int_equal(vfs_walk(f->fs, &c, "enc", &e), 0);
	d = e.ino;
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, d, "secret", &e), -ENOENT);
	list_dir(f->fs, d, &l);
	assert_int_equal(l.n, 3);
	/* Adding the key tells the front end what its kernel cached without
	 * it (the no-key names); removing it again, what it cached with. */
	{
		struct inval_seen seen = { 0 };
		struct vfs_inval inval = { seen_inode, seen_entry, &seen };
		uint8_t key[64], id2[16];
		unsigned out;

		test_key(key);
		assert_int_equal(VFS_CALL(f->fs, add_key, &c, key, 64, id2, &inval), 0);
		/* Each name in both forms: the no-key one the kernel may list, the
		 * plaintext one it may hold a negative entry for. */
		assert_true(seen.inodes >= 3);
		assert_int_equal(seen.entries, 6);
		assert_true(seen.saw_file);
		assert_int_equal(VFS_CALL(f->fs, remove_key, &c, id2, 0, &inval, &out), 0);
	}
	for (unsigned i = 0; i < l.n; i++) {
		assert_null(strstr(l.names[i], "secret"));
		assert_int_equal(VFS_CALL(f->fs, lookup, &c, d, l.names[i], &e), 0);
		if (S_ISREG(e.attr.stx_mode))
			file = e;
		/* Sizes and modes stay visible, contents never. */
		if (S_ISREG(e.attr.stx_mode))
			assert_int_equal(e.attr.stx_size, 5);
		if (S_ISLNK(e.attr.stx_mode)) {
			target_len = VFS_CALL(f->fs, readlink, &c, e.ino, buf, sizeof(buf));
			assert_true(target_len > 0);
			assert_null(memmem(buf, (size_t)target_len, "somewhere", 9));
		}
	}
	assert_int_equal(VFS_CALL(f->fs, open, &c, file.ino, O_RDONLY, &fh), -ENOKEY);
	assert_int_equal(VFS_CALL(f->fs, setattr, &c, file.ino, VFS_NO_FH,
				  &(struct vfs_setattr){ .valid = VFS_SET_SIZE }, &e.attr), -ENOKEY);
	assert_int_equal(VFS_CALL(f->fs, create, &c, d, "new", 0644, O_WRONLY, &e, &fh), -ENOKEY);
	assert_int_equal(VFS_CALL(f->fs, mkdir, &c, d, "newdir", 0755, &e), -ENOKEY);
	assert_int_equal(VFS_CALL(f->fs, link, &c, file.ino, d, "hard", &e), -ENOKEY);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, d, l.names[0], VFS_ROOT_INO, "out", 0),
			 -ENOKEY);
	/* An admin can still delete: every no-key name, the long one's too. */
	for (unsigned i = 0; i < l.n; i++) {
		assert_int_equal(VFS_CALL(f->fs, lookup, &c, d, l.names[i], &e), 0);
		assert_int_equal(S_ISDIR(e.attr.stx_mode) ?
				 VFS_CALL(f->fs, rmdir, &c, d, l.names[i]) :
				 VFS_CALL(f->fs, unlink, &c, d, l.names[i]), 0);
	}
	list_dir(f->fs, d, &l);
	assert_int_equal(l.n, 0);
	/* A name that is no no-key name is simply not there. */
	assert_int_equal(VFS_CALL(f->fs, unlink, &c, d, "plain-name"), -ENOENT);
}

static void test_bad_input(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	uint8_t id[16], other[16], pol[24], gcm[24], key[64];
	struct vfs_entry e, file;
	uint64_t d, d2, full;

	d = enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	policy_bytes(id, CRYPT_MODE_AES_256_XTS, pol);
	policy_bytes(id, CRYPT_MODE_AES_256_GCM, gcm);
	/* The same policy again is fine; another is EEXIST. */
	assert_int_equal(VFS_CALL(f->fs, set_policy, &c, d, pol, 24), 0);
	assert_int_equal(VFS_CALL(f->fs, set_policy, &c, d, gcm, 24), -EEXIST);
	full = mkdir_at(f->fs, VFS_ROOT_INO, "full");
	assert_int_equal(test_put(f->fs, "full/x", "x", 1), 0);
	assert_int_equal(VFS_CALL(f->fs, set_policy, &c, full, pol, 24), -ENOTEMPTY);
	assert_int_equal(vfs_walk(f->fs, &c, "full/x", &file), 0);
	assert_int_equal(VFS_CALL(f->fs, set_policy, &c, file.ino, pol, 24), -ENOTDIR);
	/* A version 1 policy, a wrong size, an unknown mode. */
	assert_int_equal(VFS_CALL(f->fs, set_policy, &c, full, pol, 12), -EINVAL);
	pol[1] = 9;
	assert_int_equal(VFS_CALL(f->fs, set_policy, &c, full, pol, 24), -EINVAL);
	/* A key of the wrong size; a policy naming a key never added. */
	test_key(key);
	assert_int_equal(VFS_CALL(f->fs, add_key, &c, key, 32, other, NULL), -EINVAL);
	memset(other, 0xab, sizeof(other));
	policy_bytes(other, CRYPT_MODE_AES_256_XTS, pol);
	d2 = mkdir_at(f->fs, VFS_ROOT_INO, "enc2");
	/* A user who did not add it: ENOKEY (root may, as Linux's CAP_FOWNER). */
	{
		struct vfs_ctx user = c;

		assert_int_equal(VFS_CALL(f->fs, setattr, &c, d2, VFS_NO_FH, &(struct vfs_setattr){
					  .valid = VFS_SET_UID, .uid = 1000 }, &e.attr), 0);
		user.uid = 1000;
		assert_int_equal(VFS_CALL(f->fs, set_policy, &user, d2, pol, 24), -ENOKEY);
		assert_int_equal(VFS_CALL(f->fs, set_policy, &user, d2, gcm, 24), -ENOKEY);
	}
	/* Another policy (same key, GCM contents) for enc2. */
	assert_int_equal(VFS_CALL(f->fs, set_policy, &c, d2, gcm, 24), 0);
	assert_int_equal(test_put(f->fs, "enc/a", "a", 1), 0);
	assert_int_equal(vfs_walk(f->fs, &c, "enc/a", &file), 0);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, d, "a", d2, "a", 0), -EXDEV);
	assert_int_equal(VFS_CALL(f->fs, link, &c, file.ino, d2, "a", &e), -EXDEV);
	/* Into an encrypted directory from outside: EXDEV; out of it: allowed. */
	assert_int_equal(VFS_CALL(f->fs, rename, &c, full, "x", d, "x", 0), -EXDEV);
	assert_int_equal(VFS_CALL(f->fs, rename, &c, d, "a", VFS_ROOT_INO, "a", 0), 0);
	/* An unknown key: not present; removing it: ENOKEY. */
	struct vfs_key_status st;
	unsigned out;

	assert_int_equal(VFS_CALL(f->fs, key_status, &c, other, &st), 0);
	assert_int_equal(st.status, VFS_KEY_ABSENT);
	assert_int_equal(VFS_CALL(f->fs, remove_key, &c, other, 0, NULL, &out), -ENOKEY);
}

static void test_key_removal(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct inval_seen seen = { 0 };
	struct vfs_inval inval = { seen_inode, seen_entry, &seen };
	struct vfs_key_status st;
	uint64_t ino, fh, fh2;
	uint8_t id[16];
	unsigned out;
	char buf[8];

	enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	assert_int_equal(test_put(f->fs, "enc/file", "abcdef", 6), 0);
	assert_int_equal(VFS_CALL(f->fs, key_status, &c, id, &st), 0);
	assert_int_equal(st.status, VFS_KEY_PRESENT);
	assert_true(st.added_by_self);
	assert_int_equal(st.user_count, 1);
	/* A file kept open: the key is incompletely removed until it closes. */
	assert_int_equal(test_open(f->fs, "enc/file", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, "XY", 2, 0), 2);   /* dirty */
	assert_int_equal(VFS_CALL(f->fs, remove_key, &c, id, 0, &inval, &out), 0);
	assert_int_equal(out, VFS_KEY_FILES_BUSY);
	assert_true(seen.inodes >= 2);  /* the directory and the file */
	assert_true(seen.saw_name);
	assert_int_equal(VFS_CALL(f->fs, key_status, &c, id, &st), 0);
	assert_int_equal(st.status, VFS_KEY_INCOMPLETELY_REMOVED);
	assert_int_equal(test_open(f->fs, "enc/file", O_RDONLY, &ino, &fh2), -ENOENT);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, buf, sizeof(buf), 0), 6);
	assert_memory_equal(buf, "XYcdef", 6);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, key_status, &c, id, &st), 0);
	assert_int_equal(st.status, VFS_KEY_ABSENT);
	/* Added again: the file (written back under the key) reads as written. */
	add_key(f->fs, id);
	assert_int_equal(test_get(f->fs, "enc/file", buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "XYcdef", 6);
	/* Forced: a descriptor kept open fails from then on. */
	assert_int_equal(test_open(f->fs, "enc/file", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, remove_key, &c, id, VFS_KEY_FORCE, NULL, &out), 0);
	assert_int_equal(out, 0);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, buf, sizeof(buf), 0), -ENOKEY);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, "zz", 2, 0), -ENOKEY);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(VFS_CALL(f->fs, key_status, &c, id, &st), 0);
	assert_int_equal(st.status, VFS_KEY_ABSENT);
	/* Another user's removal of root's key: not theirs (ENOKEY). */
	add_key(f->fs, id);
	c.uid = 1000;
	assert_int_equal(VFS_CALL(f->fs, remove_key, &c, id, 0, NULL, &out), -ENOKEY);
	assert_int_equal(VFS_CALL(f->fs, remove_key, &c, id, VFS_KEY_ALL_USERS, NULL, &out),
			 -EACCES);
}

/* A directory's names contexts are cached from its first name on: a
 * removal of the key drops them, so neither a listing nor a lookup made
 * a moment later shows a plaintext name, and adding the key back makes
 * them anew. */
static void test_key_removal_drops_the_cached_names(void **state)
{
	struct fixture *f = *state;
	struct vfs_ctx c = test_ctx();
	struct vfs_entry e;
	struct listing l;
	uint64_t d;
	uint8_t id[16];
	unsigned out;

	d = enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	assert_int_equal(test_put(f->fs, "enc/visible-name", "x", 1), 0);
	list_dir(f->fs, d, &l);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.names[0], "visible-name");
	assert_int_equal(VFS_CALL(f->fs, remove_key, &c, id, 0, NULL, &out), 0);
	assert_int_equal(out, 0);
	list_dir(f->fs, d, &l);
	assert_int_equal(l.n, 1);
	assert_string_not_equal(l.names[0], "visible-name");
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, d, "visible-name", &e), -ENOENT);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, d, l.names[0], &e), 0);
	add_key(f->fs, id);
	assert_int_equal(VFS_CALL(f->fs, lookup, &c, d, "visible-name", &e), 0);
}

static void test_gcm_round_trip_and_overwrite(void **state)
{
	struct fixture *f = *state;
	static uint8_t data[600000], back[sizeof(data)];
	uint64_t ino, fh;
	uint8_t id[16];

	test_fill(data, sizeof(data), 7);
	enc_dir(f->fs, CRYPT_MODE_AES_256_GCM, id);
	assert_int_equal(test_put(f->fs, "enc/big", data, sizeof(data)), 0);
	assert_int_equal(VFS_CALL(f->fs, syncfs), 0);
	/* An overwrite in the middle (a partial block: read, decrypt, re-seal). */
	assert_int_equal(test_open(f->fs, "enc/big", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, "hello", 5, 70001), 5);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	memcpy(data + 70001, "hello", 5);
	remount(f);
	add_key(f->fs, id);
	assert_int_equal(test_get(f->fs, "enc/big", back, sizeof(back)), sizeof(data));
	assert_memory_equal(back, data, sizeof(data));
}

struct log_seen { bool tag_line; };

static void log_line(void *data, const char *text)
{
	((struct log_seen *)data)->tag_line |= strstr(text, "authentication tag") &&
					       strstr(text, "offset 4096");
}


/*
 * GCM: a block whose seal was changed (its CRC still right), and a block
 * copied whole (ciphertext, CRC, seal) over the next one's place, both
 * fail with EIO and a log line; the untouched block still reads.
 */
static void test_gcm_tamper_is_eio(void **state)
{
	struct fixture *f = *state;
	struct log_seen seen = { false };
	struct ponyfs_options o = { .report = log_line, .report_arg = &seen };
	static uint8_t data[3 * 4096], back[4096], blk[4096];
	uint8_t csums[3 * PONYFS_SEAL_BYTES], id[16];
	struct bdev *meta, *datadev;
	struct vfs_entry e;
	uint64_t pblock, fh;
	sqlite3 *db;

	test_fill(data, sizeof(data), 3);
	db = gcm_file_then_unmount(f, data, sizeof(data), id, &e, &meta, &datadev);
	extent_of(db, e.ino, &pblock, csums, sizeof(csums));
	/* Block 1's tag, one bit flipped. */
	csums[PONYFS_SEAL_BYTES + 4 + CRYPT_GCM_NONCE_SIZE] ^= 1;
	/* Block 2 becomes block 0 moved: its bytes, CRC and seal. */
	assert_int_equal(bdev_pread(datadev, blk, 4096, pblock * 4096), 0);
	assert_int_equal(bdev_pwrite(datadev, blk, 4096, (pblock + 2) * 4096), 0);
	memcpy(csums + 2 * PONYFS_SEAL_BYTES, csums, PONYFS_SEAL_BYTES);
	extent_set_csums(db, e.ino, csums, sizeof(csums));
	ponyfs_sqlite_close(db);
	bdev_free(meta);
	bdev_free(datadev);
	assert_int_equal(ponyfs_mount_image(f->dev, &o, &f->fs), 0);
	add_key(f->fs, id);
	assert_int_equal(test_open(f->fs, "enc/f", O_RDONLY, &e.ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, 4096, 0), 4096);
	assert_memory_equal(back, data, 4096);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, 4096, 4096), -EIO);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, 4096, 8192), -EIO);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_true(seen.tag_line);
	/* fsck, without the key, sees CRCs that match (teardown runs it): the
	 * tag is what caught the change. */
}

/*
 * A read of 1 MiB of a GCM file is split between two threads (the mount's
 * helper takes the second half): a tag that fails in that half still
 * fails the read with EIO, and the block's plaintext is not in the
 * buffer; the blocks before it still read alone.
 */
static void test_gcm_tamper_in_a_split_read_is_eio(void **state)
{
	struct fixture *f = *state;
	enum { NBLK = 256, BAD = 200 };
	static uint8_t data[NBLK * 4096], back[NBLK * 4096];
	static uint8_t csums[NBLK * PONYFS_SEAL_BYTES];
	struct bdev *meta, *datadev;
	struct vfs_entry e;
	uint64_t pblock, fh;
	uint8_t id[16];
	sqlite3 *db;

	test_fill(data, sizeof(data), 11);
	db = gcm_file_then_unmount(f, data, sizeof(data), id, &e, &meta, &datadev);
	gcm_tag_flip(db, e.ino, BAD, &pblock, csums, sizeof(csums));
	bdev_free(meta);
	bdev_free(datadev);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	add_key(f->fs, id);
	assert_int_equal(test_open(f->fs, "enc/f", O_RDONLY, &e.ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, sizeof(back), 0), -EIO);
	assert_memory_not_equal(back + BAD * 4096, data + BAD * 4096, 4096);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, BAD * 4096, 0), BAD * 4096);
	assert_memory_equal(back, data, BAD * 4096);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, 4096, BAD * 4096), -EIO);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
}

/*
 * A 1 MiB read of an encrypted file is cut into pieces that the reading
 * thread and the mount's helper take in turn (read.c): over a file whose
 * range is several runs (a hole punched, blocks under a pending write),
 * each piece is decrypted under its own block numbers, aligned or not,
 * and the helper took part, and none had to be read again under the
 * lock (which would hide a piece read at the wrong blocks: their
 * checksums fail, and the locked path reads them right).
 */
static void test_shared_read_over_many_runs(void **state)
{
	struct fixture *f = *state;
	enum { NBLK = 300 };
	static uint8_t data[NBLK * 4096], back[NBLK * 4096];
	struct ponyfs *p;
	uint64_t ino, fh, jobs, redone;
	uint8_t id[16];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();         /* no helper on one CPU: every piece is the reader's */
	test_fill(data, sizeof(data), 13);
	enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	assert_int_equal(test_put(f->fs, "enc/f", data, sizeof(data)), 0);
	assert_int_equal(test_open(f->fs, "enc/f", O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, fallocate, ino, fh,
				  FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100 * 4096, 7 * 4096), 0);
	memset(data + 100 * 4096, 0, 7 * 4096);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	remount(f);
	add_key(f->fs, id);
	p = ponyfs_of(f->fs);
	assert_int_equal(test_open(f->fs, "enc/f", O_RDWR, &ino, &fh), 0);
	/* Cached, not yet written: the read takes these from the cache. */
	test_fill(data + 201 * 4096, 2 * 4096, 14);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, data + 201 * 4096, 2 * 4096, 201 * 4096),
			 2 * 4096);
	jobs = __atomic_load_n(&p->helper_jobs, __ATOMIC_RELAXED);
	redone = p->reads_redone;
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, back, 1 << 20, 0), 1 << 20);
	assert_memory_equal(back, data, 1 << 20);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, back, 1 << 20, 3 * 4096 + 17), 1 << 20);
	assert_memory_equal(back, data + 3 * 4096 + 17, 1 << 20);
	assert_true(__atomic_load_n(&p->helper_jobs, __ATOMIC_RELAXED) > jobs);
	assert_int_equal(p->reads_redone, redone);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
}

/*
 * A mount of the test image whose data region fails every write once
 * armed (*ret_fault), and an encrypted directory under the test key.
 */
static void mount_with_write_fault(struct fixture *f, struct bdev **ret_fault)
{
	struct bdev *meta, *data_dev, *fault;
	struct vfs *v;
	uint8_t id[16];

	vfs_free(f->fs);
	assert_int_equal(ponyfs_image_regions(f->dev, &meta, &data_dev), 0);
	assert_int_equal(bdev_fault_new(data_dev, &fault), 0);
	assert_int_equal(ponyfs_mount(meta, fault, NULL, &v), 0);
	ponyfs_of(v)->owned[0] = meta;          /* freed with the mount */
	ponyfs_of(v)->owned[1] = fault;
	f->fs = v;
	enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	*ret_fault = fault;
}

/* Writes size bytes to enc/f, makes every data write fail, and expects
 * the fsync to fail with EIO. */
static void write_then_fail_fsync(struct fixture *f, size_t size)
{
	static uint8_t data[1 << 20];
	struct bdev *fault;
	uint64_t ino, fh;

	assert_true(size <= sizeof(data));
	mount_with_write_fault(f, &fault);
	test_fill(data, size, 5);
	assert_int_equal(test_open(f->fs, "enc/f", O_CREAT | O_WRONLY, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(f->fs, write, ino, fh, data, size, 0), (ssize_t)size);
	assert_int_equal(bdev_fault_add_bad(fault, 0, bdev_size(fault), BDEV_FAULT_WRITE), 0);
	assert_int_equal(VFS_CALL(f->fs, fsync, ino, fh, false), -EIO);
	VFS_CALL(f->fs, release, ino, fh);
}

/*
 * An encrypted writeback writes each run on the helper while it encrypts
 * the next: a write that fails there, the last run's too (here the only
 * one: 1 MiB), still fails the fsync (EIO), and nothing of the file is
 * committed (teardown's fsck finds the image clean).
 */
static void test_encrypted_write_error_fails_the_fsync(void **state)
{
	write_then_fail_fsync(*state, 1 << 20);
}

/* A short run is written in line instead: its error fails the fsync too. */
static void test_small_encrypted_write_error_fails_the_fsync(void **state)
{
	write_then_fail_fsync(*state, 3 * 4096);
}

/* Writes size bytes of pattern seed to enc/NAME and fsyncs them; returns
 * how many jobs the mount's helper took meanwhile. */
static uint64_t write_fsync_jobs(struct vfs *fs, const char *name, size_t size, int seed)
{
	static uint8_t data[1 << 20], back[1 << 20];
	struct ponyfs *p = ponyfs_of(fs);
	uint64_t ino, fh, before = __atomic_load_n(&p->helper_jobs, __ATOMIC_RELAXED);

	test_fill(data, size, seed);
	assert_int_equal(test_open(fs, name, O_CREAT | O_RDWR, &ino, &fh), 0);
	assert_int_equal(VFS_CALL(fs, write, ino, fh, data, size, 0), (ssize_t)size);
	assert_int_equal(VFS_CALL(fs, fsync, ino, fh, false), 0);
	before = __atomic_load_n(&p->helper_jobs, __ATOMIC_RELAXED) - before;
	assert_int_equal(VFS_CALL(fs, read, ino, fh, back, size, 0), (ssize_t)size);
	assert_memory_equal(back, data, size);
	assert_int_equal(VFS_CALL(fs, release, ino, fh), 0);
	return before;
}

/*
 * A small file's writeback (an untar's) encrypts and writes in line: a
 * hand-off to the helper per file cost a wake-up and a wait and hid
 * nothing. A 1 MiB file's still goes to the helper (on more than one CPU),
 * and both read back.
 */
static void test_small_encrypted_writeback_stays_in_line(void **state)
{
	struct fixture *f = *state;
	uint8_t id[16];

	enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	/* The large one first: the helper is running by the small one's. */
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();         /* no helper on one CPU: nothing to tell apart */
	assert_true(write_fsync_jobs(f->fs, "enc/large", 1 << 20, 8) > 0);
	assert_int_equal(write_fsync_jobs(f->fs, "enc/small", 3 * 4096, 7), 0);
}

/*
 * The encrypted writeback's two bounce buffers are the halves of one
 * 2 MiB-aligned slab, so a huge page can back them and each run reaches
 * the disk as one segment: malloc()ed ones were 256 scattered pages, split
 * on the way into two requests and written at half a plain file's rate.
 */
static void test_encrypted_writeback_buffers_share_one_slab(void **state)
{
	struct fixture *f = *state;
	struct ponyfs *p = ponyfs_of(f->fs);
	uintptr_t a, b;
	uint8_t id[16];

	enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	write_fsync_jobs(f->fs, "enc/one", 1 << 20, 9);
	a = (uintptr_t)ponyfs_crypt_out_next_buf(p);
	write_fsync_jobs(f->fs, "enc/two", 1 << 20, 10);
	b = (uintptr_t)ponyfs_crypt_out_next_buf(p);
	assert_true(a && b && a != b);
	assert_int_equal(MIN(a, b) % PONYFS_SLAB_BYTES, 0);
	assert_int_equal(MAX(a, b) - MIN(a, b), (uintptr_t)PONYFS_IO_BLOCKS * 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_key_id_and_policy_inherited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_in_clear_on_the_media, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_the_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_removal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_removal_drops_the_cached_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gcm_round_trip_and_overwrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gcm_tamper_is_eio, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gcm_tamper_in_a_split_read_is_eio, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_shared_read_over_many_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_encrypted_write_error_fails_the_fsync, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_small_encrypted_write_error_fails_the_fsync,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_encrypted_writeback_stays_in_line, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_encrypted_writeback_buffers_share_one_slab,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
