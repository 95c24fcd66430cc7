/*
 * crypt_names.c - names and symlink targets in encrypted directories. An
 * entry's name is kept as its ciphertext (AES-256-CTS-CBC with the
 * directory's names key, padded as the policy says), which is
 * deterministic: a lookup encrypts the name it is given and finds the row
 * by its primary key, with no directory-wide decryption. Without the key a
 * listing shows fscrypt's no-key names, which lookup, stat, unlink and
 * rmdir accept: a short one is the ciphertext itself, a long one (over 149
 * bytes of ciphertext) carries a digest of the rest, so it is found by a
 * scan of the directory's long names. A symlink's target is encrypted the
 * same way with the symlink's own key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void name_plain(const char *name, struct ponyfs_name *ret)
{
	ret->bytes = (const uint8_t *)name;
	ret->len = strlen(name);
}

/* The ciphertext of the directory's entry a long no-key name names. */
static int nokey_find_long(struct ponyfs *fs, uint64_t parent, const char *name,
			   struct ponyfs_name *ret)
{
	sqlite3_stmt *s;
	int r = ponyfs_prepare(fs, "SELECT name FROM dentries WHERE parent = ?1 AND "
			       "length(name) > ?2", &s);

	if (r < 0)
		return r;
	sqlite3_bind_int64(s, 1, (int64_t)parent);
	sqlite3_bind_int64(s, 2, CRYPT_NOKEY_BYTES);
	while ((r = ponyfs_step_row(fs, s)) > 0) {
		const uint8_t *ct = sqlite3_column_blob(s, 0);
		size_t len = (size_t)sqlite3_column_bytes(s, 0);

		if (len <= sizeof(ret->buf) && crypt_nokey_name_matches(name, strlen(name), ct, len)) {
			memcpy(ret->buf, ct, len);
			ret->len = len;
			break;
		}
	}
	sqlite3_reset(s);
	return r < 0 ? r : r > 0 ? 0 : -ENOENT;
}

/* Without the key: the ciphertext a no-key name names; -ENOENT for any other name. */
static int nokey_find(struct ponyfs *fs, uint64_t parent, const char *name,
		      struct ponyfs_name *ret)
{
	uint8_t digest[32];
	bool long_form;

	if (crypt_nokey_name_parse(name, strlen(name), ret->buf, &ret->len, &long_form, digest) < 0)
		return -ENOENT;
	return long_form ? nokey_find_long(fs, parent, name, ret) : 0;
}

int ponyfs_name_locked(struct ponyfs *fs, uint64_t parent, const char *name,
		       enum ponyfs_name_use use, struct ponyfs_name *ret)
{
	struct ponyfs_dircrypt *d;
	int r = vfs_check_name(name);

	ret->dir.on = false;
	name_plain(name, ret);
	if (r < 0 || !fs->crypt_any)
		return r;
	r = ponyfs_dircrypt_locked(fs, parent, &d);
	if (r < 0 || !d || !d->c.on)
		return r == -ENOENT ? 0 : r;    /* the caller says what a missing parent is */
	ret->dir = d->c;
	ret->bytes = ret->buf;
	r = ponyfs_dircrypt_key_locked(fs, d);
	if (r >= 0)
		return crypt_names_encrypt(d->names, crypt_policy_pad(&d->c.policy), name,
					   strlen(name), ret->buf, &ret->len);
	if (r != -ENOKEY || use == PONYFS_NAME_CREATE)
		return r;
	return nokey_find(fs, parent, name, ret);
}

char *ponyfs_name_show_locked(struct ponyfs *fs, struct ponyfs_dircrypt *d, const uint8_t *bytes,
			      size_t len)
{
	char out[CRYPT_NAME_MAX + 1];
	size_t n;

	if (!d || !d->c.on)
		return strndup((const char *)bytes, len);
	if (ponyfs_dircrypt_key_locked(fs, d) >= 0 &&
	    crypt_names_decrypt(d->names, bytes, len, out, &n) >= 0) {
		char *name = strdup(out);

		crypt_wipe(out, sizeof(out));
		return name;
	}
	/* No key (or a name that does not decrypt): the no-key name. */
	if (crypt_nokey_name(bytes, len, out) < 0)
		return NULL;
	return strdup(out);
}

/* c's CTS key (a symlink's own), from its nonce; -ENOKEY. */
static int symlink_key(struct ponyfs *fs, const struct ponyfs_crypt *c, uint8_t key[32])
{
	return ponyfs_crypt_key_locked(fs, c, CRYPT_MODE_AES_256_CTS, false, key);
}

int ponyfs_symlink_seal_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, const char *target,
			       uint8_t *buf, size_t *ret_len)
{
	uint8_t key[32];
	int r = symlink_key(fs, c, key);

	if (r >= 0)
		r = crypt_symlink_encrypt(key, crypt_policy_pad(&c->policy), target, strlen(target),
					  buf, ret_len);
	crypt_wipe(key, sizeof(key));
	return r;
}

int ponyfs_symlink_show_locked(struct ponyfs *fs, const struct ponyfs_crypt *c, const uint8_t *stored,
			       size_t len, char *buf, size_t size)
{
	char out[CRYPT_SYMLINK_MAX + 1];
	uint8_t key[32];
	size_t n = 0;
	int r = symlink_key(fs, c, key);

	if (r >= 0)
		r = crypt_symlink_decrypt(key, stored, len, out, &n);
	else if (r == -ENOKEY)
		r = crypt_nokey_name(stored, len, out);
	crypt_wipe(key, sizeof(key));
	if (r >= 0) {
		n = strlen(out);
		r = (int)MIN(n, size);
		memcpy(buf, out, (size_t)r);
	}
	crypt_wipe(out, sizeof(out));
	return r;
}
