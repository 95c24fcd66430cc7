#!/usr/bin/env bash
# demo.sh - pony's main job, shown on image files it creates under a
# temporary directory. Each component adds its act here as it lands.
set -euo pipefail
cd "$(dirname "$0")/.."
PONY=$PWD/build/pony
work=$(mktemp -d /tmp/pony-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== pony $("$PONY" --version | cut -d' ' -f2): the 2009 storage stack, in user space"
echo "   working in $work"

# -- union: a pony union mount whose upper the kernel's overlayfs reads back --
echo
echo "== union: read-only lower + writable upper, overlayfs's on-disk format"
u=$work/union
mkdir -p "$u"/{lower/etc,lower/docs,upper,work,pony,kernel}
echo "hostname=pony" > "$u/lower/etc/config"
echo "old notes" > "$u/lower/docs/notes"
echo "delete me" > "$u/lower/docs/tmp"
union_demo_cleanup() {
	for m in "$u/pony" "$u/kernel"; do
		mountpoint -q "$m" 2>/dev/null && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	rm -rf "$work"
}
trap union_demo_cleanup EXIT
"$PONY" union mount --lower "$u/lower" --upper "$u/upper" --work "$u/work" "$u/pony"
echo "   mounted: $(mount | grep "$u/pony" | cut -d' ' -f1,3,5)"
echo "hostname=changed" > "$u/pony/etc/config"       # copy-up of a file
rm "$u/pony/docs/tmp"                               # a whiteout
mv "$u/pony/docs" "$u/pony/papers"                  # a redirect
mkdir "$u/pony/new" && echo hello > "$u/pony/new/file"
tree_of() { (cd "$1" && find . -printf '%p %y %m %s\n' | sort && find . -type f -exec md5sum {} + | sort -k2); }
tree_of "$u/pony" > "$u/pony.tree"
echo "   the union through pony:"; (cd "$u/pony" && find . | sort | sed 's/^/     /')
"$PONY" union umount "$u/pony"
echo "   upper on disk: $(cd "$u/upper" && find . -mindepth 1 -printf '%p(%y)\n' | sort | tr '\n' ' ')"
if mount -t overlay overlay -o "lowerdir=$u/lower,upperdir=$u/upper,workdir=$u/work,redirect_dir=on" \
	"$u/kernel" 2>/dev/null; then
	tree_of "$u/kernel" > "$u/kernel.tree"
	umount "$u/kernel"
	if cmp -s "$u/pony.tree" "$u/kernel.tree"; then
		echo "   kernel overlayfs on pony's upper shows the same tree (names, types, modes, sizes, data)"
	else
		echo "   kernel overlayfs shows a different tree:"; diff "$u/pony.tree" "$u/kernel.tree"; exit 1
	fi
else
	echo "   (kernel overlayfs not available here: skipped the kernel's view)"
fi
echo "   the lower is untouched: $(cat "$u/lower/etc/config"), docs/tmp still there: $(cat "$u/lower/docs/tmp")"
