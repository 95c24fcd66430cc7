/*
 * crypt_speed.c - src/crypt's contents ciphers on one core, the way
 * ponyfs calls them: one 4 KiB block per call, each with its own tweak or
 * nonce. `crypt_speed xts|gcm encrypt|decrypt SECONDS` prints GB/s
 * (10^9 bytes) for bench/crypt, which sets it beside `openssl speed` on
 * the same 4 KiB buffers: the ratio is what pony's calls cost over
 * OpenSSL's own loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pony/crypt.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static uint8_t in[64][CRYPT_BLOCK_SIZE], out[CRYPT_BLOCK_SIZE];
	uint8_t master[CRYPT_MASTER_KEY_SIZE], nonce[CRYPT_NONCE_SIZE] = { 7 }, key[64];
	uint8_t gnonce[64][CRYPT_GCM_NONCE_SIZE], tag[64][CRYPT_GCM_TAG_SIZE];
	enum crypt_mode mode;
	struct crypt_contents *c;
	struct crypt_master m;
	double secs, t0, t;
	uint64_t blocks = 0;
	bool enc;

	if (argc != 4 || (strcmp(argv[1], "xts") && strcmp(argv[1], "gcm")) ||
	    (strcmp(argv[2], "encrypt") && strcmp(argv[2], "decrypt")) || atof(argv[3]) <= 0) {
		fprintf(stderr, "usage: crypt_speed xts|gcm encrypt|decrypt SECONDS\n");
		return 2;
	}
	mode = argv[1][0] == 'x' ? CRYPT_MODE_AES_256_XTS : CRYPT_MODE_AES_256_GCM;
	enc = argv[2][0] == 'e';
	secs = atof(argv[3]);
	for (unsigned i = 0; i < sizeof(master); i++)
		master[i] = (uint8_t)(i * 3);
	if (crypt_master_init(&m, master, sizeof(master)) < 0 ||
	    crypt_file_key(&m, nonce, mode, key, crypt_mode_key_size(mode)) < 0 ||
	    crypt_contents_new(mode, key, crypt_mode_key_size(mode), &c) < 0) {
		fprintf(stderr, "crypt_speed: cannot set up the cipher\n");
		return 1;
	}
	memset(in, 0x5a, sizeof(in));
	/* Sealed blocks to open, for GCM's decrypt. */
	for (unsigned i = 0; mode == CRYPT_MODE_AES_256_GCM && i < 64; i++)
		crypt_gcm_seal(c, i, in[i], in[i], gnonce[i], tag[i]);
	t0 = now();
	do {
		for (unsigned i = 0; i < 64; i++) {
			int r;

			if (mode == CRYPT_MODE_AES_256_XTS)
				r = enc ? crypt_xts_encrypt(c, blocks + i, in[i], out) :
					  crypt_xts_decrypt(c, blocks + i, in[i], out);
			else
				r = enc ? crypt_gcm_seal(c, i, in[i], out, gnonce[i], tag[i]) :
					  crypt_gcm_open(c, i, in[i], out, gnonce[i], tag[i]);
			if (r < 0) {
				fprintf(stderr, "crypt_speed: block %u failed (%d)\n", i, r);
				return 1;
			}
		}
		blocks += 64;
		t = now() - t0;
	} while (t < secs);
	printf("%.3f\n", (double)blocks * CRYPT_BLOCK_SIZE / t / 1e9);
	crypt_contents_free(c);
	crypt_master_wipe(&m);
	return 0;
}
