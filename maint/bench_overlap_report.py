#!/usr/bin/env python3
#
# Copyright (C) by the mpich-tnbc authors
#     See COPYRIGHT in top-level directory
#
"""The tables of maint/bench-overlap (overlap.md) from one raw results file, and the
sub-message traces it holds split into one file per trace for the figure.

    bench_overlap_report.py RAW MD --results REL   write the tables to MD (REL: RAW's path
                                                  relative to the repository, as printed)
    bench_overlap_report.py RAW --split-traces DIR  write DIR/<name>.txt for every trace

Everything comes from RAW (its header holds the parameters), so old results can be
reported again. Standard library only.
"""

import argparse
import gzip
import os
import re
import sys
from collections import defaultdict

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
import netcluster_scale  # noqa: E402  (beside this file)

NAMES = {
    "stock": "stock (Debian)",
    "off": "T-NBC off",
    "tnbc": "T-NBC",
    "nbc": "nbc rewrite",
    "nbc_async": "nbc + async",
    "nbc_tnbc": "nbc + T-NBC",
    "tnbc_poll": "T-NBC polling helper",
}

# the columns of the per-scenario table, in order
LINE_KEYS = ("Tcomm_ms Tinit_ms T_CURC_ms T_CRC_ms R_CRC_x Ttotal_ms overlap_ms overlap_pct "
             "pred_ms pred_pct hidden_pct stall_ms early errors").split()

# Ethernet + IP + TCP (with timestamps) per full segment, over its payload
FRAME_RATIO = 1514 / 1448


def kv(line, key):
    """The value of key=value in a line of space-separated pairs, or ''."""
    m = re.search(r"(?:^| )" + re.escape(key) + r"=([^ ]*)", line)
    return m.group(1) if m else ""


def number(text):
    """A leading decimal number, as awk reads one ('' and words are 0)."""
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(m.group(0)) if m else 0.0


def fmt_num(x):
    """A number printed as awk prints one."""
    return str(int(x)) if x == int(x) else "%.6g" % x


def rate_bps(rate):
    """A tc rate (k/m/g = 10^3/10^6/10^9, ...bps = bytes) in bit/s."""
    rate = rate.lower()
    unit = re.sub(r"^[0-9.]+", "", rate)
    mult = 1e9 if unit.startswith("g") else 1e6 if unit.startswith("m") else \
        1e3 if unit.startswith("k") else 1
    if unit.endswith("bps"):
        mult *= 8
    return number(rate) * mult


class Raw:
    """What one raw results file says."""

    def __init__(self, path):
        self.header = {}
        self.params = {}
        self.lib, self.libpath, self.pvars = {}, {}, {}
        self.attempts, self.exit, self.tcomm = {}, {}, {}
        self.payload, self.busiest, self.tx, self.rx, self.drops, self.secs = ({} for _ in
                                                                                range(6))
        self.val = defaultdict(dict)    # (coll, cfg, scen) -> {key: value}
        coll = cfg = None
        in_trace = False
        with open_raw(path) as f:
            lines = f.read().splitlines()
        if lines and lines[0].startswith("# mpich-tnbc overlap benchmark, "):
            self.header["stamp"] = lines[0][len("# mpich-tnbc overlap benchmark, "):]
        for line in lines:
            for key in ("where", "git commit", "elapsed", "params"):
                if line.startswith(key + ": ") and key not in self.header:
                    self.header[key] = line[len(key) + 2:]
            if line.startswith("=== run "):
                coll, cfg = kv(line, "coll"), kv(line, "config")
                self.attempts[coll, cfg] = kv(line, "attempt")
                self.exit[coll, cfg] = kv(line, "exit")
                in_trace = False
            elif line.startswith("=== trace "):
                in_trace = True
            elif in_trace:
                continue
            elif line.startswith("# tnbc_overlap lib="):
                self.lib[cfg] = re.sub(r'".*', "", re.sub(r'^.*lib="', "", line))
                self.libpath[cfg] = kv(line, "libpath")
                self.pvars[cfg] = kv(line, "pvars")
            elif line.startswith("tcomm "):
                self.tcomm[coll, cfg] = kv(line, "Tcomm_ms")
            elif line.startswith("scenario="):
                values = self.val[coll, cfg, kv(line, "scenario")]
                for field in line.split():
                    parts = field.split("=")
                    values[parts[0]] = parts[1] if len(parts) > 1 else ""
            elif line.startswith("wire "):
                self.payload[coll, cfg] = kv(line, "offnode_payload_total")
                self.busiest[coll, cfg] = kv(line, "busiest_link_payload_per_call")
            elif line.startswith("  total "):
                fields = line.split()
                self.tx[coll, cfg], self.rx[coll, cfg], self.drops[coll, cfg] = \
                    (fields + ["", "", "", ""])[1:4]
            elif line.startswith("seconds="):
                self.secs[coll, cfg] = kv(line, "seconds")
        for word in self.header.get("params", "").split():
            key, _, value = word.partition("=")
            self.params[key] = value
        self.scale = netcluster_scale.parse("\n".join(lines))    # the first run's; None before

    def v(self, c, g, s, key):
        values = self.val.get((c, g, s))
        return values.get(key, "") if values is not None else "-"


