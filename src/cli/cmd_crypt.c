/*
 * cmd_crypt.c - `pony crypt`: encryption keys and policies on a mount,
 * through Linux's own fscrypt ioctls (linux/fscrypt.h) wherever Linux has
 * one, so every command but passphrase keys works on ext4 as on ponyfs
 * (tests/ponyfs/ponyfs_crypt_cli.sh checks it, ext4 the oracle). add-key
 * (a raw key, or a passphrase through scrypt with the mount's salt),
 * remove-key, status, set-policy and get-policy; --json and --help on each.
 * Messages name the path and what its errno means for encryption.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fscrypt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "pony/crypt.h"
#include "pony/fuse.h"
#include "pony/util.h"
#include "table.h"

#define PASSPHRASE_MAX 1024

/* The options a subcommand may take (crypt_command.options). */
enum {
	OPT_JSON = 1 << 0,
	OPT_PASSPHRASE = 1 << 1,
	OPT_FORCE = 1 << 2,
	OPT_ALL_USERS = 1 << 3,
	OPT_CONTENTS = 1 << 4,
	OPT_PADDING = 1 << 5,
};

/* What errno means for a command, where strerror() says too little. */
struct errno_meaning {
	int err;
	const char *meaning;
};

/* One `pony crypt` subcommand: its usage, options, arguments and meanings. */
struct crypt_command {
	const char *name;               /* "pony crypt add-key", for messages */
	const char *usage;
	unsigned options;               /* OPT_* it takes, beyond --help */
	int nargs;                      /* positional arguments, exactly */
	const struct errno_meaning *meanings;   /* before the common ones; { 0 } ends */
};

/* A subcommand's parsed command line. */
struct crypt_args {
	bool json, passphrase, force, all_users;
	enum crypt_mode contents;
	unsigned padding_flags;         /* FSCRYPT_POLICY_FLAGS_PAD_* */
	char **args;                    /* the positional ones */
};

static const struct errno_meaning common_meanings[] = {
	{ ENOKEY, "key not present" },
	{ ENOTEMPTY, "directory not empty" },
	{ EEXIST, "already has a different policy" },
	{ ENOTTY, "not a pony mount (no fscrypt ioctls here)" },
	{ EOPNOTSUPP, "this filesystem does not support encryption (ext4 needs -O encrypt)" },
	{ ENODATA, "not encrypted" },
	{ ENOTDIR, "not a directory" },
	{ 0 },
};

static const char *meaning_in(const struct errno_meaning *m, int err)
{
	for (; m && m->err; m++)
		if (m->err == err)
			return m->meaning;
	return NULL;
}

/* "pony: crypt status MNT: key not present (ENOKEY)"; CLI_EXIT_FAILURE. */
static int crypt_fail(const struct crypt_command *cc, const char *path, int err)
{
	const char *m = meaning_in(cc->meanings, err);
	const char *name = strerrorname_np(err);

	if (err == ENOTCONN)
		return cli_path_error(path, err);
	if (!m)
		m = meaning_in(common_meanings, err);
	return cli_error("%s: %s: %s (%s)", cc->name + strlen("pony "), path,
			 m ? m : strerror(err), name ? name : "?");
}

