/*
 * crypt.c - Linux's fscrypt ioctls (linux/fscrypt.h) answered by the FUSE
 * front end with Linux's numbers, structures and errors, so the tools made
 * for ext4 (xfs_io, fscrypt, `pony crypt`) work unchanged on an instance
 * with the encryption hooks (ponyfs); plus pony's own two: the passphrase
 * salt and the forced key removal. FUSE's restricted ioctls carry only
 * _IOC_SIZE(cmd) bytes, only in the directions the number says, so what
 * lies beyond (the v2 policy behind SET_ENCRYPTION_POLICY's 12-byte v1
 * struct, the raw key behind ADD_ENCRYPTION_KEY's struct, the policy
 * GET_ENCRYPTION_POLICY_EX returns past its 9 bytes) is read or written in
 * the caller's memory (more.c). Checks the kernel's fs/crypto makes before
 * reaching a filesystem (argument layout, capabilities, ownership) are made
 * here, in its order; the instance answers the rest. docs/crypt.md,
 * "Interface", lists what passes and how.
 */
#include <assert.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/fscrypt.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"
#include "pony/crypt.h"
#include "pony/util.h"

/* The hooks' key status and removal flags are fscrypt's numbers, passed as they are. */
static_assert(VFS_KEY_ABSENT == FSCRYPT_KEY_STATUS_ABSENT &&
	      VFS_KEY_PRESENT == FSCRYPT_KEY_STATUS_PRESENT &&
	      VFS_KEY_INCOMPLETELY_REMOVED == FSCRYPT_KEY_STATUS_INCOMPLETELY_REMOVED,
	      "key status numbers");
static_assert(VFS_KEY_FILES_BUSY == FSCRYPT_KEY_REMOVAL_STATUS_FLAG_FILES_BUSY &&
	      VFS_KEY_OTHER_USERS == FSCRYPT_KEY_REMOVAL_STATUS_FLAG_OTHER_USERS,
	      "removal flags");
static_assert(CRYPT_POLICY_SIZE == sizeof(struct fscrypt_policy_v2), "a policy is a v2 struct");
static_assert(CRYPT_KEY_ID_SIZE == FSCRYPT_KEY_IDENTIFIER_SIZE, "key identifier size");

/* One fscrypt ioctl being answered: who asked, about what, and what FUSE carried. */
struct crypt_call {
	fuse_req_t req;
	struct ponyfuse *pf;
	struct vfs_ctx ctx;
	fuse_ino_t ino;
	void *arg;                      /* the argument's address in the caller */
	const void *in;                 /* its _IOC_SIZE(cmd) bytes, for an _IOW number */
};

/* The answer: an error, or 0 with len bytes FUSE copies out over the
 * caller's argument (only for an _IOR number; no more than _IOC_SIZE). */
static void answer(const struct crypt_call *c, int r, const void *out, size_t len)
{
	if (r < 0)
		fuse_reply_err(c->req, -r);
	else
		fuse_reply_ioctl(c->req, 0, out, len);
}

static struct vfs *fs_of(const struct crypt_call *c)
{
	return c->pf->fs;
}

/* As the kernel's inode_owner_or_capable(): Linux asks it before setting a policy. */
static int owner_or_capable(const struct crypt_call *c)
{
	struct statx x;
	int r = VFS_CALL(fs_of(c), statx, &c->ctx, c->ino, VFS_NO_FH, 0, STATX_UID, &x);

	if (r < 0)
		return r;
	return x.stx_uid == c->ctx.uid || ponyfuse_caller_capable(c->req, CAP_FOWNER) ? 0
										     : -EACCES;
}

/*
 * FS_IOC_SET_ENCRYPTION_POLICY is _IOR with a v1 struct (12 bytes): FUSE
 * brings nothing in and copies 12 bytes out. The policy is read from the
 * caller (its first byte says how long it is, as the kernel reads it), and
 * its own first 12 bytes are the answer, so the copy-out changes nothing.
 */
static void set_policy(struct crypt_call *c)
{
	uint8_t policy[sizeof(struct fscrypt_policy_v2)] = { 0 };
	size_t len = 0;
	int r = ponyfuse_caller_read(c->req, c->arg, policy, 1);

	if (r == 0) {
		len = policy[0] == FSCRYPT_POLICY_V2 ? sizeof(struct fscrypt_policy_v2)
			: policy[0] == FSCRYPT_POLICY_V1 ? sizeof(struct fscrypt_policy_v1) : 0;
		r = len ? ponyfuse_caller_read(c->req, c->arg, policy, len) : -EINVAL;
	}
	/* v1 policies (their key derivation is the weak one) are never kept,
	 * as crypt_policy_decode refuses them: EINVAL, as Linux refuses a
	 * policy it does not support. */
	if (r == 0 && policy[0] != FSCRYPT_POLICY_V2)
		r = -EINVAL;
	if (r == 0)
		r = owner_or_capable(c);
	if (r == 0)
		r = VFS_CALL(fs_of(c), set_policy, &c->ctx, c->ino, policy, len);
	answer(c, r, policy, sizeof(struct fscrypt_policy_v1));
}

