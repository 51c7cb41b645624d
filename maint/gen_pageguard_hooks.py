#!/usr/bin/python3
##
## mpich-tnbc: write the page guards' list of C library functions and their hooks from one table.
##
## Usage: maint/gen_pageguard_hooks.py TABLE OUTDIR
##
## TABLE is src/util/mpir_pageguard/pageguard_libc.def (its head explains the notes). Writes
##   OUTDIR/pageguard_libc_funcs.h   MPII_PAGEGUARD_LIBC_FUNCS(X): X(ID, name, hook, optional),
##                                   sorted by name (pageguard_patch.c looks names up by bisection)
##   OUTDIR/pageguard_libc_hooks.c   a hook for every function not marked custom, a compile-time
##                                   check of its type against the C library's declaration, and
##                                   MPII_Pageguard_hooks[], the hooks in list order
## A file whose text would not change is left alone, so that make rebuilds nothing.
##

import os
import re
import sys

TOUCH_CLASSES = {
    "in": "MPII_Pageguard_settle((const void *) {arg}, {len}, 0);",
    "out": "MPII_Pageguard_settle((const void *) {arg}, {len}, 1);",
    "path": "MPII_Pageguard_settle_path({arg});",
    "strv": "MPII_Pageguard_settle_strv({arg});",
    "iov_in": "MPII_Pageguard_settle_iov({arg}, {len}, 0);",
    "iov_out": "MPII_Pageguard_settle_iov({arg}, {len}, 1);",
    "msg_in": "MPII_Pageguard_settle_msg({arg}, 0);",
    "msg_out": "MPII_Pageguard_settle_msg({arg}, 1);",
    "mmsg_in": "MPII_Pageguard_settle_mmsg({arg}, {len}, 0);",
    "mmsg_out": "MPII_Pageguard_settle_mmsg({arg}, {len}, 1);",
    "ioctl": "MPII_Pageguard_settle_ioctl({len}, {arg});",
    "fcntl": "MPII_Pageguard_settle_fcntl({len}, {arg});",
}
NEEDS_LEN = {"in", "out", "iov_in", "iov_out", "mmsg_in", "mmsg_out", "ioctl", "fcntl"}


class TableError(Exception):
    pass


def split_top(text, sep):
    """Split at sep outside parentheses and brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def parse_param(text):
    """'const struct iovec *iov' -> (type for a prototype, name, type for a cast)"""
    if text == "...":
        return ("...", None, "...")
    m = re.match(r"^(.*?)(\w+)\s*((?:\[\w*\])*)$", text)
    if not m or not m.group(1).strip():
        raise TableError("cannot read parameter '%s'" % text)
    base, name, dims = m.group(1).strip(), m.group(2), m.group(3)
    return (text, name, base + (" *" if dims else ""))


def parse_line(line):
    fields = split_top(line, "|")
    head, notes = fields[0], fields[1:]
    entry = {"notes": [], "va": None, "optional": False, "custom": False, "check": True}
    if "(" not in head:
        entry.update(name=head, ret=None, params=[])
    else:
        m = re.match(r"^(.*?)(\w+)\s*\((.*)\)$", head)
        if not m:
            raise TableError("cannot read prototype '%s'" % head)
        entry.update(ret=m.group(1).strip(), name=m.group(2),
                     params=[parse_param(p) for p in split_top(m.group(3), ",")])
    names = {p[1] for p in entry["params"] if p[1]}
    for note in notes:
        if note == "optional":
            entry["optional"] = True
        elif note == "custom":
            entry["custom"] = True
        elif note == "nocheck":
            entry["check"] = False
        elif note.startswith("va "):
            m = re.match(r"^va\s+(.+?)\s*(\w+)(?:\s+if\s+(.+))?$", note)
            if not m:
                raise TableError("cannot read '%s'" % note)
            entry["va"] = (m.group(1).strip(), m.group(2), m.group(3))
            names.add(m.group(2))
        else:
            m = re.match(r"^(\S+)\s+(\w+)(?:\((.*)\))?$", note)
            if not m or m.group(2) not in TOUCH_CLASSES:
                raise TableError("cannot read note '%s' of %s" % (note, entry["name"]))
            arg, cls, length = m.groups()
            if re.match(r"^\w+", arg).group(0) not in names:
                raise TableError("%s: '%s' is not a parameter" % (entry["name"], arg))
            if (cls in NEEDS_LEN) != (length is not None):
                raise TableError("%s: %s %s" % (entry["name"], cls,
                                                "needs a length" if length is None else
                                                "takes no length"))
            entry["notes"].append((arg, cls, length))
    if entry["custom"] and (entry["notes"] or entry["ret"]):
        raise TableError("%s: a custom hook takes no prototype or notes" % entry["name"])
    if not entry["custom"] and entry["ret"] is None:
        raise TableError("%s: no prototype" % entry["name"])
    entry["hook"] = entry["name"].lstrip("_")
    entry["id"] = entry["hook"].upper()
    return entry


def read_table(path):
    includes, entries = [], []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                if line.startswith("include "):
                    includes.append(line.split(None, 1)[1])
                else:
                    entries.append(parse_line(line))
            except TableError as e:
                sys.exit("%s:%d: %s" % (path, n, e))
    seen = set()
    for e in entries:
        if e["name"] in seen or e["id"] in seen:
            sys.exit("%s: %s listed twice" % (path, e["name"]))
        seen.update((e["name"], e["id"]))
    return includes, sorted(entries, key=lambda e: e["name"].encode())


def prototype(e, name):
    return "%s%s%s(%s)" % (e["ret"], "" if e["ret"].endswith("*") else " ", name,
                           ", ".join(p[0] for p in e["params"]))


def hook_body(e):
    out = [prototype(e, "MPII_Pageguard_hook_" + e["hook"]), "{"]
    args = [p[1] for p in e["params"] if p[1]]
    if e["va"]:
        vtype, vname, cond = e["va"]
        last = args[-1]
        out.append("    %s %s = 0;" % (vtype, vname))
        indent = "    "
        if cond:
            out.append("    if (%s) {" % cond)
            indent = "        "
        out += [indent + "va_list ap;", indent + "va_start(ap, %s);" % last,
                indent + "%s = va_arg(ap, %s);" % (vname, vtype), indent + "va_end(ap);"]
        if cond:
            out.append("    }")
        args.append(vname)
    out.append("    MPII_PAGEGUARD_HOOK_ENTRY();")
    out.append("    if (MPIR_Pageguard_any_region()) {")
    for arg, cls, length in e["notes"]:
        out.append("        " + TOUCH_CLASSES[cls].format(arg=arg, len=length))
    out.append("    }")
    ftype = "%s (*)(%s)" % (e["ret"], ", ".join(p[2] for p in e["params"]))
    out.append("    return MPII_LIBC(%s, %s) (%s);" % (e["id"], ftype, ", ".join(args)))
    out.append("}")
    return "\n".join(out)


HEADER = """/* Generated by maint/gen_pageguard_hooks.py from
 * src/util/mpir_pageguard/pageguard_libc.def: edit that table, not this file. */