def config_name(cfg):
    if cfg in NAMES:
        return NAMES[cfg]
    base, after = cfg.split("@", 1)[0], re.sub(r"^[^@]*@", "", cfg)
    return NAMES.get(base, base) + " " + after


def tables(raw, results, cores):
    out = []
    p = raw.params
    where = raw.header.get("where", "")
    cluster = where.startswith("emulated cluster")
    colls = p.get("colls", "").replace(",", " ").split()
    configs = p.get("configs", "").replace(",", " ").split()
    scens = list(p.get("scen", ""))
    commit = raw.header.get("git commit", "").split(" ")[0]
    elapsed = re.match(r"([0-9]*)s", raw.header.get("elapsed", ""))
    # On a scaled testbed the links run at the modeled rate / D and every time in the tables
    # is measured: the wire floor must be too.
    link_bps = rate_bps(raw.scale["shaped"] if raw.scale else p.get("rate", ""))
    name = {g: config_name(g) for g in configs}

    def row(cells):
        out.append("| " + " | ".join(cells) + " |")

    out.append("# T-NBC overlap benchmark\n")
    if not cluster:
        out.append("**" + where + "**: these numbers are not network figures; run")
        out.append("`maint/bench-overlap` as root for the emulated cluster.\n")
    out.append("Generated by `maint/bench-overlap` at %s on %s cores; %s." %
               (raw.header.get("stamp", ""), cores, where))
    out.append("Raw data: `%s` (commit %s). %d bytes per pair (bcast: total from rank 0)," %
               (results, commit[:12], int(number(p.get("bytes", "")))))
    out.append("%d iterations (+1 warm-up) per scenario. Whole invocation: %d s.\n" %
               (int(number(p.get("iters", ""))), int(number(elapsed.group(1) if elapsed else ""))))
    out.append("Libraries:")
    for g in configs:
        if g in raw.lib:
            out.append("- %s: %s, `%s`, T-NBC pvars: %s" % (name[g], raw.lib[g], raw.libpath[g],
                                                            raw.pvars[g]))
    out.append("""
Measured overlap % = 100 (Tcomm + Tcomp - Ttotal) / min(Tcomm, Tcomp), Tcomp = CURC +
CRC measured alone on data already present (OSU style). Predicted (eq. 3) =
min(Tcomm - Tinit, T_CURC + Tcomm Rcomm / R_CRC) over the same denominator, Tinit =
the time inside the call in that configuration. Hidden % = 100 (1 - (stall + Tcall +
Twait) / Tcomm). Tcomm = the blocking collective of that library until its data can
be read (T-NBC: until the last page can be read). Times: median over iterations of
the maximum over ranks. T_CURC / R_CRC: a 1.5 Tcomm / 4 Rcomm; b 0 / 0.5 Rcomm;
c 0 / 4 Rcomm; d 0.5 Tcomm / 0.5 Rcomm; e 0.5 Tcomm / 4 Rcomm.
""")
    out.append("## Measured overlap % (predicted %) per scenario\n")
    for c in colls:
        out.append("### %s\n" % c)
        row(["scen"] + [name[g] for g in configs])
        out.append("|---|" + "---|" * len(configs))
        for s in scens:
            row([s] + ["%s (%s)" % (raw.v(c, g, s, "overlap_pct"), raw.v(c, g, s, "pred_pct"))
                       if (c, g, s) in raw.val else "-" for g in configs])
        row(["Tcomm ms"] + [raw.tcomm.get((c, g), "-") for g in configs])
        for title, key in (("Tinit ms (a..e)", "Tinit_ms"), ("hidden % (a..e)", "hidden_pct"),
                           ("stall ms (a..e)", "stall_ms")):
            row([title] + [" ".join(raw.v(c, g, s, key) for s in scens) for g in configs])
        errors = []
        for g in configs:
            found = [number(raw.v(c, g, s, "errors")) for s in scens if (c, g, s) in raw.val]
            errors.append(fmt_num(sum(found)) if found else "-")
        row(["data errors"] + errors)
        exits = []
        for g in configs:
            if (c, g) in raw.exit:
                retry = " (retry)" if number(raw.attempts[c, g]) > 1 else ""
                exits.append(raw.exit[c, g] + retry)
            else:
                exits.append("-")
        row(["exit"] + exits)
        out.append("")
    out.append("## Every scenario line (ms)\n")
    out.append("| coll | config | scen | Tcomm | Tinit | T_CURC | T_CRC | R_CRC/Rcomm | Ttotal |"
               " overlap | overlap % | pred | pred % | hidden % | stall | early | errors |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in colls:
        for g in configs:
            for s in scens:
                if (c, g, s) in raw.val:
                    row([c, g, s] + [raw.v(c, g, s, k) for k in LINE_KEYS])
    out.append("\n## Bytes on the node links (tc tbf counters) vs prediction\n")
    if not cluster:
        out.append("No links: one node.")
        return "\n".join(out) + "\n"
    out.append("""Predicted payload = what the collectives must move between nodes in the whole run
(every call, warm-ups included; bcast: one copy into every other node, a lower
bound). Frames = payload x 1514/1448 (Ethernet + IP + TCP headers with timestamps per
full segment); the counters also hold TCP ACKs, UCX headers, the harness barriers and
reductions and hydra traffic. Wire floor = the busiest link payload of one call at
the link rate as shaped (measured time, like Tcomm), framed: no Tcomm can be shorter.
""")
    out.append("| coll | config | tx bytes (all nodes) | rx bytes | drops | predicted payload |"
               " predicted frames | tx / frames | wire floor ms | Tcomm ms | run s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in colls:
        for g in configs:
            if (c, g) not in raw.tx:
                continue
            payload = number(raw.payload.get((c, g), ""))
            frames = payload * FRAME_RATIO
            floor = (number(raw.busiest.get((c, g), "")) * FRAME_RATIO * 8 / link_bps * 1e3
                     if link_bps > 0 else 0)
            tx = number(raw.tx[c, g])
            out.append("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.2f | %s | %s |" %
                       (c, g, tx, number(raw.rx[c, g]), number(raw.drops[c, g]), payload,
                        frames, "%.4f" % (tx / frames) if frames > 0 else "-", floor,
                        raw.tcomm.get((c, g), "-"), raw.secs.get((c, g), "")))
    return "\n".join(out) + "\n"


def open_raw(path):
    """A raw results file, gzipped (as kept) or not (just written)."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", errors="replace")
    return open(path, errors="replace")


def split_traces(path, outdir):
    """Each '=== trace NAME' section of the raw file into OUTDIR/NAME.txt."""
    out = None
    with open_raw(path) as f:
        for line in f:
            if line.startswith("=== trace "):
                if out:
                    out.close()
                out = open(os.path.join(outdir, line.split()[2] + ".txt"), "a")
            elif line.startswith("=== "):
                if out:
                    out.close()
                out = None
            elif out:
                out.write(line)
    if out:
        out.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw")
    ap.add_argument("md", nargs="?")
    ap.add_argument("--results", help="RAW's path as printed in the tables")
    ap.add_argument("--split-traces", metavar="DIR")
    args = ap.parse_args()
    if args.split_traces:
        split_traces(args.raw, args.split_traces)
    if args.md:
        raw = Raw(args.raw)
        if "params" not in raw.header:
            sys.exit("bench_overlap_report: %s has no 'params:' line" % args.raw)
        with open(args.md, "w") as f:
            f.write(tables(raw, args.results or args.raw, len(os.sched_getaffinity(0))))


if __name__ == "__main__":
    main()
