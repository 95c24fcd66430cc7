# tests/ponyfs/fsck_lib.sh - what the fsck tests share: a scratch directory
# $T for the tests that mount nothing, running SQL on the database of a
# one-image ponyfs (to make the corruptions fsck must find), and running
# fsck expecting an exit status. Source it after tests/lib.sh (and after
# mount_lib.sh, which makes $T, when mounting).

# fsck_scratch NAME: $T, /tmp/pony-NAME.XXXXXX, removed on exit.
fsck_scratch() {
	T=$(mktemp -d "/tmp/pony-$1.XXXXXX")
	trap 'rm -rf "$T"' EXIT
}

# img_sql IMG SQL: runs SQL on IMG's database with Python's sqlite3 and
# prints the rows of its last statement, one a line, columns split by '|'.
# The image must be unmounted cleanly (its WAL empty), as after pony_umount.
img_sql() {
	python3 - "$@" <<'PY'
import os, sqlite3, struct, sys, tempfile
img, sql = sys.argv[1], sys.argv[2]
with open(img, "r+b") as f:
    sb = f.read(4096)
    assert sb[:8] == b"PONYFS1\0", "not a ponyfs image"
    db_bytes, wal_bytes = struct.unpack_from("<QQ", sb, 0x30)
    flags, = struct.unpack_from("<I", sb, 0x24)
    # META_CHUNKS (flags bit 0): the database starts at db_off, after the chunk tables.
    off = struct.unpack_from("<Q", sb, 0x78)[0] if flags & 1 else 4096
    f.seek(off + db_bytes)
    assert struct.unpack(">I", f.read(4))[0] not in (0x377f0682, 0x377f0683), "the WAL is not empty"
    f.seek(off)
    hdr = f.read(100)
    page, = struct.unpack_from(">H", hdr, 16)
    pages, = struct.unpack_from(">I", hdr, 28)
    f.seek(off)
    data = f.read(page * pages)
    d = tempfile.mkdtemp()
    path = os.path.join(d, "db")
    open(path, "wb").write(data)
    c = sqlite3.connect(path, isolation_level=None)
    rows = []
    for stmt in [s for s in sql.split(";") if s.strip()]:
        rows = c.execute(stmt).fetchall()
    c.close()
    new = open(path, "rb").read()
    assert len(new) <= db_bytes, "the database outgrew its range"
    f.seek(off)
    f.write(new)
    for r in rows:
        print("|".join(str(v) for v in r))
    for n in os.listdir(d):
        os.unlink(os.path.join(d, n))
    os.rmdir(d)
PY
}

# ino_of IMG NAME: the inode number of the (first) entry called NAME.
ino_of() { img_sql "$1" "SELECT ino FROM dentries WHERE name = CAST('$2' AS BLOB)" | head -1; }

# fsck_expect RC OUT ARGS...: runs pony fsck ARGS with stdout to OUT; fails unless it exits RC.
fsck_expect() {
	local want=$1 out=$2 rc
	shift 2
	"$PONY" fsck "$@" >"$out" 2>&1; rc=$?
	[ "$rc" -eq "$want" ] || fail "pony fsck $*: exit $rc, expected $want: $(cat "$out")"
}
