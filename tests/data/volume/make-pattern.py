#!/usr/bin/env python3
# make-pattern.py SIZE_MIB OUT - the fixtures' test pattern. Sector s of the
# array holds s as a little-endian 64-bit integer, then bytes (i + 7*s) & 0xff
# for i = 8..511: every sector is told apart, and xz packs it tightly.
# tests/volume/pattern.h computes the same bytes.
import struct, sys
n = int(sys.argv[1]) * 2048
with open(sys.argv[2], 'wb') as f:
    for s in range(n):
        f.write(struct.pack('<Q', s) + bytes((i + 7 * s) & 0xff for i in range(8, 512)))
