#!/usr/bin/env python3
# json_vs_text.py KIND TEXT JSON - a command's --json says what its text
# says (tests/cli/cli_tables.sh). JSON must parse (python's json module)
# as one object whose keys are the command's records and tables in the
# order people see them, blank-line separated blocks of TEXT. A record
# block (FIELD VALUE) must have a line for each non-null JSON field, its
# text the value; a table block a line for each JSON row (children, a
# tree's, depth first), its words those the row's cells print for people.
# KIND (vol-status, acall-routes, fs-layout, fs-resolve, fs-badblocks)
# says which JSON keys the blocks are and how a row prints.
import json
import sys

TREE_CHARS = "├└│─|`- "   # UTF-8 or ASCII tree lines


def fail(msg):
    sys.exit("json_vs_text: %s" % msg)


def text_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def check_record(name, lines, rows):
    if len(rows) != 1:
        fail("%s: %d rows, a record has 1" % (name, len(rows)))
    seen = {}
    for line in lines[1:]:
        field, _, value = line.partition(" ")
        seen.setdefault(field, []).append(value.strip())
    want = {}
    for k, v in rows[0].items():
        if v is None:
            continue
        want[k.upper()] = [text_value(x) for x in v] if isinstance(v, list) else [text_value(v)]
    if seen != want:
        fail("%s: text %r, JSON %r" % (name, seen, want))


def flatten(rows):
    for r in rows:
        yield r
        yield from flatten(r.get("children", []))


def words(*cells):
    """The words cells print: None prints nothing."""
    out = []
    for c in cells:
        if c is not None:
            out += text_value(c).split()
    return out


def vol_member(r):
    return words(r["member"], r["state"], r["device"] if r["device"] is not None else "-",
                 r["badblocks"], r["note"])


def layout_line(r):
    if r.get("role") is None:       # an extent
        where = "volume %d" % r["volume_offset"] if r["volume_offset"] is not None else "-"
        return words(r["file_offset"], r["length"], r["state"], where)
    uuid = " uuid " + r["uuid"] if r["uuid"] else ""
    return words(r["file_offset"], r["length"], r["role"],
                 "member %d %s%s at %d" % (r["member"], r["device"] or "?", uuid, r["member_offset"]))


def badblock(r):
    return words(r["source"], r["repaired"], r["length"], r["volume_offset"], r["member"],
                 r["device"], r["member_sector"], r["role"], r["description"])


# KIND: [(JSON key, None for a record or how a table row prints)]
KINDS = {
    "vol-status": [("volume", None), ("regions", lambda r: words(r["region"], r["full_stripe"])),
                   ("members", vol_member)],
    "acall-routes": [("ring", None), ("routes", lambda r: words(r["op"], r["path"]))],
    "fs-layout": [("file", None), ("volume", None),
                  ("members", lambda r: words(r["member"], r["device"], r["uuid"], r["state"])),
                  ("extents", layout_line)],
    "fs-resolve": [("address", None)],
    "fs-badblocks": [("badblocks", badblock)],
}


def main():
    kind, text_path, json_path = sys.argv[1:4]
    with open(json_path) as f:
        d = json.load(f)
    with open(text_path) as f:
        blocks = [b.split("\n") for b in f.read().strip("\n").split("\n\n")]
    layout = KINDS[kind]
    if kind == "vol-status":            # people see the spares in the members table
        extra = {"members": [words("spare%d" % s["spare"], "idle",
                                   s["device"] if s["device"] is not None else "-",
                                   None if s["device"] is not None else "missing")
                             for s in d["spares"]]}
    else:
        extra = {}
    keys = [k for k in d if k != "spares" or kind != "vol-status"]
    if keys != [k for k, _ in layout][:len(keys)] or len(keys) != len(blocks):
        fail("JSON keys %s, %d text blocks; %s expected" % (keys, len(blocks), layout))
    for (key, row_words), block in zip(layout, blocks):
        rows = list(flatten(d[key]))
        if row_words is None:
            check_record(key, block, rows)
            continue
        want = [row_words(r) for r in rows] + extra.get(key, [])
        got = [line.lstrip(TREE_CHARS).split() for line in block[1:]]
        if got != want:
            fail("%s: text rows %r, JSON rows %r" % (key, got, want))
    print("%s: %d blocks agree" % (kind, len(blocks)))


main()
