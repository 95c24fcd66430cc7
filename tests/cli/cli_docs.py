#!/usr/bin/env python3
"""cli_docs.py - the manual and the bash completion cover every command and
option pony's --help prints, so neither drifts from the program.

Walks the command tree from `pony --help` ("Commands:" lists, as
src/cli/common.c prints them), and for every command:
  - its man page (man/, the table PAGES below) renders without a warning
    from groff and has an EXIT STATUS section (a library's: RETURN VALUE);
  - a group's subcommands each have their own section (.SS "pony vol create"),
    and the top-level commands are named in pony(8);
  - every long option its --help prints appears in that command's section
    (or in the page's COMMON OPTIONS section);
  - the completion (completions/pony, run in bash as a shell would) offers
    each subcommand and each long option.
A failure names the command, the option and the file it is missing from.
"""
import os
import re
import subprocess
import sys

PONY = os.environ["PONY"]
SRC = os.environ["PONY_SRCDIR"]
OVERLAYFS = os.path.join(os.path.dirname(PONY), "pony-overlayfs")

# Which page documents a top-level command (pony-fs(8) holds the ponyfs
# commands too: mkfs, mount, fsck, ...); the rest are in pony(8).
PAGES = {"dev": "pony-dev.8", "vol": "pony-vol.8", "union": "pony-union.8",
         "crypt": "pony-crypt.8", "acall": "pony-acall.8", "fs": "pony-fs.8",
         "mkfs": "pony-fs.8", "mount": "pony-fs.8", "fsck": "pony-fs.8",
         "barrier": "pony-fs.8", "sync": "pony-fs.8", "stat": "pony-fs.8",
         "shutdown": "pony-fs.8"}
# Pages with no command of their own; checked for rendering and exit status.
OTHER_PAGES = ["ponyfs.5", "libpony-aio.3", "libpony-blkid.3", "libpony-layout.3"]

problems = []


def problem(msg):
    problems.append(msg)


def help_of(prog, words):
    r = subprocess.run([prog, *words, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        problem(f"{' '.join(['pony', *words])} --help exited {r.returncode}")
    return r.stdout


def subcommands(text):
    m = re.search(r"^Commands:\n((?:  \S.*\n)+)", text, re.M)
    return [ln.split()[0] for ln in m.group(1).splitlines()] if m else []


def long_options(text):
    return sorted(set(re.findall(r"(?<![\w-])--[a-zA-Z0-9][a-zA-Z0-9-]*", text)))


def plain(roff):
    """Roff source as text to search: fonts and escapes out, \\- as -."""
    roff = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", roff)
    roff = roff.replace("\\-", "-").replace("\\&", "").replace("\\ ", " ")
    return roff


def read_page(name):
    path = os.path.join(SRC, "man", name)
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        problem(f"man/{name}: {e.strerror}")
        return ""


def sections(roff):
    """{heading: text} of each .SS section (until the next .SS or .SH), each
    followed by the page's COMMON OPTIONS section (options every command of
    the page takes, such as pony dev's --db), which is also under ""."""
    out, cur = {"": ""}, None
    for ln in roff.splitlines():
        if ln.startswith((".SS", ".SH")):
            head = plain(ln[3:]).strip().strip('"')
            cur = head if ln.startswith(".SS") else "" if head == "COMMON OPTIONS" else None
            if cur:
                out[cur] = ""
        elif cur is not None:
            out[cur] += plain(ln) + "\n"
    return {k: v + out[""] for k, v in out.items()}


def has_option(text, opt):
    return re.search(re.escape(opt) + r"(?![\w-])", text) is not None


def check_render(name, roff):
    """No groff warning at 72 columns, as man(1) warns at 80 (a table wider than the line is one)."""
    r = subprocess.run(["groff", "-man", "-ww", "-z", "-t", "-rLL=70n"], input=roff, capture_output=True,
                       text=True)
    if r.returncode != 0 or r.stderr.strip():
        problem(f"man/{name}: groff warns: {r.stderr.strip()}")
    # Commands say what their exit codes mean; libraries what calls return.
    want = {"8": "EXIT STATUS", "3": "RETURN VALUE"}.get(name.rsplit(".", 1)[-1])
    if want and not re.search(r'^\.SH "?' + want, roff, re.M):
        problem(f"man/{name}: no {want} section")


def completion(prog, words):
    """The completion's candidates for `prog WORDS...` (last word: being typed)."""
    script = ('. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); '
              '_pony; printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "-c", script, "bash", os.path.join(SRC, "completions", "pony"),
                        prog, *words], capture_output=True, text=True)
    return set(r.stdout.split())


def check_command(prog, words, page, section_text):
    """One command: its options in section_text, its subcommands sectioned."""
    name = " ".join(["pony", *words]) if prog == PONY else os.path.basename(prog)
    text = help_of(prog, words)
    subs = subcommands(text) if prog == PONY else []
    offered = completion(prog, [*words, "--"])
    for opt in long_options(text):
        if opt != "--help" and not has_option(section_text, opt):
            problem(f"{name}: option {opt} (in its --help) is missing from man/{page}, "
                    f"section '{name}'")
        if opt not in offered:
            problem(f"{name}: option {opt} is not among the completion's candidates "
                    f"for '{name} --'")
    offered = completion(prog, [*words, ""]) if subs else set()
    for sub in subs:
        if sub not in offered:
            problem(f"{name}: subcommand {sub} is not among the completion's candidates "
                    f"for '{name} '")
    return subs


def check_group(words, page):
    roff = read_page(page)
    secs = sections(roff)
    name = " ".join(["pony", *words])
    # A group of its own page (pony vol) is documented by the whole page.
    subs = check_command(PONY, words, page,
                         secs.get(name, plain(roff) if len(words) == 1 else ""))
    for sub in subs:
        sub_name = f"{name} {sub}"
        if sub_name not in secs:
            problem(f"{sub_name}: no section '.SS \"{sub_name}\"' in man/{page}")
        check_group([*words, sub], page)


def main():
    top = help_of(PONY, [])
    pony8 = read_page("pony.8")
    check_render("pony.8", pony8)
    for page in sorted(set(PAGES.values())) + ["pony-overlayfs.8"] + OTHER_PAGES:
        check_render(page, read_page(page))
    with open(os.path.join(SRC, "man", "meson.build")) as f:
        installed = f.read()
    for page in sorted(os.listdir(os.path.join(SRC, "man"))):
        if page != "meson.build" and f"'{page}'" not in installed:
            problem(f"man/{page}: not installed (not in man/meson.build's install_man)")
    top_text = plain(pony8)
    offered = completion(PONY, [""])
    for cmd in subcommands(top):
        if not re.search(r"\bpony " + re.escape(cmd) + r"\b", top_text):
            problem(f"pony {cmd}: not named in man/pony.8 (as 'pony {cmd}')")
        if cmd not in offered:
            problem(f"pony {cmd}: not among the completion's candidates for 'pony '")
        page = PAGES.get(cmd, "pony.8")
        if page == "pony.8":
            check_command(PONY, [cmd], page, sections(pony8).get(f"pony {cmd}", ""))
        else:
            check_group([cmd], page)
    check_command(OVERLAYFS, [], "pony-overlayfs.8", plain(read_page("pony-overlayfs.8")))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"FAIL: {len(problems)} problems", file=sys.stderr)
        sys.exit(1)
    print("PASS")


main()
