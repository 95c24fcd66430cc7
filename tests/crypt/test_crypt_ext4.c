/*
 * test_crypt_ext4.c - Linux's own fscrypt on ext4 as the oracle for
 * src/crypt: the kernel names a 64-byte key, encrypts a file's blocks and
 * its directory's names on a loop-mounted ext4 image, and pony, given only
 * the key and the nonces the kernel reports, must compute the same
 * identifier, the same policy bytes, the same ciphertext blocks (read raw from the image) and
 * the same names (as the kernel lists them without the key). Needs root,
 * mkfs.ext4 and a kernel with ext4 encryption; otherwise it says why and
 * exits 77 (skipped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fscrypt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pony/crypt.h"

#define NBLOCKS 3

static char dir[64], img[96], mnt[96], sub[128];
static uint8_t master[CRYPT_MASTER_KEY_SIZE];

static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	return system(cmd);
}

static void skip_because(const char *why)
{
	printf("SKIP: %s\n", why);
	if (*mnt)
		run("umount %s 2>/dev/null; rm -rf %s", mnt, dir);
	exit(77);
}

static void name_of(char *out, size_t len, char c)
{
	memset(out, c, len);
	out[len] = '\0';
	memcpy(out, "name-", 5);
}

static uint64_t physical_of(int fd, uint64_t lblk)
{
	struct { struct fiemap fm; struct fiemap_extent ext[8]; } f = { 0 };

	f.fm.fm_start = lblk * CRYPT_BLOCK_SIZE;
	f.fm.fm_length = CRYPT_BLOCK_SIZE;
	f.fm.fm_flags = FIEMAP_FLAG_SYNC;
	f.fm.fm_extent_count = 8;
	assert_int_equal(ioctl(fd, FS_IOC_FIEMAP, &f.fm), 0);
	assert_true(f.fm.fm_mapped_extents >= 1);
	return f.ext[0].fe_physical + (lblk * CRYPT_BLOCK_SIZE - f.ext[0].fe_logical);
}

static void test_pony_derives_and_encrypts_as_ext4_does(void **state)
{
	static uint8_t plain[NBLOCKS][CRYPT_BLOCK_SIZE], raw[CRYPT_BLOCK_SIZE], mine[CRYPT_BLOCK_SIZE];
	uint8_t file_nonce[16], dir_nonce[16], fkey[64], nkey[32], ct[CRYPT_NAME_MAX];
	char short_name[32], long_name[201], path[512], id[33];
	struct fscrypt_policy_v2 pol = {
		.version = FSCRYPT_POLICY_V2,
		.contents_encryption_mode = FSCRYPT_MODE_AES_256_XTS,
		.filenames_encryption_mode = FSCRYPT_MODE_AES_256_CTS,
		.flags = FSCRYPT_POLICY_FLAGS_PAD_16,
	};
	struct crypt_contents *cc;
	uint64_t phys[NBLOCKS];
	struct crypt_master m;
	unsigned found = 0;
	size_t ctlen;
	int mfd, dfd, fd, imgfd;
	struct dirent *de;
	DIR *d;

	/* The kernel adds the key and names it. */
	struct fscrypt_add_key_arg *arg = calloc(1, sizeof(*arg) + sizeof(master));

	assert_non_null(arg);
	arg->key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER;
	arg->raw_size = sizeof(master);
	memcpy(arg->raw, master, sizeof(master));
	mfd = open(mnt, O_RDONLY | O_DIRECTORY);
	assert_true(mfd >= 0);
	if (ioctl(mfd, FS_IOC_ADD_ENCRYPTION_KEY, arg) < 0)
		skip_because("this kernel's ext4 takes no fscrypt key (FS_IOC_ADD_ENCRYPTION_KEY failed)");
	assert_int_equal(crypt_master_init(&m, master, sizeof(master)), 0);
	for (unsigned i = 0; i < 16; i++)
		sprintf(id + 2 * i, "%02x", arg->key_spec.u.identifier[i]);
	printf("ext4's identifier of the key: %s\n", id);
	assert_memory_equal(m.id, arg->key_spec.u.identifier, CRYPT_KEY_ID_SIZE);
	memcpy(pol.master_key_identifier, m.id, sizeof(m.id));
	free(arg);

	/* A directory under a policy, a file of three blocks, two names. */
	assert_int_equal(mkdir(sub, 0755), 0);
	dfd = open(sub, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(ioctl(dfd, FS_IOC_SET_ENCRYPTION_POLICY, &pol), 0);
	/* The policy's bytes as the kernel keeps them are pony's encoding. */
	{
		struct fscrypt_get_policy_ex_arg ex = { .policy_size = sizeof(ex.policy) };
		struct crypt_policy got, ours = { CRYPT_MODE_AES_256_XTS, CRYPT_MODE_AES_256_CTS, 2 };
		uint8_t bytes[CRYPT_POLICY_SIZE];

		assert_int_equal(ioctl(dfd, FS_IOC_GET_ENCRYPTION_POLICY_EX, &ex), 0);
		assert_int_equal(ex.policy_size, CRYPT_POLICY_SIZE);
		assert_int_equal(crypt_policy_decode((const uint8_t *)&ex.policy, ex.policy_size, &got), 0);
		memcpy(ours.key_id, m.id, sizeof(m.id));
		assert_true(crypt_policy_equal(&got, &ours));
		crypt_policy_encode(&ours, bytes);
		assert_memory_equal(bytes, &ex.policy, CRYPT_POLICY_SIZE);
	}
	assert_int_equal(ioctl(dfd, FS_IOC_GET_ENCRYPTION_NONCE, dir_nonce), 0);
	name_of(short_name, 12, 's');
	name_of(long_name, 200, 'l');
	snprintf(path, sizeof(path), "%s/%s", sub, long_name);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/%s", sub, short_name);
	fd = open(path, O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	for (unsigned b = 0; b < NBLOCKS; b++)
		for (unsigned i = 0; i < CRYPT_BLOCK_SIZE; i++)
			plain[b][i] = (uint8_t)(b * 31 + i * 7);
	assert_int_equal(write(fd, plain, sizeof(plain)), (ssize_t)sizeof(plain));
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(ioctl(fd, FS_IOC_GET_ENCRYPTION_NONCE, file_nonce), 0);
	for (unsigned b = 0; b < NBLOCKS; b++)
		phys[b] = physical_of(fd, b);
	close(fd);
	close(dfd);
	close(mfd);
	assert_int_equal(run("umount %s%s", mnt, ""), 0);

	/* The blocks on the image are what pony encrypts from the key and nonce. */
	assert_int_equal(crypt_file_key(&m, file_nonce, CRYPT_MODE_AES_256_XTS, fkey, 64), 0);
	assert_int_equal(crypt_contents_new(CRYPT_MODE_AES_256_XTS, fkey, 64, &cc), 0);
	imgfd = open(img, O_RDONLY);
	assert_true(imgfd >= 0);
	for (unsigned b = 0; b < NBLOCKS; b++) {
		assert_int_equal(pread(imgfd, raw, sizeof(raw), (off_t)phys[b]), (ssize_t)sizeof(raw));
		assert_int_equal(crypt_xts_encrypt(cc, b, plain[b], mine), 0);
		assert_memory_equal(raw, mine, sizeof(raw));
		assert_int_equal(crypt_xts_decrypt(cc, b, raw, mine), 0);
		assert_memory_equal(mine, plain[b], sizeof(mine));
	}
	close(imgfd);
	crypt_contents_free(cc);

	/* Mounted again, no key: the kernel lists no-key names of pony's ciphertexts. */
	assert_int_equal(run("mount -o loop %s %s", img, mnt), 0);
	assert_int_equal(crypt_file_key(&m, dir_nonce, CRYPT_MODE_AES_256_CTS, nkey, 32), 0);
	d = opendir(sub);
	assert_non_null(d);
	while ((de = readdir(d))) {
		const char *want[] = { short_name, long_name };

		if (de->d_name[0] == '.')
			continue;
		for (unsigned i = 0; i < 2; i++) {
			assert_int_equal(crypt_name_encrypt(nkey, 16, want[i], strlen(want[i]), ct,
							    &ctlen), 0);
			if (crypt_nokey_name_matches(de->d_name, strlen(de->d_name), ct, ctlen)) {
				printf("%s -> %.40s...\n", i ? "long name" : "short name", de->d_name);
				found |= 1u << i;
			}
		}
	}
	closedir(d);
	assert_int_equal(found, 3);
	crypt_master_wipe(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pony_derives_and_encrypts_as_ext4_does),
	};
	int r;

	if (geteuid() != 0)
		skip_because("needs root (a loop mount)");
	snprintf(dir, sizeof(dir), "/tmp/pony-crypt-ext4.XXXXXX");
	if (!mkdtemp(dir))
		skip_because("no temporary directory");
	snprintf(img, sizeof(img), "%s/ext4.img", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(sub, sizeof(sub), "%s/secret", mnt);
	for (unsigned i = 0; i < sizeof(master); i++)
		master[i] = (uint8_t)i;
	if (mkdir(mnt, 0755) < 0 || run("truncate -s 64M %s%s", img, ""))
		skip_because("cannot make the image");
	if (run("mkfs.ext4 -q -F -b 4096 -O encrypt %s%s >/dev/null 2>&1", img, ""))
		skip_because("mkfs.ext4 -O encrypt failed (e2fsprogs missing?)");
	if (run("mount -o loop %s %s 2>/dev/null", img, mnt)) {
		*mnt = '\0';
		run("rm -rf %s%s", dir, "");
		skip_because("cannot loop-mount ext4 here");
	}
	r = cmocka_run_group_tests(tests, NULL, NULL);
	run("umount %s 2>/dev/null; rm -rf %s", mnt, dir);
	return r;
}
