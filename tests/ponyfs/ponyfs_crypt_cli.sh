#!/usr/bin/env bash
# ponyfs_crypt_cli.sh - `pony crypt` and Linux's fscrypt ioctls through a
# real ponyfs mount, with ext4 (-O encrypt, on a loop device) as the oracle
# (issue 20). The same steps run on both, each answer (output, exit, errno)
# logged, and the two logs must be the same: the key identifier of the same
# key, the status words, the policy's fields, the errors of bad input,
# xfs_io's fscrypt commands. Then what only ponyfs has: passphrase keys,
# AES-256-GCM, the key gone at unmount and the files still whole,
# --force taking the key from a descriptor kept open. Without root (no
# loop mount) the ext4 half is skipped, saying so, and the identifier is
# checked against the value Linux 6.1's ext4 gave (tests/crypt/test_crypt.c).
set -u
. "$PONY_SRCDIR/tests/lib.sh"

. "$PONY_SRCDIR/tests/ponyfs/mount_lib.sh" crypt-cli
M=$T/m
EXT4_ID_OF_KEY_0_TO_63=8699c2c53707405da5aba5ae4d8583c0
NO_SUCH_ID=00112233445566778899aabbccddeeff

# --help on each command, and bad input that needs no mount.
"$PONY" crypt --help | grep -q "set-policy" || fail "pony crypt --help"
for c in add-key remove-key status set-policy get-policy; do
	"$PONY" crypt "$c" --help | grep -q "^Usage: pony crypt $c" || fail "crypt $c --help"
done
expect_usage_error "$PONY" crypt bogus
expect_usage_error "$PONY" crypt status "$T" xyz                          # bad hex
expect_usage_error "$PONY" crypt status "$T" 0011223344556677889900aabbccddeeg
expect_usage_error "$PONY" crypt status "$T" 0011223344556677             # a v1 descriptor
expect_usage_error "$PONY" crypt remove-key "$T"                          # no KEYID
expect_usage_error "$PONY" crypt set-policy --contents aes-128-cbc "$T" "$NO_SUCH_ID"
expect_usage_error "$PONY" crypt set-policy --contents aes-256-cts "$T" "$NO_SUCH_ID"
expect_usage_error "$PONY" crypt set-policy --padding 12 "$T" "$NO_SUCH_ID"
expect_usage_error "$PONY" crypt status --force "$T" "$NO_SUCH_ID"        # not its option
expect_usage_error "$PONY" crypt set-policy "$T" "$NO_SUCH_ID" --contents
"$PONY" crypt set-policy --contents aes-128-cbc "$T" "$NO_SUCH_ID" 2>&1 |
	grep -q "aes-256-xts or aes-256-gcm" || fail "an unknown mode's message"
"$PONY" crypt status /dev/shm "$NO_SUCH_ID" 2>&1 | grep -q "not a pony mount (.*(ENOTTY)" ||
	fail "no fscrypt ioctls: the message does not say so"

require_fuse
require_cmd fusermount3
chmod 755 "$T"
for i in $(seq 0 63); do printf "\\$(printf %o "$i")"; done >"$T/key0"
head -c 64 /dev/urandom >"$T/key1"
head -c 10 "$T/key0" >"$T/key-short"
cat "$T/key0" "$T/key0" >"$T/key-long"