"""


def write_if_changed(path, text):
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def funcs_header(entries):
    lines = [HEADER, "#ifndef PAGEGUARD_LIBC_FUNCS_H_INCLUDED",
             "#define PAGEGUARD_LIBC_FUNCS_H_INCLUDED", "",
             "/* X(index, the name programs call, the hook's name, 1 when T-NBC can do without "
             "it) */", "#define MPII_PAGEGUARD_LIBC_FUNCS(X) \\"]
    for e in entries:
        lines.append("    X(%s, %s, %s, %d) \\" % (e["id"], e["name"], e["hook"],
                                                  int(e["optional"])))
    lines[-1] = lines[-1].rstrip(" \\")
    lines += ["", "#endif /* PAGEGUARD_LIBC_FUNCS_H_INCLUDED */", ""]
    return "\n".join(lines)


def hooks_source(includes, entries):
    lines = [HEADER, "#ifndef _GNU_SOURCE", "#define _GNU_SOURCE", "#endif",
             '#include "mpir_pageguard.h"', '#include "pageguard_libc.h"', "",
             "#include <stdarg.h>"]
    lines += ["#include %s" % h for h in includes]
    lines.append("")
    generated = [e for e in entries if not e["custom"]]
    for e in generated:
        lines.append(prototype(e, "MPII_Pageguard_hook_" + e["hook"]) + ";")
    lines.append("")
    lines.append("/* each hook has the type of the function it stands in for */")
    for e in generated:
        if e["check"]:
            lines.append("_Static_assert(__builtin_types_compatible_p(__typeof__(&%s), "
                         "__typeof__(&MPII_Pageguard_hook_%s)), \"%s\");"
                         % (e["name"], e["hook"], e["name"]))
    for e in generated:
        lines += ["", hook_body(e)]
    lines += ["", "void *const MPII_Pageguard_hooks[MPII_LIBC_COUNT] = {",
              "#define MPII_PAGEGUARD_LIBC_HOOK(id_, name_, hook_, optional_) \\",
              "    (void *) MPII_Pageguard_hook_##hook_,",
              "    MPII_PAGEGUARD_LIBC_FUNCS(MPII_PAGEGUARD_LIBC_HOOK)",
              "#undef MPII_PAGEGUARD_LIBC_HOOK", "};", ""]
    return "\n".join(lines)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen_pageguard_hooks.py TABLE OUTDIR")
    includes, entries = read_table(sys.argv[1])
    os.makedirs(sys.argv[2], exist_ok=True)
    write_if_changed(os.path.join(sys.argv[2], "pageguard_libc_funcs.h"), funcs_header(entries))
    write_if_changed(os.path.join(sys.argv[2], "pageguard_libc_hooks.c"),
                     hooks_source(includes, entries))


if __name__ == "__main__":
    main()
