#!/usr/bin/env bash
# union_reader_copyup.sh - a lower file held open for reading while another
# open copies it up and changes it (append, O_TRUNC rewrite, write in the
# middle): the reader's next read, pread and fstat show the upper's new data,
# on a real FUSE mount exactly as the kernel's overlayfs over the same lower
# shows them (it finds the real file again on each read). Readers that had
# read nothing, one page, or the whole file (the kernel's page cache holds
# the lower's pages then) are compared, and the shell's `exec 3<f; echo new
# > f; cat <&3`. A MAP_SHARED mapping of the reader follows the new data in
# pony (one FUSE inode, one page cache), while the kernel's overlayfs keeps
# mapping the lower file (its documented limit): pony's mapping must show
# what pread shows. The lower is never changed.
#
# Arguments are extra `pony union mount` options (meson: defaults, and
# --writeback --threads 4).
set -u
. "$PONY_SRCDIR/tests/lib.sh"
. "$PONY_SRCDIR/tests/union/union_lib.sh"
PONY_OPTS=("$@")
union_setup rc
UNION_LOWERS=$T/l

# reader.py READER WRITER FILE: opens FILE for reading, reads as READER says,
# changes FILE through another open as WRITER says, then prints what the
# first open sees (sizes and checksums).
cat > "$T/reader.py" <<'PY'
import hashlib, mmap, os, sys
reader, writer, path = sys.argv[1:4]
def show(tag, b): print(tag, len(b), b[:8], hashlib.md5(b).hexdigest())
fd = os.open(path, os.O_RDONLY)
if reader == "page":
    show("before", os.read(fd, 4096))
elif reader == "all":
    show("before", os.read(fd, 1 << 20))
elif reader == "mmap":
    m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    show("map", m[:])
if writer == "append":
    with open(path, "ab") as g: g.write(b"appended\n")
elif writer == "trunc":
    with open(path, "wb") as g: g.write(b"new\n")
elif writer == "middle":
    with open(path, "r+b") as g: g.seek(5000); g.write(b"MIDDLE")
print("fstat", os.fstat(fd).st_size)
new = os.pread(fd, 1 << 20, 0)
show("pread", new)
show("pread5000", os.pread(fd, 32, 5000))
show("read", os.read(fd, 1 << 20))
if reader == "mmap":
    # Only what is still inside the file: a mapping past EOF faults.
    n = min(len(new), len(m))
    print("map follows pread:", m[:n] == new[:n])
PY

mkdir -p "$T"/{l,pu,pw,ku,kw,pm,km}
readers="none page all"; writers="append trunc middle"
for r in $readers mmap; do for w in $writers; do
	head -c 300000 /dev/urandom > "$T/l/$r-$w"
done; done
printf 'lower line\n' > "$T/l/sh-trunc"; printf 'lower line\n' > "$T/l/sh-append"
before=$(cd "$T/l" && find . -printf '%p %s %T@ %C@\n' | sort; cat "$T"/l/*)
before=$(echo "$before" | md5sum)

pony_mount "$T/pu" "$T/pw"
kernel_mount "$T/ku" "$T/kw"

for r in $readers; do for w in $writers; do
	p=$(python3 "$T/reader.py" "$r" "$w" "$T/pm/$r-$w" 2>&1)
	k=$(python3 "$T/reader.py" "$r" "$w" "$T/km/$r-$w" 2>&1)
	[ "$p" = "$k" ] || fail "reader '$r', writer '$w' differs:
--- pony
$p
--- kernel overlayfs
$k"
done; done

ops=('exec 3<sh-trunc; echo new > sh-trunc; cat <&3; stat -c %s sh-trunc'
     'exec 3<sh-append; echo more >> sh-append; cat <&3; cat <&3; cat sh-append')
for op in "${ops[@]}"; do
	p=$(cd "$T/pm" && bash -c "$op" 2>&1; echo "rc=$?")
	k=$(cd "$T/km" && bash -c "$op" 2>&1; echo "rc=$?")
	[ "$p" = "$k" ] || fail "'$op' differs:
--- pony
$p
--- kernel overlayfs
$k"
done

for w in append middle; do
	p=$(python3 "$T/reader.py" mmap "$w" "$T/pm/mmap-$w" 2>&1)
	echo "$p" | grep -q "map follows pread: True" ||
		fail "pony's mapping of a copied-up file does not show its data ($w): $p"
done

kernel_umount
pony_umount
after=$(cd "$T/l" && find . -printf '%p %s %T@ %C@\n' | sort; cat "$T"/l/*)
[ "$(echo "$after" | md5sum)" = "$before" ] || fail "the lower was modified"
pass