# check WANT ARGS...: `pony crypt ARGS`'s answer "stdout|exit|errno" (the
# errno name its message ends with) must be WANT; logged to $LOG either way.
check() {
	local want=$1 out rc
	shift
	out=$("$PONY" crypt "$@" 2>"$T/err"); rc=$?
	# a record (status, get-policy): its FIELD VALUE lines, blanks squeezed
	[[ $out == "FIELD "* ]] && out=$(sed 1d <<<"$out" | tr -s ' ')
	# JSON (libsmartcols's, over several lines): as one compact line
	[[ $out == "{"* ]] && out=$(python3 -c 'import json, sys
print(json.dumps(json.load(sys.stdin), separators=(",", ":")))' <<<"$out")
	RES="${out//$'\n'/; }|$rc|$(grep -o '(E[A-Z]*)$' "$T/err" | tr -d '()')"
	echo "crypt $* => $RES" >>"$LOG"
	[ "$RES" = "$want" ] || fail "$FS: crypt $*: '$RES', expected '$want' ($(cat "$T/err"))"
}
# st ID STATUS ADDED_BY_SELF USER_COUNT: `crypt status`'s record as check has it.
st() { echo "KEY_ID $1; STATUS $2; ADDED_BY_SELF $3; USER_COUNT $4"; }
# pol PATH PADDING FLAGS ID [CONTENTS]: `crypt get-policy`'s record of a v2 policy.
pol() { echo "PATH $1; ENCRYPTED true; VERSION 2; CONTENTS ${5:-aes-256-xts}; FILENAMES aes-256-cts; PADDING $2; FLAGS $3; KEY_ID $4"; }
# as_nobody CMD...: CMD as user nobody (65534), no groups.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# status_until WANT: the status of $ID becomes WANT within 5 s (FUSE's
# RELEASE of a closed file reaches the daemon after close(2) returns).
status_until() {
	for _ in $(seq 1 50); do
		[ "$("$PONY" crypt status . "$ID" | record_field STATUS)" = "$1" ] && return 0
		sleep 0.1
	done
	fail "$FS: the status of $ID did not become '$1'"
}
# nonce PATH: FS_IOC_GET_ENCRYPTION_NONCE (_IOR('f', 27, __u8[16])) of
# PATH in hex, or the errno's name.
nonce() {
	python3 - "$1" <<'EOF'
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
buf = bytearray(16)
try:
    fcntl.ioctl(fd, 0x8010661b, buf)
    print(buf.hex())
except OSError as e:
    print(errno.errorcode[e.errno])
EOF
}
# xfs_io_log ARGS...: xfs_io's fscrypt commands, their answers logged.
xfs_io_log() { echo "xfs_io $* => $(xfs_io "$@" 2>&1 | tr '\n' ';')" >>"$LOG"; }

# The steps both filesystems answer alike; run in the mount's root, so
# the paths in every message are the same. FS and LOG name the filesystem.
common_steps() {
	local id1 pol nd nf
	cd "$1" || fail "cd $1"
	check "$EXT4_ID_OF_KEY_0_TO_63|0|" add-key . <"$T/key0"
	ID=$EXT4_ID_OF_KEY_0_TO_63
	check "|1|EINVAL" add-key . <"$T/key-short"
	grep -q "must be 64 bytes; stdin held 10 (EINVAL)" "$T/err" || fail "$FS: a short key's message"
	check "|1|EINVAL" add-key . <"$T/key-long"
	check "{\"key\":[{\"mountpoint\":\".\",\"key_id\":\"$ID\"}]}|0|" add-key --json . <"$T/key0"
	"$PONY" crypt add-key . <"$T/key1" >"$T/id1" || fail "$FS: add-key of a random key"
	id1=$(cat "$T/id1")
	[[ $id1 =~ ^[0-9a-f]{32}$ ]] || fail "$FS: add-key printed '$id1'"
	echo "random key's id $id1" >>"$LOG"
	check "$(st "$ID" present true 1)|0|" status . "$ID"
	check "$(st "$NO_SUCH_ID" absent false 0)|1|" status . "$NO_SUCH_ID"
	"$PONY" crypt status --json . "$ID" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d == {"key": [{"key_id": sys.argv[1], "status": "present", "added_by_self": True,
                      "user_count": 1}]}, d' "$ID" || fail "$FS: status --json"

	# Policies: set, read back, the same again, a different one, bad places.
	mkdir d d16 ne && touch ne/x plain || fail "$FS: mkdir"
	check "|0|" set-policy d "$ID"
	check "$(pol d 32 3 "$ID")|0|" get-policy d
	check "|0|" set-policy d "$ID"                                  # the same again
	check "|1|EEXIST" set-policy --padding 16 d "$ID"
	grep -q "crypt set-policy: d: already has a different policy (EEXIST)" "$T/err" ||
		fail "$FS: EEXIST's message: $(cat "$T/err")"
	check "|1|EEXIST" set-policy d "$id1"
	check "|1|ENOTEMPTY" set-policy ne "$ID"
	grep -q "ne: directory not empty (ENOTEMPTY)" "$T/err" || fail "$FS: ENOTEMPTY's message"
	check "|1|ENOTDIR" set-policy plain "$ID"
	check "|1|ENOENT" set-policy missing "$ID"
	"$PONY" crypt set-policy --json --padding 16 d16 "$id1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d == {"policy": [{"path": "d16", "encrypted": True, "version": 2, "contents": "aes-256-xts",
                         "filenames": "aes-256-cts", "padding": 16, "flags": 2,
                         "key_id": sys.argv[1]}]}, d' "$id1" || fail "$FS: set-policy --json"
	check "PATH .; ENCRYPTED false|1|" get-policy .                 # nothing found
	out=$("$PONY" crypt get-policy --json .); rc=$?
	[ $rc = 1 ] && python3 -c '
