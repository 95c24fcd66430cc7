/*
 * test_crypt_direct.c - an encrypted file's blocks read around the host's
 * page cache (read.c's runs_fetch_direct(), bdev_pread_direct()) on an
 * image that is a real file, as a mount's is: reads at every alignment of
 * a multi-block file return the written bytes, in both contents modes
 * (the large ones around the cache, a small one through it),
 * without the locked path redoing any (which would hide blocks fetched
 * from the wrong place: their checksums fail, and it reads them right);
 * a block changed on the image through the page cache is what the direct
 * read sees; and a bad tag or checksum inside a large read, or in a
 * stream's buffer, still fails it with EIO and returns none of that block.
 * The stream test runs on a plain file too, read as the mount reads
 * (vfs read_iov), whose READs are answered from the buffers in place; and
 * a block's buffer filled from good bytes is still refused once the plan's
 * CRC for it differs (plain: in place; XTS: copied out and decrypted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <unistd.h>

#include "fixture.h"
#include "crypt_fixture.h"
#include "pony/bdev.h"
#include "pony/util.h"

/* The fixture on an image file (O_DIRECT needs one; /var/tmp, since a
 * tmpfs /tmp may refuse it), unlinked at once: the bdev keeps it open. */
static int setup_file(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[] = "/var/tmp/pony-test-crypt-direct.XXXXXX";
	int fd = mkstemp(path);

	assert_non_null(f);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, IMG_SIZE), 0);
	close(fd);
	assert_int_equal(bdev_file_open(path, O_RDWR, &f->dev), 0);
	unlink(path);
	assert_int_equal(ponyfs_mkfs_image(f->dev, NULL), 0);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	*state = f;
	return 0;
}

enum { NBLK = 37, TAIL = 1234, SIZE = NBLK * 4096 + TAIL };

/* Reads that went around the host's cache: direct ones, and blocks a
 * stream's buffers answered (stream.c). */
static uint64_t reads_around(struct ponyfs *p)
{
	return __atomic_load_n(&p->reads_direct, __ATOMIC_RELAXED) +
	       __atomic_load_n(&p->stream_hits, __ATOMIC_RELAXED);
}

/* name in a new directory of mode holding data (test_fill with seed),
 * remounted so nothing of it is cached, its key added again. */
static void encrypted_file_cold(struct fixture *f, enum crypt_mode mode, const char *name,
				uint8_t *data, size_t len, unsigned seed)
{
	uint8_t id[16];

	test_fill(data, len, seed);
	enc_dir(f->fs, mode, id);
	assert_int_equal(test_put(f->fs, name, data, len), 0);
	remount(f);
	add_key(f->fs, id);
}

static void reads_at_every_alignment(struct fixture *f, enum crypt_mode mode)
{
	static uint8_t data[SIZE];
	static const size_t offs[] = { 0, 1, 17, 511, 4095, 4096, 4097, 8190, 3 * 4096 + 5,
				       SIZE - 4097, SIZE - TAIL, SIZE - 1 };
	static const size_t lens[] = { 1, 100, 4095, 4096, 4097, 3 * 4096 + 7, 20 * 4096,
				       32 * 4096 + 9, SIZE };
	uint8_t *buf = aligned_alloc(4096, ROUND_UP((size_t)SIZE, 4096));
	struct ponyfs *p;
	uint64_t ino, fh, direct;

	assert_non_null(buf);
	encrypted_file_cold(f, mode, "enc/f", data, sizeof(data), 21);
	p = ponyfs_of(f->fs);
	direct = reads_around(p);
	assert_int_equal(test_open(f->fs, "enc/f", O_RDONLY, &ino, &fh), 0);
	for (size_t i = 0; i < ARRAY_SIZE(offs); i++) {
		for (size_t j = 0; j < ARRAY_SIZE(lens); j++) {
			size_t want = MIN(lens[j], (size_t)SIZE - offs[i]);

			memset(buf, 0xa5, want);
			assert_int_equal(VFS_CALL(f->fs, read, ino, fh, buf, lens[j], (off_t)offs[i]),
					 want);
			assert_memory_equal(buf, data + offs[i], want);
		}
	}
	/* Around the cache (directly, or from the stream's buffers, which
	 * hold the ciphertext), and never read again under the lock. */
	assert_true(reads_around(p) > direct);
	assert_int_equal(p->reads_redone, 0);
	/* A small read (a random reader's: opened anew, so no stream of the
	 * reads above is left) goes through the host's cache, whose
	 * readahead of the image answers the next ones. */
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_int_equal(test_open(f->fs, "enc/f", O_RDONLY, &ino, &fh), 0);
	direct = __atomic_load_n(&p->reads_direct, __ATOMIC_RELAXED);
	assert_int_equal(VFS_CALL(f->fs, read, ino, fh, buf, 4096, 8 * 4096), 4096);
	assert_memory_equal(buf, data + 8 * 4096, 4096);
	assert_int_equal(__atomic_load_n(&p->reads_direct, __ATOMIC_RELAXED), direct);
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	free(buf);
}

