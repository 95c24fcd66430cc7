/*
 * crypt_data.c - an encrypted file's contents between ponyfs's cache and
 * the data region. The cache holds plaintext (the file is open, so its key
 * was present); writeback encrypts a run of pages into a bounce buffer and
 * checksums the ciphertext, so fsck, scrub and repair work on the blocks
 * without the key. Reads decrypt after the checksum passed (read.c).
 *
 * The per-file key is derived once, at the first open with the key
 * present, into the cached inode's cipher for the locked paths
 * (writeback, a partial page's fill), and wiped; the key lives on only in
 * OpenSSL's key schedules, and in the cipher until its first decryption
 * (src/crypt/contents.c: a file only written never needs one). A reader running unlocked gets a clone of that
 * cipher, since an OpenSSL context serves one thread at a time. Both go
 * (cleansed) when the inode leaves the cache or its key is removed.
 *
 * The cipher hides behind the I/O (helper.c): a writeback encrypts a run
 * into one of two bounce buffers while a helper writes the other out,
 * and the buffers stay for the mount (a fresh megabyte per writeback cost
 * its page faults every time), in one huge page (pages.c says why). They
 * hold ciphertext only. A long run's encryption is itself shared with
 * another helper, each taking the next piece of SHARE_PAGES pages with a
 * cipher of its own, as a large read's decryption is (read.c): over the
 * FUSE rings one thread takes a writer's WRITEs (all from its CPU), and
 * the cipher ran there in line with their copies, an AES-256-GCM file
 * written at 0.63 of a plain one's rate (BENCHMARKS.md, session 43). A
 * short run is encrypted and written in line: there is too little cipher
 * to hide.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int ponyfs_crypt_open_locked(struct ponyfs *fs, struct ponyfs_inode *in)
{
	enum crypt_mode mode = in->crypt.policy.contents_mode;
	uint8_t key[64];
	int r;

	if (!in->crypt.on)
		return 0;
	/* A cipher kept from before gives no access once the key went. */
	if (!ponyfs_key_find(fs, in->crypt.policy.key_id, false))
		return -ENOKEY;
	if (in->cipher)
		return 0;
	ponyfs_helper_start_locked(fs);
	r = ponyfs_crypt_key_locked(fs, &in->crypt, mode, false, key);
	if (r >= 0)
		r = crypt_contents_new(mode, key, crypt_mode_key_size(mode), &in->cipher);
	crypt_wipe(key, sizeof(key));
	return r;
}

void ponyfs_crypt_close(struct ponyfs_inode *in)
{
	crypt_contents_free(in->cipher);
	in->cipher = NULL;
}

int ponyfs_crypt_reader_locked(struct ponyfs_inode *in, struct crypt_contents **ret)
{
	*ret = NULL;
	if (!in->crypt.on)
		return 0;
	if (!in->cipher)
		return -ENOKEY;
	return crypt_contents_clone(in->cipher, ret);
}

/* Bytes of csums a block of in takes: its seal, or its CRC32C. */
static size_t csum_stride(const struct ponyfs_inode *in)
{
	return in->crypt.policy.contents_mode == CRYPT_MODE_AES_256_GCM ? PONYFS_SEAL_BYTES : 4;
}

/* ponyfs_crypt_pages() with cipher, which may be a clone of in's. */
static int crypt_pages_with(struct ponyfs_inode *in, struct crypt_contents *cipher,
			    const struct ponyfs_page *pg, uint64_t k, uint8_t *out, uint8_t *csums)
{
	bool gcm = in->crypt.policy.contents_mode == CRYPT_MODE_AES_256_GCM;
	size_t stride = csum_stride(in);
	int r = 0;

	for (uint64_t i = 0; r >= 0 && i < k; i++) {
		uint8_t *blk = out + i * BS, *c = csums + stride * i;
		le32 crc;

		r = gcm ? crypt_gcm_seal(cipher, pg[i].index, pg[i].data, blk, c + 4,
					 c + 4 + CRYPT_GCM_NONCE_SIZE)
			: crypt_xts_encrypt(cipher, pg[i].index, pg[i].data, blk);
		crc = cpu_to_le32(util_crc32c(0, blk, BS));
		memcpy(c, &crc, 4);
	}
	return r;
}

int ponyfs_crypt_pages(struct ponyfs_inode *in, const struct ponyfs_page *pg, uint64_t k,
		       uint8_t *out, uint8_t *csums)
{
	if (!in->cipher)
		return -ENOKEY;
	return crypt_pages_with(in, in->cipher, pg, k, out, csums);
}

/* A run's encryption shared with a helper (ponyfs_share_run()). */
#define SHARE_PAGES 32u                 /* a piece: 128 KiB */

struct crypt_share {
	struct ponyfs_inode *in;
	const struct ponyfs_page *pg;
	uint64_t k;
	uint8_t *out, *csums;
};

static int crypt_piece(void *arg, uint64_t i, struct crypt_contents *cipher)
{
	struct crypt_share *c = arg;
	uint64_t first = i * SHARE_PAGES;

	return crypt_pages_with(c->in, cipher, c->pg + first, MIN((uint64_t)SHARE_PAGES, c->k - first),
				c->out + first * BS, c->csums + csum_stride(c->in) * first);
}

/* Under the lock: ponyfs_crypt_pages(), a run of PONYFS_HELPER_MIN_BLOCKS
 * or more shared with a helper (in line when none is free). */
