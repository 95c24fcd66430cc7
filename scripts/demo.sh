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

# --- volume: a RAID6 of image files loses two members and carries on ---
echo
echo "== volume: RAID6 over six image files, md's layout"
vd=$work/volume
mkdir -p "$vd"
for i in 0 1 2 3 4 5; do truncate -s 32M "$vd/d$i.img"; done
"$PONY" vol create -l raid6 -c 64K -N demo --assume-clean "$vd"/d*.img
head -c 20000000 /dev/urandom > "$vd/data"
echo "-- write 20 MB"
"$PONY" vol write -f "$vd/data" "$vd"/d*.img
echo "-- fail members 1 and 4"
"$PONY" vol fail -m 1 "$vd"/d*.img
"$PONY" vol fail -m 4 "$vd"/d*.img 2>/dev/null
"$PONY" vol status "$vd"/d*.img 2>/dev/null | grep member
echo "-- read back with two members gone"
"$PONY" vol read -L 20000000 -f "$vd/back" "$vd"/d*.img 2>/dev/null
cmp "$vd/data" "$vd/back" && echo "   intact: $(sha256sum < "$vd/back" | cut -c1-16)"
echo "-- rebuild onto two new images"
truncate -s 32M "$vd/n1.img" "$vd/n4.img"
"$PONY" vol add -d "$vd/n1.img" "$vd"/d*.img 2>/dev/null
set -- "$vd/d0.img" "$vd/n1.img" "$vd/d2.img" "$vd/d3.img" "$vd/d5.img"
"$PONY" vol add -d "$vd/n4.img" "$@" 2>/dev/null
set -- "$vd/d0.img" "$vd/n1.img" "$vd/d2.img" "$vd/d3.img" "$vd/n4.img" "$vd/d5.img"
echo "-- scrub"
"$PONY" vol scrub "$@"
"$PONY" vol read -L 20000000 -f "$vd/back2" "$vd/n1.img" "$vd/n4.img" "$vd/d2.img" "$vd/d3.img"
cmp "$vd/data" "$vd/back2" && echo "   the rebuilt members alone (with two others) hold the data"