static void test_xts_reads_at_every_alignment(void **state)
{
	reads_at_every_alignment(*state, CRYPT_MODE_AES_256_XTS);
}

static void test_gcm_reads_at_every_alignment(void **state)
{
	reads_at_every_alignment(*state, CRYPT_MODE_AES_256_GCM);
}

/*
 * An encrypted file read sequentially: a stream's buffers, read ahead
 * around the host's cache (stream.c), hold its ciphertext, and its READs
 * check and decrypt what they take from them.
 */
static void stream_reads(struct fixture *f, enum crypt_mode mode)
{
	enum { FILE_BYTES = 6 << 20, PIECE = 256 << 10 };
	static uint8_t data[FILE_BYTES];
	uint8_t *buf = aligned_alloc(4096, PIECE);
	struct ponyfs *p;
	uint64_t ino, fh, hits;

	assert_non_null(buf);
	encrypted_file_cold(f, mode, "enc/big", data, sizeof(data), 29);
	p = ponyfs_of(f->fs);
	hits = __atomic_load_n(&p->stream_hits, __ATOMIC_RELAXED);
	assert_int_equal(test_open(f->fs, "enc/big", O_RDONLY, &ino, &fh), 0);
	for (size_t off = 0; off < sizeof(data); off += PIECE) {
		memset(buf, 0xa5, PIECE);
		assert_int_equal(VFS_CALL(f->fs, read, ino, fh, buf, PIECE, (off_t)off), PIECE);
		assert_memory_equal(buf, data + off, PIECE);
	}
	assert_int_equal(VFS_CALL(f->fs, release, ino, fh), 0);
	assert_true(__atomic_load_n(&p->stream_hits, __ATOMIC_RELAXED) > hits);
	assert_int_equal(p->reads_redone, 0);
	free(buf);
}

static void test_xts_stream_reads(void **state)
{
	stream_reads(*state, CRYPT_MODE_AES_256_XTS);
}

static void test_gcm_stream_reads(void **state)
{
	stream_reads(*state, CRYPT_MODE_AES_256_GCM);
}

/* Without the fixture's fsck: a tamper test leaves its bad block on the image. */
static int teardown_file(void **state)
{
	struct fixture *f = *state;

	vfs_free(f->fs);
	bdev_free(f->dev);
	free(f);
	return 0;
}

static uint8_t row_csums[PONYFS_IO_BLOCKS * PONYFS_SEAL_BYTES];  /* extent_row_at()'s */

/* The extent row of ino holding file block fblk: its first file block
 * (*foff), fblk's volume block (*pblock), its csums into row_csums (*len
 * bytes). */
static void extent_row_at(sqlite3 *db, uint64_t ino, uint64_t fblk, uint64_t *foff,
			  uint64_t *pblock, size_t *len)
{
	sqlite3_stmt *s;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT foff, pblock, csums FROM extents WHERE "
					    "ino = ?1 AND foff <= ?2 ORDER BY foff DESC LIMIT 1",
					    -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)fblk);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	*foff = (uint64_t)sqlite3_column_int64(s, 0);
	*pblock = (uint64_t)sqlite3_column_int64(s, 1) + fblk - *foff;
	*len = (size_t)sqlite3_column_bytes(s, 2);
	assert_true(*len <= sizeof(row_csums));
	memcpy(row_csums, sqlite3_column_blob(s, 2), *len);
	sqlite3_finalize(s);
}