/* The v1 call answers only for a v1 policy, which no file here has: EINVAL
 * for an encrypted file, as Linux for a v2 one; ENODATA for the rest. */
static void get_policy_v1(struct crypt_call *c)
{
	uint8_t policy[CRYPT_POLICY_SIZE];
	int r = VFS_CALL(fs_of(c), get_policy, c->ino, policy, sizeof(policy));

	answer(c, r < 0 ? r : -EINVAL, NULL, 0);
}

/*
 * _IOWR of 9 bytes (policy_size and the version byte): the caller's room
 * comes in, but the policy goes out past the 9 bytes FUSE copies, so the
 * whole answer is written into the caller, and its first 9 bytes answer.
 */
static void get_policy_ex(struct crypt_call *c)
{
	struct fscrypt_get_policy_ex_arg ex;
	size_t head = offsetof(struct fscrypt_get_policy_ex_arg, policy);
	int r;

	memcpy(&ex.policy_size, c->in, sizeof(ex.policy_size));
	r = VFS_CALL(fs_of(c), get_policy, c->ino, &ex.policy, sizeof(ex.policy));
	if (r >= 0 && (uint64_t)r > ex.policy_size)
		r = -EOVERFLOW;
	if (r >= 0) {
		assert((size_t)r <= sizeof(ex.policy));
		ex.policy_size = (uint64_t)r;
		r = ponyfuse_caller_write(c->req, c->arg, &ex, head + ex.policy_size);
	}
	answer(c, r, &ex, _IOC_SIZE(FS_IOC_GET_ENCRYPTION_POLICY_EX));
}

/* As the kernel's valid_key_spec() and its reserved-fields checks. */
static int key_arg_check(const struct fscrypt_key_specifier *spec, const void *reserved,
			 size_t len)
{
	static const uint8_t zero[32];

	assert(len <= sizeof(zero));
	if (spec->__reserved || memcmp(reserved, zero, len) ||
	    (spec->type != FSCRYPT_KEY_SPEC_TYPE_DESCRIPTOR &&
	     spec->type != FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER))
		return -EINVAL;
	return 0;
}

/* What a key's coming or going tells the kernel to forget (the hooks call
 * these with no lock held): a file's pages and attributes, a name. */
static void inval_inode(void *data, uint64_t ino)
{
	struct ponyfuse *pf = data;

	/* Offset 0, length 0: every cached page, and the attributes. */
	fuse_lowlevel_notify_inval_inode(pf->se, ino, 0, 0);
}

static void inval_entry(void *data, uint64_t parent, const char *name)
{
	struct ponyfuse *pf = data;

	fuse_lowlevel_notify_inval_entry(pf->se, parent, name, strlen(name));
}

static struct vfs_inval kernel_caches(struct crypt_call *c)
{
	return (struct vfs_inval){ .inode = inval_inode, .entry = inval_entry, .data = c->pf };
}

/*
 * _IOWR of the 80-byte struct; the raw key follows it in the caller,
 * beyond what FUSE brings. Only IDENTIFIER keys (policy v2): a DESCRIPTOR
 * key (v1) is EOPNOTSUPP for root (EACCES for others, as Linux checks
 * that first); a key in the caller's keyring (key_id) is out of this
 * daemon's reach: EOPNOTSUPP.
 */
static void add_key(struct crypt_call *c)
{
	const struct vfs_inval inval = kernel_caches(c);
	struct fscrypt_add_key_arg a;
	uint8_t raw[FSCRYPT_MAX_KEY_SIZE];
	int r;

	memcpy(&a, c->in, sizeof(a));
	r = key_arg_check(&a.key_spec, a.__reserved, sizeof(a.__reserved));
	if (r == 0 && a.key_spec.type == FSCRYPT_KEY_SPEC_TYPE_DESCRIPTOR)
		r = ponyfuse_caller_capable(c->req, CAP_SYS_ADMIN) ? -EOPNOTSUPP : -EACCES;
	else if (r == 0 && a.key_id)
		r = a.raw_size ? -EINVAL : -EOPNOTSUPP;
	else if (r == 0 && a.raw_size > sizeof(raw))
		r = -EINVAL;
	if (r == 0)
		r = ponyfuse_caller_read(c->req, (uint8_t *)c->arg + sizeof(a), raw, a.raw_size);
	/* Any size but 64 is the instance's EINVAL, as for the 16 to 63
	 * bytes ext4 would take: pony's master keys are 64 bytes. */
	if (r == 0)
		r = VFS_CALL(fs_of(c), add_key, &c->ctx, raw, a.raw_size, a.key_spec.u.identifier,
			     &inval);
	crypt_wipe(raw, sizeof(raw));
	answer(c, r, &a, sizeof(a));
}

