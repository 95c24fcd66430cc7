#!/usr/bin/env bash
# systemd_units.sh - the units meson installs (systemd/): pony-monitor.service
# runs `pony vol monitor --scan`, pony-dev-watch.service `pony dev watch`;
# meson filled in the install path; systemd-analyze verify finds nothing
# wrong with them (any warning fails) and rates their hardening "OK" or
# better (exposure 5.0 or less), with ExecStart pointed at this build.
. "$PONY_SRCDIR/tests/lib.sh"
set -u
command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
work=$(mktemp -d /tmp/pony-systemd-units.XXXXXX)
trap 'rm -rf "$work"' EXIT
built=$(dirname "$PONY")/systemd

for u in pony-monitor pony-dev-watch; do
	[ -f "$built/$u.service" ] || fail "meson did not configure $u.service"
	grep -q "^ExecStart=/.*/bin/pony " "$built/$u.service" || fail "$u: ExecStart: $(grep ExecStart "$built/$u.service")"
	sed "s|^ExecStart=[^ ]*/pony |ExecStart=$PONY |" "$built/$u.service" >"$work/$u.service"
done
grep -q "^ExecStart=.* vol monitor --scan" "$work/pony-monitor.service" || fail "monitor's ExecStart"
grep -q "^ExecStart=.* dev watch$" "$work/pony-dev-watch.service" || fail "dev watch's ExecStart"
# Each command the units run takes its options.
"$PONY" vol monitor --scan --delay 60 --help >/dev/null || fail "monitor's options"
cd "$work" || fail "cd"
out=$(systemd-analyze verify --man=no ./pony-monitor.service ./pony-dev-watch.service 2>&1) ||
	fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
for u in pony-monitor pony-dev-watch; do
	systemd-analyze security --offline=yes --threshold=50 --no-pager "./$u.service" >sec.out 2>&1 ||
		fail "$u: exposure above 5.0: $(tail -1 sec.out)"
done
pass
