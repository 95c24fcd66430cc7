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