/* The three removals: _IOWR of the 64-byte struct, the flags answered in it. */
static void remove_key(struct crypt_call *c, unsigned flags)
{
	const struct vfs_inval inval = kernel_caches(c);
	struct fscrypt_remove_key_arg a;
	unsigned removed = 0;
	int r = 0;

	memcpy(&a, c->in, sizeof(a));
	/* Every user's claim is root's to drop, checked first as Linux does. */
	if ((flags & VFS_KEY_ALL_USERS) && !ponyfuse_caller_capable(c->req, CAP_SYS_ADMIN))
		r = -EACCES;
	if (r == 0)
		r = key_arg_check(&a.key_spec, a.__reserved, sizeof(a.__reserved));
	/* No v1 key is ever added (add_key), so none is found. */
	if (r == 0 && a.key_spec.type == FSCRYPT_KEY_SPEC_TYPE_DESCRIPTOR)
		r = -ENOKEY;
	if (r == 0)
		r = VFS_CALL(fs_of(c), remove_key, &c->ctx, a.key_spec.u.identifier, flags, &inval,
			     &removed);
	a.removal_status_flags = removed;
	answer(c, r, &a, sizeof(a));
}

static void remove_key_own(struct crypt_call *c)
{
	remove_key(c, 0);
}

static void remove_key_all_users(struct crypt_call *c)
{
	remove_key(c, VFS_KEY_ALL_USERS);
}

static void remove_key_force(struct crypt_call *c)
{
	remove_key(c, VFS_KEY_FORCE);
}

/* _IOWR of the 128-byte struct. A key not found is ABSENT, not an error. */
static void key_status(struct crypt_call *c)
{
	struct fscrypt_get_key_status_arg a;
	struct vfs_key_status st = { .status = VFS_KEY_ABSENT };
	int r;

	memcpy(&a, c->in, sizeof(a));
	r = key_arg_check(&a.key_spec, a.__reserved, sizeof(a.__reserved));
	/* DESCRIPTOR: no v1 key is ever present. */
	if (r == 0 && a.key_spec.type == FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER) {
		r = VFS_CALL(fs_of(c), key_status, &c->ctx, a.key_spec.u.identifier, &st);
		if (r == -ENOKEY) {
			st = (struct vfs_key_status){ .status = VFS_KEY_ABSENT };
			r = 0;
		}
	}
	a.status = st.status;
	a.status_flags = st.added_by_self ? FSCRYPT_KEY_STATUS_FLAG_ADDED_BY_SELF : 0;
	a.user_count = st.user_count;
	memset(a.__out_reserved, 0, sizeof(a.__out_reserved));
	answer(c, r, &a, sizeof(a));
}

/* _IOR of 16 bytes: FUSE copies the answer out. */
static void get_nonce(struct crypt_call *c)
{
	uint8_t nonce[CRYPT_NONCE_SIZE];

	answer(c, VFS_CALL(fs_of(c), get_nonce, c->ino, nonce), nonce, sizeof(nonce));
}

static void get_salt(struct crypt_call *c)
{
	uint8_t salt[CRYPT_SALT_SIZE];

	answer(c, VFS_CALL(fs_of(c), crypt_salt, salt), salt, sizeof(salt));
}

static const struct crypt_ioctl {
	unsigned cmd;
	void (*run)(struct crypt_call *c);
} crypt_ioctls[] = {
	{ FS_IOC_SET_ENCRYPTION_POLICY, set_policy },
	{ FS_IOC_GET_ENCRYPTION_POLICY, get_policy_v1 },
	{ FS_IOC_GET_ENCRYPTION_POLICY_EX, get_policy_ex },
	{ FS_IOC_ADD_ENCRYPTION_KEY, add_key },
	{ FS_IOC_REMOVE_ENCRYPTION_KEY, remove_key_own },
	{ FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS, remove_key_all_users },
	{ FS_IOC_GET_ENCRYPTION_KEY_STATUS, key_status },
	{ FS_IOC_GET_ENCRYPTION_NONCE, get_nonce },
	{ PONYFUSE_IOC_CRYPT_SALT, get_salt },
	{ PONYFUSE_IOC_REMOVE_KEY_FORCE, remove_key_force },
};

bool ponyfuse_crypt_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, void *arg,
			  const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	const struct crypt_ioctl *io = NULL;
	size_t size = _IOC_SIZE(cmd);
	struct crypt_call c;

	for (size_t i = 0; i < ARRAY_SIZE(crypt_ioctls) && !io; i++)
		if (crypt_ioctls[i].cmd == cmd)
			io = &crypt_ioctls[i];
	if (!io)
		return false;
	/* The kernel passes exactly _IOC_SIZE(cmd) each way the number says;
	 * the handlers rely on it. */
	if (((_IOC_DIR(cmd) & _IOC_WRITE) && in_bufsz < size) ||
	    ((_IOC_DIR(cmd) & _IOC_READ) && out_bufsz < size)) {
		fuse_reply_err(req, EINVAL);
		return true;
	}
	c = (struct crypt_call){ .req = req, .pf = fuse_req_userdata(req), .ino = ino,
				 .arg = arg, .in = in_buf };
	ponyfuse_ctx(req, &c.ctx);
	io->run(&c);
	return true;
}