static int crypt_pages_shared(struct ponyfs *fs, struct ponyfs_inode *in,
			      const struct ponyfs_page *pg, uint64_t k, uint8_t *out, uint8_t *csums)
{
	struct crypt_share c = { .in = in, .pg = pg, .k = k, .out = out, .csums = csums };
	struct ponyfs_share s = { .piece = crypt_piece, .arg = &c, .pieces = DIV_ROUND_UP(k, SHARE_PAGES) };
	int r;

	if (!in->cipher)
		return -ENOKEY;
	s.cipher[0] = in->cipher;
	if (k < PONYFS_HELPER_MIN_BLOCKS || crypt_contents_clone(in->cipher, &s.cipher[1]) < 0)
		return crypt_pages_with(in, in->cipher, pg, k, out, csums);
	r = ponyfs_share_run(fs, &s);
	crypt_contents_free(s.cipher[1]);
	return r;
}

int ponyfs_crypt_blocks(struct ponyfs_inode *in, struct crypt_contents *cipher, uint64_t fblk,
			uint64_t n, const uint8_t *seals, uint8_t *buf)
{
	bool gcm = in->crypt.policy.contents_mode == CRYPT_MODE_AES_256_GCM;
	int r = 0;

	for (uint64_t i = 0; r >= 0 && i < n; i++) {
		const uint8_t *seal = seals + (PONYFS_SEAL_BYTES - 4) * i;
		uint8_t *blk = buf + i * BS;

		r = gcm ? crypt_gcm_open(cipher, fblk + i, blk, blk, seal, seal + CRYPT_GCM_NONCE_SIZE)
			: crypt_xts_decrypt(cipher, fblk + i, blk, blk);
	}
	return r;
}

/* The writeback's encrypted runs: two bounce buffers, the one last
 * filled possibly still being written by the helper. */
struct ponyfs_crypt_out {
	uint8_t *buf[2];
	unsigned next;                  /* the buffer the next run fills */
	bool pending;                   /* job is started and not yet waited for */
	struct ponyfs_job job;
	struct bdev *dev;               /* the write job's arguments */
	const uint8_t *data;
	size_t len;
	uint64_t off;
};

static int out_write(void *arg)
{
	struct ponyfs_crypt_out *o = arg;

	return bdev_pwrite_direct(o->dev, o->data, o->len, o->off);
}

int ponyfs_crypt_out_drain_locked(struct ponyfs *fs)
{
	struct ponyfs_crypt_out *o = fs->crypt_out;

	if (!o || !o->pending)
		return 0;
	o->pending = false;
	return ponyfs_job_wait(fs, &o->job);
}

/* Both halves of one slab (pages.c): a huge page where the host has
 * one, so each run's write goes to the disk as one segment. */
static_assert(2 * (size_t)PONYFS_IO_BLOCKS * BS <= PONYFS_SLAB_BYTES, "two runs in a slab");

static struct ponyfs_crypt_out *out_get(struct ponyfs *fs)
{
	struct ponyfs_crypt_out *o = fs->crypt_out;

	if (o)
		return o;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->buf[0] = ponyfs_slab_map();
	if (!o->buf[0]) {
		free(o);
		return NULL;
	}
	o->buf[1] = o->buf[0] + (size_t)PONYFS_IO_BLOCKS * BS;
	o->job.fn = out_write;
	o->job.arg = o;
	fs->crypt_out = o;
	return o;
}

int ponyfs_crypt_out_locked(struct ponyfs *fs, struct ponyfs_inode *in,
			    const struct ponyfs_page *pg, uint64_t k, uint64_t p, uint8_t *csums)
{
	struct ponyfs_crypt_out *o = out_get(fs);
	uint8_t *buf;
	int r, w;

	if (!o)
		return -ENOMEM;
	if (k > PONYFS_IO_BLOCKS)
		return -EINVAL;
	/* A small file's run in a writeback of many (an untar's) is
	 * encrypted straight into the gather, where a plain file's is copied:
	 * one write for many files, not one each (gather.c). */
	buf = ponyfs_gather_room(fs, k, p, &r);
	if (buf)
		return ponyfs_crypt_pages(in, pg, k, buf, csums);
	if (r < 0)
		return r;
	/* The other buffer may be on its way to the disk meanwhile. */
	buf = o->buf[o->next];
	r = crypt_pages_shared(fs, in, pg, k, buf, csums);
	w = ponyfs_crypt_out_drain_locked(fs);
	if (r < 0 || w < 0)
		return r < 0 ? r : w;
	/* A short run outside a gather: written here, as a plain file's is.
	 * Handed off, it cost a wake-up and a wait per file and hid only
	 * the few microseconds its cipher takes. */
	if (k < PONYFS_HELPER_MIN_BLOCKS)
		return bdev_pwrite_direct(fs->data, buf, k * BS, p * BS);
	o->dev = fs->data;
	o->data = buf;
	o->len = k * BS;
	o->off = p * BS;
	o->next ^= 1;
	o->pending = true;
	ponyfs_job_start(fs, &o->job);
	return 0;
}

const uint8_t *ponyfs_crypt_out_next_buf(const struct ponyfs *fs)
{
	const struct ponyfs_crypt_out *o = fs->crypt_out;

	return o ? o->buf[o->next] : NULL;
}

void ponyfs_crypt_out_free(struct ponyfs *fs)
{
	struct ponyfs_crypt_out *o = fs->crypt_out;

	if (!o)
		return;
	ponyfs_crypt_out_drain_locked(fs);
	ponyfs_slab_unmap(o->buf[0]);  /* both buffers */
	free(o);
	fs->crypt_out = NULL;
}
