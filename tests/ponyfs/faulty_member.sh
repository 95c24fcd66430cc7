#!/bin/bash
# faulty_member.sh - an nbdkit sh plugin (nbdkit-sh-plugin(3)) serving the
# image $IMG as a disk with bad sectors, for ponyfs_bad_sectors.sh: a read
# that touches the byte range in the file $BADREAD ("OFFSET LENGTH") fails
# with EIO, until a write covers the range (a disk remaps a sector on
# write: the file is removed); a write that touches the range in $BADWRITE
# fails with EIO. Either file absent: no such fault.

# overlaps FILE OFF LEN: whether [OFF, OFF+LEN) meets FILE's range.
overlaps() {
	local boff blen
	[ -s "$1" ] && read -r boff blen <"$1" && [ "$2" -lt $((boff + blen)) ] && [ $(($2 + $3)) -gt "$boff" ]
}

case "$1" in
get_size) stat -c %s "$IMG" ;;
can_write | can_flush) exit 0 ;;
flush) exit 0 ;;
pread)
	if overlaps "$BADREAD" "$4" "$3"; then echo "EIO unreadable sector" >&2; exit 1; fi
	exec dd if="$IMG" bs=64K iflag=skip_bytes,count_bytes skip="$4" count="$3" status=none ;;
pwrite)
	if overlaps "$BADWRITE" "$4" "$3"; then echo "EIO write failed" >&2; exit 1; fi
	if overlaps "$BADREAD" "$4" "$3"; then rm -f "$BADREAD"; fi
	exec dd of="$IMG" bs=64K oflag=seek_bytes conv=notrunc seek="$4" status=none ;;
*) exit 2 ;;
esac