/* row_csums (len bytes) as the csums of ino's extent row at foff. */
static void extent_row_csums_put(sqlite3 *db, uint64_t ino, uint64_t foff, size_t len)
{
	sqlite3_stmt *s;

	assert_int_equal(sqlite3_prepare_v2(db, "UPDATE extents SET csums = ?3 WHERE "
					    "ino = ?1 AND foff = ?2", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, (int64_t)ino);
	sqlite3_bind_int64(s, 2, (int64_t)foff);
	sqlite3_bind_blob(s, 3, row_csums, (int)len, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
}

/* File block fblk of ino, on the unmounted image: a bit of its ciphertext
 * flipped; with fix_crc (a GCM file's seals) its CRC32C made to match, so
 * only the tag can tell. */
static void block_tamper(sqlite3 *db, struct bdev *datadev, uint64_t ino, uint64_t fblk,
			 bool fix_crc)
{
	size_t stride = fix_crc ? PONYFS_SEAL_BYTES : 4, len;
	uint8_t blk[4096];
	uint64_t foff, pblock;
	le32 crc;

	extent_row_at(db, ino, fblk, &foff, &pblock, &len);
	assert_true((fblk - foff + 1) * stride <= len);
	assert_int_equal(bdev_pread(datadev, blk, sizeof(blk), pblock * 4096), 0);
	blk[100] ^= 0x40;
	assert_int_equal(bdev_pwrite(datadev, blk, sizeof(blk), pblock * 4096), 0);
	if (fix_crc) {
		crc = cpu_to_le32(util_crc32c(0, blk, sizeof(blk)));
		memcpy(row_csums + (fblk - foff) * stride, &crc, 4);
		extent_row_csums_put(db, ino, foff, len);
	}
	ponyfs_sqlite_close(db);
}

/*
 * A tampered block under a stream: its READ takes it from the stream's
 * buffer, read ahead before any READ asked for it. A GCM block's
 * ciphertext changed with its CRC32C to match fails its tag (EIO), an
 * XTS block's its checksum (EBADMSG); none of its plaintext is handed
 * out, only that READ is redone under the lock, the READs before and
 * after it return the file's bytes, and the stream's buffers still answer
 * the last MiB (a READ that failed and left the buffers it used pinned, or
 * spent the stream, would have stopped it past its first 8 MiB).
 */
/*
 * A READ as the FUSE front end makes it (vfs read_iov): the answer's
 * pieces gathered into buf, the instance's pins released. *in_place
 * grows by the bytes answered from the instance's own buffers.
 */
static ssize_t read_answer(struct vfs *fs, uint64_t ino, uint64_t fh, uint8_t *buf, size_t size,
			   off_t off, size_t *in_place)
{
	struct iovec iov[VFS_READ_IOV_MAX];
	unsigned niov = 0;
	void *hold = NULL;
	size_t pos = 0;
	ssize_t n = fs->ops->read_iov(fs, ino, fh, buf, size, off, iov, &niov, &hold);

	if (n < 0) {
		assert_null(hold);
		return n;
	}
	for (unsigned i = 0; i < niov; pos += iov[i++].iov_len) {
		if (iov[i].iov_base == buf + pos)
			continue;
		memcpy(buf + pos, iov[i].iov_base, iov[i].iov_len);
		*in_place += iov[i].iov_len;
	}
	assert_int_equal(pos, (size_t)n);
	if (hold)
		fs->ops->read_release(fs, hold);
	return n;
}

/* mode NULL: a plain file, read as the mount does (read_answer()), so
 * most of it is answered from the stream's buffers in place. */
static void tamper_under_a_stream(struct fixture *f, const enum crypt_mode *mode)
{
	enum { FILE_BYTES = 12 << 20, PIECE = 256 << 10, BAD = 700, TAIL_BYTES = 1 << 20 };
	static uint8_t data[FILE_BYTES];
	bool gcm = mode && *mode == CRYPT_MODE_AES_256_GCM;
	const char *name = mode ? "enc/big" : "big";
	uint8_t *buf = aligned_alloc(4096, PIECE), id[16];
	struct vfs_ctx c = test_ctx();
	struct bdev *meta, *datadev;
	struct vfs_entry e;
	struct ponyfs *p;
	sqlite3 *db;
	uint64_t fh, hits = 0, bad_off = (uint64_t)BAD * 4096;
	size_t in_place = 0;

	assert_non_null(buf);
	test_fill(data, sizeof(data), 31);
	if (mode)
		enc_dir(f->fs, *mode, id);
	assert_int_equal(test_put(f->fs, name, data, sizeof(data)), 0);
	assert_int_equal(vfs_walk(f->fs, &c, name, &e), 0);
	vfs_free(f->fs);
	f->fs = NULL;
	db = image_db(f->dev, &meta, &datadev);
	block_tamper(db, datadev, e.ino, BAD, gcm);
	bdev_free(meta);
	bdev_free(datadev);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	if (mode)
		add_key(f->fs, id);
	p = ponyfs_of(f->fs);
	assert_int_equal(test_open(f->fs, name, O_RDONLY, &e.ino, &fh), 0);
	for (uint64_t off = 0; off < sizeof(data); off += PIECE) {
		ssize_t r;

		if (off == sizeof(data) - TAIL_BYTES)
			hits = __atomic_load_n(&p->stream_hits, __ATOMIC_RELAXED);
		memset(buf, 0xa5, PIECE);
		r = mode ? VFS_CALL(f->fs, read, e.ino, fh, buf, PIECE, (off_t)off)
			 : read_answer(f->fs, e.ino, fh, buf, PIECE, (off_t)off, &in_place);
		if (off <= bad_off && bad_off < off + PIECE) {
			assert_int_equal(r, gcm ? -EIO : -EBADMSG);
			assert_memory_not_equal(buf + (bad_off - off), data + bad_off, 4096);
			continue;
		}
		assert_int_equal(r, PIECE);
		assert_memory_equal(buf, data + off, PIECE);
	}
	assert_int_equal(__atomic_load_n(&p->stream_hits, __ATOMIC_RELAXED) - hits,
			 TAIL_BYTES / 4096);
	assert_int_equal(p->reads_redone, 1);
	/* Plain: answered in place but for the chunks a READ's first pieces
	 * fetched themselves and the bad one; encrypted: never (a buffer holds
	 * ciphertext). */
	if (mode)
		assert_int_equal(in_place, 0);
	else
		assert_true(in_place >= FILE_BYTES / 2);
	assert_int_equal(__atomic_load_n(&p->stream_refs, __ATOMIC_RELAXED), in_place / 4096);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	free(buf);
}

static void test_xts_tamper_under_a_stream_is_ebadmsg(void **state)
{
	tamper_under_a_stream(*state, &(enum crypt_mode){ CRYPT_MODE_AES_256_XTS });
}

static void test_gcm_tamper_under_a_stream_is_eio(void **state)
{
	tamper_under_a_stream(*state, &(enum crypt_mode){ CRYPT_MODE_AES_256_GCM });
}

/* A plain file's READs answered from the stream's buffers in place
 * (read.c's refs_take()): the bad block's chunk is checked there first,
 * so it goes down the copying path, fails (EBADMSG) and returns none of
 * it; the rest come back right, from the buffers. */
static void test_plain_tamper_under_a_stream_answered_in_place(void **state)
{
	tamper_under_a_stream(*state, NULL);
}

/*
 * A block whose stream buffer was filled from good bytes, its CRC32C
 * computed there (stream.c's worker), and whose extent's CRC then
 * changes: the READ planned after it is not answered from the buffer,
 * though the buffer's bytes are the disk's, and fails (EBADMSG: nothing
 * matches the plan's CRC; one image, no redundancy); the READs before and
 * after it come from the buffers. The plan's CRC decides each READ, never
 * what held when the buffer filled (a buffer marked good at its fill would
 * return the block). A plain file is read as the mount reads
 * (read_answer(): answered in place, stream.c's refs_take), an XTS file's
 * blocks are copied out of the buffers (stream.c's copy) and decrypted.
 */
static void plans_crc_changed_under_a_stream(struct fixture *f, bool xts)
{
	enum { FILE_BYTES = 8 << 20, PIECE = 256 << 10, BAD = 700 };
	static uint8_t data[FILE_BYTES];
	const char *name = xts ? "enc/big" : "big";
	uint8_t *buf = aligned_alloc(4096, PIECE), id[16];
	struct vfs_ctx c = test_ctx();
	uint64_t fh, foff, pblock, hits, bad_off = (uint64_t)BAD * 4096;
	size_t in_place = 0, len;
	struct vfs_entry e;
	struct ponyfs *p;

	assert_non_null(buf);
	test_fill(data, sizeof(data), 37);
	if (xts)
		enc_dir(f->fs, CRYPT_MODE_AES_256_XTS, id);
	assert_int_equal(test_put(f->fs, name, data, sizeof(data)), 0);
	assert_int_equal(vfs_walk(f->fs, &c, name, &e), 0);
	vfs_free(f->fs);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	if (xts)
		add_key(f->fs, id);
	p = ponyfs_of(f->fs);
	assert_int_equal(test_open(f->fs, name, O_RDONLY, &e.ino, &fh), 0);
	/* Two READs: the second follows the first, and its stream reads the
	 * next 8 MiB (block BAD's buffer among them) on the workers. */
	for (uint64_t off = 0; off < 2 * PIECE; off += PIECE)
		assert_int_equal(read_answer(f->fs, e.ino, fh, buf, PIECE, (off_t)off, &in_place),
				 PIECE);
	usleep(200 * 1000);
	hits = __atomic_load_n(&p->stream_hits, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->lock);
	extent_row_at(p->db, e.ino, BAD, &foff, &pblock, &len);
	row_csums[(BAD - foff) * 4] ^= 1;
	extent_row_csums_put(p->db, e.ino, foff, len);
	pthread_mutex_unlock(&p->lock);
	for (uint64_t off = 2 * PIECE; off < sizeof(data); off += PIECE) {
		ssize_t r;

		memset(buf, 0xa5, PIECE);
		r = read_answer(f->fs, e.ino, fh, buf, PIECE, (off_t)off, &in_place);
		/* An error answers nothing, and pins nothing (read_answer()):
		 * the buffer's bytes, good on disk too, stay out of reach. */
		if (off <= bad_off && bad_off < off + PIECE) {
			assert_int_equal(r, -EBADMSG);
			continue;
		}
		assert_int_equal(r, PIECE);
		assert_memory_equal(buf, data + off, PIECE);
	}
	assert_int_equal(p->reads_redone, 1);
	assert_true(__atomic_load_n(&p->stream_hits, __ATOMIC_RELAXED) - hits >= FILE_BYTES / 2 / 4096);
	if (xts)
		assert_int_equal(in_place, 0);
	else
		assert_true(in_place >= FILE_BYTES / 2);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	free(buf);
}

static void test_plain_stream_block_refused_when_the_plans_crc_changed(void **state)
{
	plans_crc_changed_under_a_stream(*state, false);
}

static void test_xts_stream_block_refused_when_the_plans_crc_changed(void **state)
{
	plans_crc_changed_under_a_stream(*state, true);
}

/*
 * Large reads of a GCM file (their pieces checked and decrypted by two
 * threads after the direct read): block BAD's tag changed fails one with
 * EIO, and nothing of that block's plaintext is in the buffer; block
 * BAD2's ciphertext changed on the image through the host's page cache
 * (a buffered write the direct read must see: the kernel writes it out
 * first) fails its checksum (EBADMSG, as a bad block always has).
 */
static void test_tamper_in_a_direct_read_is_eio(void **state)
{
	struct fixture *f = *state;
	enum { N = 256, BAD = 200, BAD2 = 40 };
	static uint8_t data[N * 4096], csums[N * PONYFS_SEAL_BYTES];
	uint8_t *back = aligned_alloc(4096, sizeof(data)), blk[4096], id[16];
	struct bdev *meta, *datadev;
	struct vfs_entry e;
	uint64_t pblock, fh, direct;
	sqlite3 *db;

	assert_non_null(back);
	test_fill(data, sizeof(data), 23);
	db = gcm_file_then_unmount(f, data, sizeof(data), id, &e, &meta, &datadev);
	gcm_tag_flip(db, e.ino, BAD, &pblock, csums, sizeof(csums));
	assert_int_equal(bdev_pread(datadev, blk, sizeof(blk), (pblock + BAD2) * 4096), 0);
	blk[100] ^= 0x40;
	assert_int_equal(bdev_pwrite(datadev, blk, sizeof(blk), (pblock + BAD2) * 4096), 0);
	bdev_free(meta);
	bdev_free(datadev);
	assert_int_equal(ponyfs_mount_image(f->dev, NULL, &f->fs), 0);
	add_key(f->fs, id);
	direct = __atomic_load_n(&ponyfs_of(f->fs)->reads_direct, __ATOMIC_RELAXED);
	assert_int_equal(test_open(f->fs, "enc/f", O_RDONLY, &e.ino, &fh), 0);
	/* The whole file: BAD2's checksum fails first (EBADMSG, as any bad
	 * block's); neither block's plaintext is handed out. */
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, sizeof(data), 0), -EBADMSG);
	assert_memory_not_equal(back + BAD2 * 4096, data + BAD2 * 4096, 4096);
	assert_memory_not_equal(back + BAD * 4096, data + BAD * 4096, 4096);
	/* Past BAD2, shared between two threads: BAD's tag fails it. */
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, (N - BAD2 - 1) * 4096,
				  (BAD2 + 1) * 4096), -EIO);
	assert_memory_not_equal(back + (BAD - BAD2 - 1) * 4096, data + BAD * 4096, 4096);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, BAD2 * 4096, 0), BAD2 * 4096);
	assert_memory_equal(back, data, BAD2 * 4096);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, 4096, BAD2 * 4096), -EBADMSG);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, 4096, BAD * 4096), -EIO);
	assert_int_equal(VFS_CALL(f->fs, read, e.ino, fh, back, 4096, (BAD2 + 1) * 4096), 4096);
	assert_memory_equal(back, data + (BAD2 + 1) * 4096, 4096);
	assert_int_equal(VFS_CALL(f->fs, release, e.ino, fh), 0);
	assert_true(__atomic_load_n(&ponyfs_of(f->fs)->reads_direct, __ATOMIC_RELAXED) > direct);
	free(back);
	/* The bad CRC stays on the image: fsck would report it. */
	vfs_free(f->fs);
	f->fs = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_xts_reads_at_every_alignment, setup_file,
						teardown),
		cmocka_unit_test_setup_teardown(test_gcm_reads_at_every_alignment, setup_file,
						teardown),
		cmocka_unit_test_setup_teardown(test_xts_stream_reads, setup_file, teardown),
		cmocka_unit_test_setup_teardown(test_gcm_stream_reads, setup_file, teardown),
		cmocka_unit_test_setup_teardown(test_xts_tamper_under_a_stream_is_ebadmsg, setup_file,
						teardown_file),
		cmocka_unit_test_setup_teardown(test_gcm_tamper_under_a_stream_is_eio, setup_file,
						teardown_file),
		cmocka_unit_test_setup_teardown(test_plain_tamper_under_a_stream_answered_in_place,
						setup_file, teardown_file),
		cmocka_unit_test_setup_teardown(test_plain_stream_block_refused_when_the_plans_crc_changed,
						setup_file, teardown_file),
		cmocka_unit_test_setup_teardown(test_xts_stream_block_refused_when_the_plans_crc_changed,
						setup_file, teardown_file),
		cmocka_unit_test_setup_teardown(test_tamper_in_a_direct_read_is_eio, setup_file,
						teardown_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
