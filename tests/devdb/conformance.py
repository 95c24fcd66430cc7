#!/usr/bin/env python3
# conformance.py - pony's probers against libblkid's own expectations:
# util-linux's real filesystem and partition-table images with the output
# libblkid gives for each (shared/testdata/blkid, see SOURCE.txt there).
# Every image of a format pony supports must produce every expected field,
# and nothing more; images of formats pony does not support must not be
# mistaken for one it does. Prints the counts.
import atexit
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile

PONY = os.environ["PONY"]
# PONY_SHARED is the checkout's ../shared; a worktree under wt/ has it two up.
DATA = None
for shared in (os.environ.get("PONY_SHARED", ""),
               os.path.join(os.environ.get("PONY_SRCDIR", "."), "..", "..", "shared")):
    if os.path.isdir(os.path.join(shared, "testdata", "blkid")):
        DATA = os.path.join(shared, "testdata", "blkid")
        break
if DATA is None:
    print("SKIP: shared/testdata/blkid is missing", file=sys.stderr)
    sys.exit(77)

formats = set(subprocess.run([PONY, "dev", "probe", "--formats"], check=True,
                             capture_output=True, text=True).stdout.split())
tmp = tempfile.mkdtemp(prefix="pony-conformance-")
atexit.register(shutil.rmtree, tmp, True)
images = {}
for f in os.listdir(os.path.join(DATA, "images-fs")):
    name = f[:-len(".img.xz")]
    m = re.match(r"(.*)-multi-([\d-]+)-(\w+)$", name)
    if m:   # iso-multi-0-174-348-genisoimage: one subtest per session
        for off in m.group(2).split("-"):
            images[f"{m.group(1)}-multi-{m.group(3)}-{off}"] = (f, int(off) * 2048)
    else:
        images[name] = (f, None)


def unpack(sub, f):
    """Decompressed sparse (zero blocks become holes: some images are mostly
    zeros), kept only while used: see done()."""
    out = os.path.join(tmp, f[:-3])
    if not os.path.exists(out):
        zero = bytes(65536)
        with lzma.open(os.path.join(DATA, sub, f)) as src, open(out, "wb") as dst:
            while True:
                b = src.read(65536)
                if not b:
                    break
                if b == zero[:len(b)]:
                    dst.seek(len(b), os.SEEK_CUR)
                else:
                    dst.write(b)
            dst.truncate()
    return out


def done(img, name):
    """Deletes an image unless another subtest (a multi-session one) needs it."""
    if "-multi-" not in name:
        os.unlink(img)


def probe(img, *args):
    p = subprocess.run([PONY, "dev", "probe", *args, img], capture_output=True, text=True)
    # 1 and silent: nothing found (findfs's code); 1 with a message: an error.
    if p.returncode not in (0, 1, 8) or (p.returncode == 1 and p.stderr):
        raise RuntimeError(f"pony dev probe {img} exited {p.returncode}: {p.stderr}")
    return p.stdout


failures = []
fmt_seen, n_images, n_fields, n_negative = set(), 0, 0, 0

for exp_name in sorted(os.listdir(os.path.join(DATA, "expected-blkid"))):
    if not exp_name.startswith("low-probe-"):
        continue
    name = exp_name[len("low-probe-"):]
    if name not in images:
        continue
    expected = open(os.path.join(DATA, "expected-blkid", exp_name), encoding="utf-8",
                    errors="surrogateescape").read().splitlines()
    types = [l.split("=", 1)[1] for l in expected if l.startswith("ID_FS_TYPE=")]
    f, session = images[name]
    img = unpack("images-fs", f)
    args = ["-o", "udev", "--no-partitions"]
    if session is not None:
        args += ["--hint", f"session_offset={session}"]
    got = probe(img, *args).splitlines()
    if types and types[0] in formats:
        n_images += 1
        fmt_seen.add(types[0])
        for line in expected:
            if line in got:
                n_fields += 1
            else:
                failures.append(f"{name}: missing {line!r}")
        for line in got:
            if line not in expected:
                failures.append(f"{name}: unexpected {line!r}")
    else:
        n_negative += 1
        if any(l.startswith("ID_FS_TYPE=") for l in got):
            failures.append(f"{name} ({types}): pony says {got}")
    done(img, name)

# Partition tables: the test helper's listing ("#1: start size type ...").
n_pt, n_parts = 0, 0
for exp_name in sorted(os.listdir(os.path.join(DATA, "expected-blkid"))):
    if not exp_name.startswith("lowprobe-pt-"):
        continue
    name = exp_name[len("lowprobe-pt-"):]
    lines = open(os.path.join(DATA, "expected-blkid", exp_name)).read().splitlines()
    m = re.match(r"size: \d+, sector size: \d+, PT: (\w+), offset: \d+, id=(\S+)", lines[0])
    img = unpack("images-pt", name + ".img.xz")
    out = probe(img, "-o", "export")
    devs, cur = {}, None
    for l in out.splitlines():
        if l.startswith("DEVNAME="):
            cur = devs.setdefault(l[8:], {})
        elif "=" in l and cur is not None:
            k, v = l.split("=", 1)
            cur[k] = v.replace("\\ ", " ")
    disk = devs.get(img, {})
    done(img, name)
    if not m or m.group(1) not in formats:
        n_negative += 1
        if "PTTYPE" in disk:
            failures.append(f"pt {name}: pony says PTTYPE={disk['PTTYPE']}")
        continue
    n_pt += 1
    fmt_seen.add(m.group(1))
    checks = [(disk.get("PTTYPE"), m.group(1)), (disk.get("PTUUID"), m.group(2))]
    for l in lines[2:]:
        e = re.match(r"#(\d+):\s+(\d+)\s+(\d+)\s+(0x[0-9a-f]+)(.*)", l)
        if not e or "(" in e.group(5):
            continue    # a nested BSD/Solaris label: not a format pony reads
        n_parts += 1
        part = devs.get(f"{img}:p{e.group(1)}", {})
        rest = dict(re.findall(r"(\w+)='([^']*)'", e.group(5)))
        checks += [(part.get("PART_ENTRY_OFFSET"), e.group(2)),
                   (part.get("PART_ENTRY_SIZE"), e.group(3)),
                   (part.get("PART_ENTRY_UUID"), rest.get("uuid")),
                   (part.get("PARTUUID"), rest.get("uuid"))]
        if "type" in rest:
            checks.append((part.get("PART_ENTRY_TYPE"), rest["type"]))
        else:
            checks.append((part.get("PART_ENTRY_TYPE"), e.group(4)))
        if "name" in rest:
            checks += [(part.get("PART_ENTRY_NAME"), rest["name"]), (part.get("PARTLABEL"), rest["name"])]
    for got, want in checks:
        if got == want:
            n_fields += 1
        else:
            failures.append(f"pt {name}: got {got!r}, expected {want!r}")

print(f"conformance: {len(fmt_seen)} formats, {n_images} filesystem images, "
      f"{n_pt} partition tables ({n_parts} partitions), {n_fields} fields matched, "
      f"{n_negative} images of other formats not misdetected, {len(failures)} failures")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