/* Parses argv; -1: go on with *a; else the exit code (--help, usage). */
static int crypt_parse(const struct crypt_command *cc, int argc, char **argv,
		       struct crypt_args *a)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "passphrase", no_argument, NULL, 'p' },
		{ "force", no_argument, NULL, 'f' },
		{ "all-users", no_argument, NULL, 'a' },
		{ "contents", required_argument, NULL, 'c' },
		{ "padding", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const struct { int opt; unsigned bit; } bits[] = {
		{ 'j', OPT_JSON }, { 'p', OPT_PASSPHRASE }, { 'f', OPT_FORCE },
		{ 'a', OPT_ALL_USERS }, { 'c', OPT_CONTENTS }, { 'P', OPT_PADDING },
	};
	unsigned padding = 32;
	int c, r;

	*a = (struct crypt_args){ .contents = CRYPT_MODE_AES_256_XTS };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("%s", cc->usage);
			return CLI_EXIT_OK;
		}
		for (size_t i = 0; i < ARRAY_SIZE(bits); i++)
			if (bits[i].opt == c && !(cc->options & bits[i].bit))
				c = '?';
		switch (c) {
		case 'j': a->json = true; break;
		case 'p': a->passphrase = true; break;
		case 'f': a->force = true; break;
		case 'a': a->all_users = true; break;
		case 'c':
			if (crypt_mode_from_name(optarg, &a->contents) < 0 ||
			    a->contents == CRYPT_MODE_AES_256_CTS)
				return cli_usage_error(cc->name, "--contents: '%s' is not aes-256-xts "
						       "or aes-256-gcm", optarg);
			break;
		case 'P':
			if ((r = cli_parse_unsigned(cc->name, "--padding", optarg, 4, 32, &padding)))
				return r;
			if (padding & (padding - 1))
				return cli_usage_error(cc->name, "--padding: '%s' is not 4, 8, 16 "
						       "or 32", optarg);
			break;
		case ':':
			return cli_usage_error(cc->name, "%s needs a value", argv[optind - 1]);
		default:
			return cli_usage_error(cc->name, "unknown option '%s'", argv[optind - 1]);
		}
	}
	a->padding_flags = (unsigned)__builtin_ctz(padding) - 2;
	if (argc - optind != cc->nargs)
		return cli_usage_error(cc->name, "%d argument%s needed, %d given", cc->nargs,
				       cc->nargs == 1 ? " is" : "s are", argc - optind);
	a->args = argv + optind;
	return -1;
}

static void hex_of(const uint8_t *bytes, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", bytes[i]);
}

/* KEYID: 32 hex digits, as add-key prints it. 0, or a usage error's exit code. */
static int key_id_parse(const struct crypt_command *cc, const char *text,
			uint8_t id[CRYPT_KEY_ID_SIZE])
{
	static const char digits[] = "0123456789abcdef0123456789ABCDEF";

	if (strlen(text) != 2 * CRYPT_KEY_ID_SIZE || strspn(text, digits) != strlen(text))
		return cli_usage_error(cc->name, "KEYID '%s' is not 32 hex digits (a key "
				       "identifier, as add-key prints it)", text);
	for (size_t i = 0; i < CRYPT_KEY_ID_SIZE; i++)
		sscanf(text + 2 * i, "%2hhx", &id[i]);
	return 0;
}

/* One ioctl on path (any file of the mount): 0, or the errno of the open or the ioctl. */
static int path_ioctl(const char *path, unsigned long cmd, void *arg)
{
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	return fd < 0 || ioctl(fd, cmd, arg) < 0 ? errno : 0;
}

/* The same, the failure told; 0 or CLI_EXIT_FAILURE. */
static int crypt_ioctl(const struct crypt_command *cc, const char *path, unsigned long cmd,
		       void *arg)
{
	int err = path_ioctl(path, cmd, arg);

	return err ? crypt_fail(cc, path, err) : 0;
}

/* All of stdin, up to size bytes; -EFBIG when there is more. */
static ssize_t stdin_read(uint8_t *buf, size_t size)
{
	size_t len = 0;
	uint8_t extra;
	ssize_t n;

	while (len < size && (n = read(STDIN_FILENO, buf + len, size - len)) != 0) {
		if (n < 0 && errno != EINTR)
			return -errno;
		len += n > 0 ? (size_t)n : 0;
	}
	while ((n = read(STDIN_FILENO, &extra, 1)) < 0 && errno == EINTR)
		;
	return n > 0 ? -EFBIG : (ssize_t)len;
}