import json, sys
assert json.loads(sys.argv[1]) == {"policy": [{"path": ".", "encrypted": False}]}' "$out" ||
		fail "$FS: get-policy --json of a path not encrypted: exit $rc, $out"
	echo secret >d/f && mkdir d/sub || fail "$FS: writing under the policy"
	check "$(pol d/f 32 3 "$ID")|0|" get-policy d/f                              # inherited
	nd=$(nonce d) nf=$(nonce d/f)
	[[ $nd =~ ^[0-9a-f]{32}$ && $nf =~ ^[0-9a-f]{32}$ && $nd != "$nf" ]] ||
		fail "$FS: the nonces of d and d/f: '$nd' '$nf'"
	[ "$(nonce .)" = ENODATA ] || fail "$FS: the nonce of a directory not encrypted: $(nonce .)"
	check "$(pol d16 16 2 "$id1")|0|" get-policy d16

	# Other users: their claim is their own; all users' is root's.
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		chmod 755 .
		as_nobody "$PONY" crypt status --json . "$ID" | grep -q '"added_by_self": false' ||
			fail "$FS: nobody's status says it added the key"
		as_nobody "$PONY" crypt remove-key . "$ID" 2>"$T/err" && fail "$FS: nobody removed root's key"
		grep -q "(ENOKEY)" "$T/err" || fail "$FS: nobody's removal: $(cat "$T/err")"
		as_nobody "$PONY" crypt remove-key --all-users . "$ID" 2>"$T/err" &&
			fail "$FS: nobody removed every claim"
		grep -q "needs root (CAP_SYS_ADMIN) (EACCES)" "$T/err" || fail "$FS: --all-users: $(cat "$T/err")"
		# Two claims: root's removal leaves nobody's, and the key.
		as_nobody "$PONY" crypt add-key . <"$T/key0" >/dev/null || fail "$FS: nobody's add-key"
		check "$(st "$ID" present true 2)|0|" status . "$ID"
		grep -q '"user_count": 2' <("$PONY" crypt status --json . "$ID") || fail "$FS: two claims"
		check "removed this user's claim: other users still hold the key|0|" remove-key . "$ID"
		check "$(st "$ID" present false 1)|0|" status . "$ID"
		[ "$(as_nobody "$PONY" crypt remove-key . "$ID")" = removed ] ||
			fail "$FS: nobody's removal of the last claim"
		check "$(st "$ID" absent false 0)|1|" status . "$ID"
		# root's --all-users drops both claims at once.
		as_nobody "$PONY" crypt add-key . <"$T/key0" >/dev/null || fail "$FS: nobody's add-key"
		check "$ID|0|" add-key . <"$T/key0"
		check "removed|0|" remove-key --all-users . "$ID"
		check "$(st "$ID" absent false 0)|1|" status . "$ID"
		check "$ID|0|" add-key . <"$T/key0"
	fi

	# Removal with a file open: incompletely removed until it closes.
	exec 3<d/f
	check "incompletely removed: files still open|0|" remove-key . "$ID"
	check "$(st "$ID" "incompletely removed" false 0)|0|" status . "$ID"
	# A retry: Linux's for anyone; ponyfs's for root, a user's wants a
	# claim (docs/crypt.md, where ponyfs answers otherwise).
	if [ "$(id -u)" = 0 ]; then
		check "incompletely removed: files still open|0|" remove-key . "$ID"
	else
		check "|1|ENOKEY" remove-key . "$ID"
	fi
	exec 3<&-
	# ext4 keeps the closed inode cached, holding the key until a removal
	# is tried again; ponyfs lets it go at the file's last release.
	[ "$FS" = ext4 ] && { "$PONY" crypt remove-key . "$ID" | grep -qx removed || fail "ext4 retry"; }
	status_until absent
	cat d/* >/dev/null 2>"$T/err" && fail "$FS: a file read without its key"
	grep -q "Required key not available" "$T/err" || fail "$FS: a fresh open: $(cat "$T/err")"
	[ "$(ls d | wc -l)" = 2 ] || fail "$FS: the no-key listing"
	[ "$(nonce d)" = "$nd" ] || fail "$FS: d's nonce without the key"
	check "|1|ENOKEY" remove-key . "$ID"
	grep -q "key not present" "$T/err" || fail "$FS: ENOKEY's message"
	check "$(st "$ID" absent false 0)|1|" status . "$ID"
	check "{\"removal\":[{\"key_id\":\"$id1\",\"result\":\"removed\",\"files_busy\":false,\"other_users\":false}]}|0|" \
		remove-key --json . "$id1"
	check "|1|ENOKEY" remove-key --json . "$id1"

	# xfs_io's fscrypt commands (the kernel's structures, not pony's code).
	if command -v xfs_io >/dev/null; then
		xfs_io_log -c add_enckey . <"$T/key1"
		mkdir x || fail "$FS: mkdir x"
		xfs_io_log -c "set_encpolicy -v 2 $id1" x
		xfs_io_log -c "get_encpolicy" x
		xfs_io_log -c "get_encpolicy -1" x
		xfs_io_log -c "get_encpolicy" .
		xfs_io_log -c "get_encpolicy -1" .
		xfs_io_log -c "enckey_status $id1" .
		xfs_io_log -c "rm_enckey $id1" .
		xfs_io_log -c "enckey_status $id1" .
		xfs_io_log -c "rm_enckey $id1" .
		xfs_io_log -c add_enckey . <"$T/key-short"
	fi
	cd / || fail "cd /"
}

# ext4, the oracle, where the kernel has it.
LOG=$T/ext4.log FS=ext4
if [ "$(id -u)" != 0 ] || ! command -v mkfs.ext4 >/dev/null; then
	echo "ext4 oracle skipped: needs root and mkfs.ext4; checking against Linux's known identifier"
else
	mkdir -p "$T/e"
	trap 'cd /; mountpoint -q "$T/e" && umount "$T/e"; ponyfs_cleanup' EXIT
	truncate -s 64M "$T/ext4.img"
	mkfs.ext4 -q -O encrypt "$T/ext4.img" || fail "mkfs.ext4 -O encrypt"
	mount -o loop "$T/ext4.img" "$T/e" || fail "mounting ext4"
	common_steps "$T/e"
	LOG=$T/ext4-only.log
	# Passphrase keys need pony's salt; ext4 has none.
	check "|1|ENOTTY" add-key --passphrase "$T/e" <<<"a passphrase"
	grep -q "passphrase keys need pony's salt" "$T/err" || fail "ext4 --passphrase: $(cat "$T/err")"
	# ext4 has no AES-256-GCM (pony's own mode number).
	mkdir "$T/e/gcm" && check "|1|EINVAL" set-policy --contents aes-256-gcm "$T/e/gcm" "$ID"
	umount "$T/e" || fail "umount ext4"
fi

# ponyfs: the same steps, the same answers.
truncate -s 256M "$T/img"
"$PONY" mkfs "$T/img" >/dev/null || fail "mkfs"
pony_mount "$T/img"
LOG=$T/pony.log.steps FS=ponyfs
common_steps "$M"
if [ -f "$T/ext4.log" ]; then
	diff -u "$T/ext4.log" "$LOG" >&2 || fail "ponyfs answered otherwise than ext4"
fi

# What only ponyfs has. Passphrase keys: one passphrase, one key, on this filesystem.
cd "$M" || fail "cd $M"
check "|1|" add-key --passphrase . </dev/null
grep -q "passphrase (stdin's first line) is empty" "$T/err" || fail "an empty passphrase: $(cat "$T/err")"
"$PONY" crypt add-key --passphrase . <<<"correct horse battery staple" >"$T/pid1" || fail "passphrase key"
"$PONY" crypt add-key --passphrase . <<<"correct horse battery staple" >"$T/pid2" || fail "passphrase again"
"$PONY" crypt add-key --passphrase . <<<"correct horse battery stapler" >"$T/pid3" || fail "another passphrase"
cmp -s "$T/pid1" "$T/pid2" || fail "one passphrase gave two keys"
cmp -s "$T/pid1" "$T/pid3" && fail "two passphrases gave one key"
PID=$(cat "$T/pid1")

# AES-256-GCM, round trip.
mkdir gcm || fail "mkdir gcm"
check "|0|" set-policy --contents aes-256-gcm --padding 8 gcm "$PID"
check "$(pol gcm 8 1 "$PID" aes-256-gcm)|0|" get-policy gcm
head -c 300000 /dev/urandom >"$T/data"
cp "$T/data" gcm/data && cmp -s "$T/data" gcm/data || fail "a GCM file reads back otherwise"

# A fresh mount holds no key; the files come back whole with it.
ID=$EXT4_ID_OF_KEY_0_TO_63
"$PONY" crypt add-key . <"$T/key0" >/dev/null && mkdir kept &&
	"$PONY" crypt set-policy kept "$ID" && echo "kept data" >kept/f || fail "kept/f"
cd / && pony_umount && pony_mount "$T/img" && cd "$M" || fail "remount"
check "$(st "$ID" absent false 0)|1|" status . "$ID"
cat kept/* >/dev/null 2>&1 && fail "a file read after the remount without its key"
check "$ID|0|" add-key . <"$T/key0"
[ "$(cat kept/f)" = "kept data" ] || fail "kept/f after the remount"

# --force: a descriptor kept open loses the key too; with --all-users
# after the claims of two users (root's, nobody's) are dropped.
exec 3<kept/f
check "removed|0|" remove-key --force . "$ID"
check "$(st "$ID" absent false 0)|1|" status . "$ID"
cat <&3 >/dev/null 2>"$T/err" && fail "a descriptor kept open read after --force"
grep -q "Required key not available" "$T/err" || fail "a read after --force: $(cat "$T/err")"
exec 3<&-
[ "$(id -u)" = 0 ] || { cd /; pony_umount; echo "--all-users skipped: needs root"; pass; }
check "$ID|0|" add-key . <"$T/key0"
command -v setpriv >/dev/null && { as_nobody "$PONY" crypt add-key . <"$T/key0" >/dev/null ||
	fail "nobody's add-key"; }
exec 3<kept/f
check "incompletely removed: files still open|0|" remove-key --all-users . "$ID"
check "removed|0|" remove-key --force --all-users . "$ID"
check "$(st "$ID" absent false 0)|1|" status . "$ID"
cat <&3 >/dev/null 2>"$T/err" && fail "a descriptor kept open read after --force --all-users"
exec 3<&-
check "$ID|0|" add-key . <"$T/key0"
exec 3<kept/f
check "removed|0|" remove-key --force --all-users . "$ID"         # in one go
cat <&3 >/dev/null 2>"$T/err" && fail "a descriptor kept open read after --force --all-users"
exec 3<&-
cd / || fail "cd /"
pony_umount
pass