/* The first line of stdin, not echoed from a terminal; its length or -errno. */
static ssize_t passphrase_read(char *buf, size_t size)
{
	struct termios old, quiet;
	bool tty = tcgetattr(STDIN_FILENO, &old) == 0;
	char *nl;

	/* Unbuffered: no copy of the passphrase stays in stdio's buffer. */
	setvbuf(stdin, NULL, _IONBF, 0);
	if (tty) {
		fputs("Passphrase: ", stderr);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	nl = fgets(buf, (int)size, stdin);
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	if (!nl)
		return ferror(stdin) ? -EIO : 0;
	if (!strchr(buf, '\n') && !feof(stdin))
		return -EFBIG;
	buf[strcspn(buf, "\n")] = '\0';
	return (ssize_t)strlen(buf);
}

static const struct errno_meaning add_key_meanings[] = {
	{ EINVAL, "the filesystem refused the key (pony's keys are 64 bytes)" },
	{ 0 },
};

static const struct crypt_command add_key_cmd = {
	.name = "pony crypt add-key",
	.usage = "Usage: pony crypt add-key [--passphrase] [--json] MNT\n"
		 "Adds a master key to the filesystem mounted at MNT (fscrypt's\n"
		 "FS_IOC_ADD_ENCRYPTION_KEY) and prints its identifier, 32 hex digits.\n"
		 "The key is the 64 raw bytes on stdin; with --passphrase, the first line\n"
		 "of stdin is a passphrase the key is derived from (scrypt, N=65536 r=8 p=1,\n"
		 "with the salt the pony mount keeps): the same passphrase gives the same\n"
		 "key on that filesystem. Works on ext4 too, except --passphrase.\n",
	.options = OPT_JSON | OPT_PASSPHRASE,
	.nargs = 1,
	.meanings = add_key_meanings,
};

/* The master key into key (64 bytes): raw from stdin, or from a passphrase. */
static int key_read(const struct crypt_args *a, const char *mnt, uint8_t *key)
{
	const struct crypt_scrypt_cost cost = CRYPT_SCRYPT_DEFAULT;
	const struct crypt_command *cc = &add_key_cmd;
	uint8_t salt[CRYPT_SALT_SIZE];
	char pass[PASSPHRASE_MAX + 2];
	ssize_t len;
	int r;

	if (!a->passphrase) {
		len = stdin_read(key, CRYPT_MASTER_KEY_SIZE);
		if (len == CRYPT_MASTER_KEY_SIZE)
			return 0;
		if (len < 0 && len != -EFBIG)
			return cli_error("crypt add-key: stdin: %s", strerror((int)-len));
		if (len < 0)
			return cli_error("crypt add-key: the key must be %d bytes; stdin held more "
					 "(EINVAL)", CRYPT_MASTER_KEY_SIZE);
		return cli_error("crypt add-key: the key must be %d bytes; stdin held %zd (EINVAL)",
				 CRYPT_MASTER_KEY_SIZE, len);
	}
	len = passphrase_read(pass, sizeof(pass));
	if (len <= 0 || len > PASSPHRASE_MAX) {
		crypt_wipe(pass, sizeof(pass));
		return cli_error("crypt add-key: the passphrase (stdin's first line) is %s",
				 len == 0 ? "empty" : len == -EIO ? "unreadable" : "over 1024 bytes");
	}
	r = path_ioctl(mnt, PONYFUSE_IOC_CRYPT_SALT, salt);
	if (r == ENOTTY)
		r = cli_error("crypt add-key: %s: not a pony mount: passphrase keys need pony's "
			      "salt (ENOTTY)", mnt);
	else if (r)
		r = crypt_fail(cc, mnt, r);
	if (r == 0 && (r = crypt_scrypt(pass, (size_t)len, salt, sizeof(salt), &cost, key,
					CRYPT_MASTER_KEY_SIZE)) < 0)
		r = cli_error("crypt add-key: deriving the key: %s", strerror(-r));
	crypt_wipe(pass, sizeof(pass));
	return r;
}

static int add_key_run(int argc, char **argv)
{
	const struct crypt_command *cc = &add_key_cmd;
	size_t size = sizeof(struct fscrypt_add_key_arg) + CRYPT_MASTER_KEY_SIZE;
	struct fscrypt_add_key_arg *k;
	struct crypt_args a;
	char id[2 * CRYPT_KEY_ID_SIZE + 1];
	int r = crypt_parse(cc, argc, argv, &a);

	if (r >= 0)
		return r;
	k = calloc(1, size);
	if (!k)
		return cli_error("crypt add-key: %s", strerror(ENOMEM));
	k->key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER;
	k->raw_size = CRYPT_MASTER_KEY_SIZE;
	r = key_read(&a, a.args[0], k->raw);
	if (r == 0)
		r = crypt_ioctl(cc, a.args[0], FS_IOC_ADD_ENCRYPTION_KEY, k);
	hex_of(k->key_spec.u.identifier, CRYPT_KEY_ID_SIZE, id);
	crypt_wipe(k, size);
	free(k);
	if (r)
		return r;
	if (a.json) {           /* {"key": [{"mountpoint": ..., "key_id": ...}]} */
		struct cli_record *rec = cli_record_new("key", true);

		cli_record_set(rec, "MOUNTPOINT", 0, "%s", a.args[0]);
		cli_record_set(rec, "KEY_ID", 0, "%s", id);
		return cli_record_print(rec);
	}
	printf("%s\n", id);
	return CLI_EXIT_OK;
}

static const struct errno_meaning remove_key_meanings[] = {
	{ ENOKEY, "key not present, or not added by this user" },
	{ EACCES, "removing every user's claim needs root (CAP_SYS_ADMIN)" },
	{ ENOTTY, "not a pony mount (no fscrypt ioctls here, or none for --force, pony's own)" },
	{ 0 },
};

static const struct crypt_command remove_key_cmd = {
	.name = "pony crypt remove-key",
	.usage = "Usage: pony crypt remove-key [--force] [--all-users] [--json] MNT KEYID\n"
		 "Removes this user's claim on the key KEYID (32 hex digits) from the\n"
		 "filesystem at MNT; the key goes with the last claim (fscrypt's\n"
		 "FS_IOC_REMOVE_ENCRYPTION_KEY). Prints what happened:\n"
		 "  removed                                  the key is gone\n"
		 "  incompletely removed: files still open   it goes when they close\n"
		 "  removed this user's claim: ...           other users still hold it\n"
		 "--all-users drops every user's claim (root; FS_IOC_REMOVE_ENCRYPTION_KEY_\n"
		 "ALL_USERS). --force (pony only) takes the key from files still open too:\n"
		 "their reads and writes fail with ENOKEY from then on.\n",
	.options = OPT_JSON | OPT_FORCE | OPT_ALL_USERS,
	.nargs = 2,
	.meanings = remove_key_meanings,
};

/* What a removal did: a sentence, or with --json a record, {"removal": [{"key_id",
 * "result", "files_busy", "other_users"}]}. */
static void removal_print(const struct crypt_args *a, const struct fscrypt_remove_key_arg *k)
{
	bool busy = k->removal_status_flags & FSCRYPT_KEY_REMOVAL_STATUS_FLAG_FILES_BUSY;
	bool others = k->removal_status_flags & FSCRYPT_KEY_REMOVAL_STATUS_FLAG_OTHER_USERS;
	char id[2 * CRYPT_KEY_ID_SIZE + 1];
	struct cli_record *r;

	if (!a->json) {
		printf("%s\n", others ? "removed this user's claim: other users still hold the key"
			       : busy ? "incompletely removed: files still open" : "removed");
		return;
	}
	hex_of(k->key_spec.u.identifier, CRYPT_KEY_ID_SIZE, id);
	r = cli_record_new("removal", true);
	cli_record_set(r, "KEY_ID", 0, "%s", id);
	cli_record_set(r, "RESULT", 0, "%s", others ? "claim removed"
					      : busy ? "incompletely removed" : "removed");
	cli_record_set_bool(r, "FILES_BUSY", busy);
	cli_record_set_bool(r, "OTHER_USERS", others);
	cli_record_print(r);
}

/*
 * --all-users --force: every claim is gone and files are still open; the
 * forced ioctl (the caller's claim only) then takes the key from them, as
 * a second fscrypt removal of a key no one claims any more retries it.
 */
static int remove_key_force_after(const struct crypt_args *a, struct fscrypt_remove_key_arg *k)
{
	int err = path_ioctl(a->args[0], PONYFUSE_IOC_REMOVE_KEY_FORCE, k);
	const char *name = strerrorname_np(err);

	if (!err)
		return 0;
	removal_print(a, k);
	return cli_error("crypt remove-key: %s: every claim is dropped, but the files still open "
			 "keep the key: forcing it out failed: %s (%s)", a->args[0], strerror(err),
			 name ? name : "?");
}

static int remove_key_run(int argc, char **argv)
{
	const struct crypt_command *cc = &remove_key_cmd;
	struct fscrypt_remove_key_arg k = { .key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER };
	struct crypt_args a;
	int r = crypt_parse(cc, argc, argv, &a);

	if (r >= 0 || (r = key_id_parse(cc, a.args[1], k.key_spec.u.identifier)))
		return r;
	if (!a.all_users)
		r = crypt_ioctl(cc, a.args[0], a.force ? PONYFUSE_IOC_REMOVE_KEY_FORCE
						       : FS_IOC_REMOVE_ENCRYPTION_KEY, &k);
	else if ((r = crypt_ioctl(cc, a.args[0], FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS, &k)) == 0 &&
		 a.force && (k.removal_status_flags & FSCRYPT_KEY_REMOVAL_STATUS_FLAG_FILES_BUSY))
		r = remove_key_force_after(&a, &k);
	if (r == 0)
		removal_print(&a, &k);
	return r;
}

static const struct crypt_command status_cmd = {
	.name = "pony crypt status",
	.usage = "Usage: pony crypt status [--json] MNT KEYID\n"
		 "Prints the key KEYID (32 hex digits) on the filesystem at MNT (fscrypt's\n"
		 "FS_IOC_GET_ENCRYPTION_KEY_STATUS), a FIELD VALUE line each: KEY_ID,\n"
		 "STATUS (present, absent, or incompletely removed: removed while files\n"
		 "were open; it goes when they close), ADDED_BY_SELF, USER_COUNT.\n"
		 "      --json   as JSON: {\"key\": [{\"key_id\": ..., \"status\": ...}]}\n"
		 "Exit: 0 present or incompletely removed, 1 absent (or an error), 2 usage.\n",
	.options = OPT_JSON,
	.nargs = 2,
};

static int status_run(int argc, char **argv)
{
	const struct crypt_command *cc = &status_cmd;
	struct fscrypt_get_key_status_arg k = { .key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER };
	char id[2 * CRYPT_KEY_ID_SIZE + 1];
	struct cli_record *rec;
	struct crypt_args a;
	const char *word;
	int r = crypt_parse(cc, argc, argv, &a);

	if (r >= 0 || (r = key_id_parse(cc, a.args[1], k.key_spec.u.identifier)))
		return r;
	if ((r = crypt_ioctl(cc, a.args[0], FS_IOC_GET_ENCRYPTION_KEY_STATUS, &k)))
		return r;
	hex_of(k.key_spec.u.identifier, CRYPT_KEY_ID_SIZE, id);
	word = k.status == FSCRYPT_KEY_STATUS_PRESENT ? "present"
	       : k.status == FSCRYPT_KEY_STATUS_ABSENT ? "absent"
	       : k.status == FSCRYPT_KEY_STATUS_INCOMPLETELY_REMOVED ? "incompletely removed"
	       : "unknown";
	rec = cli_record_new("key", a.json);
	cli_record_set(rec, "KEY_ID", 0, "%s", id);
	cli_record_set(rec, "STATUS", 0, "%s", word);
	cli_record_set_bool(rec, "ADDED_BY_SELF",
			    k.status_flags & FSCRYPT_KEY_STATUS_FLAG_ADDED_BY_SELF);
	cli_record_set_u64(rec, "USER_COUNT", k.user_count);
	r = cli_record_print(rec);
	/* findfs's rule: a key that is not there is "not found". */
	return r ? r : k.status == FSCRYPT_KEY_STATUS_ABSENT ? CLI_EXIT_NOT_FOUND : CLI_EXIT_OK;
}

/* A mode's name, or its number for one pony does not know (ext4's Adiantum ...). */
static const char *mode_name(uint8_t mode, char *buf, size_t size)
{
	const char *name = crypt_mode_name((enum crypt_mode)mode);

	if (strcmp(name, "unknown"))
		return name;
	snprintf(buf, size, "mode %u", mode);
	return buf;
}

/*
 * A path's policy as a record, {"policy": [{"path": ..., "encrypted": ...}]}
 * with --json; p is the policy as Linux returns it (v1: 12 bytes, version
 * byte 0; v2: 24), NULL for a path that is not encrypted.
 */
static int policy_print(const char *path, const uint8_t *p, bool json)
{
	struct cli_record *r = cli_record_new("policy", json);
	char hex[2 * FSCRYPT_KEY_IDENTIFIER_SIZE + 1], b1[16], b2[16];
	bool v1;

	cli_record_set(r, "PATH", 0, "%s", path);
	cli_record_set_bool(r, "ENCRYPTED", p != NULL);
	if (!p)
		return cli_record_print(r);
	v1 = p[0] == FSCRYPT_POLICY_V1;
	hex_of(v1 ? p + 4 : p + 8, v1 ? FSCRYPT_KEY_DESCRIPTOR_SIZE : FSCRYPT_KEY_IDENTIFIER_SIZE, hex);
	cli_record_set_u64(r, "VERSION", v1 ? 1 : p[0]);
	cli_record_set(r, "CONTENTS", 0, "%s", mode_name(p[1], b1, sizeof(b1)));
	cli_record_set(r, "FILENAMES", 0, "%s", mode_name(p[2], b2, sizeof(b2)));
	cli_record_set_u64(r, "PADDING", 4u << (p[3] & FSCRYPT_POLICY_FLAGS_PAD_MASK));
	cli_record_set_u64(r, "FLAGS", p[3]);
	cli_record_set(r, v1 ? "KEY_DESCRIPTOR" : "KEY_ID", 0, "%s", hex);
	return cli_record_print(r);
}

static const struct errno_meaning set_policy_meanings[] = {
	{ EINVAL, "a policy this filesystem does not support" },
	{ EACCES, "only the directory's owner (or root) may set its policy" },
	{ ENOKEY, "key not present (add it first with pony crypt add-key)" },
	{ 0 },
};

static const struct crypt_command set_policy_cmd = {
	.name = "pony crypt set-policy",
	.usage = "Usage: pony crypt set-policy [--contents aes-256-xts|aes-256-gcm]\n"
		 "                             [--padding 4|8|16|32] [--json] DIR KEYID\n"
		 "Encrypts the empty directory DIR and all made below it with the key\n"
		 "KEYID (32 hex digits; add it first), as fscrypt's policy v2\n"
		 "(FS_IOC_SET_ENCRYPTION_POLICY). Contents: aes-256-xts (default, as\n"
		 "fscrypt) or aes-256-gcm (pony only: each block authenticated); names:\n"
		 "aes-256-cts, padded to a multiple of --padding bytes (default 32).\n"
		 "Setting the same policy again does nothing; a different one is EEXIST.\n"
		 "Prints nothing, or the policy with --json.\n",
	.options = OPT_JSON | OPT_CONTENTS | OPT_PADDING,
	.nargs = 2,
	.meanings = set_policy_meanings,
};

static int set_policy_run(int argc, char **argv)
{
	const struct crypt_command *cc = &set_policy_cmd;
	struct crypt_policy p = { .filenames_mode = CRYPT_MODE_AES_256_CTS };
	uint8_t bytes[CRYPT_POLICY_SIZE];
	struct crypt_args a;
	int r = crypt_parse(cc, argc, argv, &a);

	if (r >= 0 || (r = key_id_parse(cc, a.args[1], p.key_id)))
		return r;
	p.contents_mode = a.contents;
	p.flags = (uint8_t)a.padding_flags;
	crypt_policy_encode(&p, bytes);
	if ((r = crypt_ioctl(cc, a.args[0], FS_IOC_SET_ENCRYPTION_POLICY, bytes)))
		return r;
	return a.json ? policy_print(a.args[0], bytes, true) : CLI_EXIT_OK;
}

static const struct crypt_command get_policy_cmd = {
	.name = "pony crypt get-policy",
	.usage = "Usage: pony crypt get-policy [--json] PATH\n"
		 "Prints the encryption policy of PATH (fscrypt's\n"
		 "FS_IOC_GET_ENCRYPTION_POLICY_EX), a FIELD VALUE line each: PATH,\n"
		 "ENCRYPTED, VERSION, CONTENTS, FILENAMES, PADDING, FLAGS, KEY_ID (v1:\n"
		 "KEY_DESCRIPTOR). A PATH that is not encrypted has ENCRYPTED false alone.\n"
		 "      --json   as JSON: {\"policy\": [{\"path\": ..., \"encrypted\": ...}]}\n"
		 "Exit: 0 encrypted, 1 not encrypted (nothing found) or an error, 2 usage.\n",
	.options = OPT_JSON,
	.nargs = 1,
};

static int get_policy_run(int argc, char **argv)
{
	const struct crypt_command *cc = &get_policy_cmd;
	struct fscrypt_get_policy_ex_arg ex = { .policy_size = sizeof(ex.policy) };
	struct crypt_args a;
	int r = crypt_parse(cc, argc, argv, &a);

	if (r >= 0)
		return r;
	r = path_ioctl(a.args[0], FS_IOC_GET_ENCRYPTION_POLICY_EX, &ex);
	if (r == 0)
		return policy_print(a.args[0], (const uint8_t *)&ex.policy, a.json);
	if (r != ENODATA)
		return crypt_fail(cc, a.args[0], r);
	r = policy_print(a.args[0], NULL, a.json);
	return r ? r : CLI_EXIT_NOT_FOUND;
}

#define CRYPT_SUBCOMMAND(var, cmd, summary_text, fn) \
	static const struct cli_command var = { .name = cmd, .summary = summary_text, .run = fn }
CRYPT_SUBCOMMAND(add_key_sub, "add-key", "add a master key (raw or from a passphrase)",
		 add_key_run);
CRYPT_SUBCOMMAND(remove_key_sub, "remove-key", "remove a key (this user's claim, all, forced)",
		 remove_key_run);
CRYPT_SUBCOMMAND(status_sub, "status", "a key: present, absent or incompletely removed",
		 status_run);
CRYPT_SUBCOMMAND(set_policy_sub, "set-policy", "encrypt an empty directory with a key",
		 set_policy_run);
CRYPT_SUBCOMMAND(get_policy_sub, "get-policy", "show a file's or directory's policy",
		 get_policy_run);

static const struct cli_command *const crypt_cmds[] = {
	&add_key_sub, &remove_key_sub, &status_sub, &set_policy_sub, &get_policy_sub,
};

static int crypt_run(int argc, char **argv)
{
	return cli_dispatch("pony crypt", crypt_cmds, ARRAY_SIZE(crypt_cmds), argc, argv);
}

const struct cli_command cli_crypt_command = {
	.name = "crypt",
	.summary = "encryption keys and policies (fscrypt's ioctls; ext4 too)",
	.run = crypt_run,
};
