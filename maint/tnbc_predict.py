##
## mpich-tnbc: predictions on SimGrid (maint/tnbc-predict). Turns a kernel and a platform into
## replay jobs (maint/tnbc_replay.py, one process each), runs them, and checks them against a
## report of maint/bench-kernels. Pure Python apart from the replays, which need SimGrid.
##
## Platform files (JSON, maint/platforms/, each cost with its source): rate (payload bytes/s per
## NIC direction), latency (s per NIC crossing: a route between nodes crosses two), shm_rate,
## shm_latency, msg_cost (s a message costs its sender), copy_rate and landing_rate (bytes/s:
## packing, the self block; landing a received piece), wake (s: T-NBC's helper sees a
## completion that late), fault_cost (s per stalled block beyond the wait), call_cost (s in a
## T-NBC call besides its edges), answer (s: a paced sender learns of a delivery that late),
## stock_share and stock_share_single (the testbed's CPU shares: a rank progressing its own
## messages gets that share of a link, talking to many peers at once or to one at a time; 1 on
## a core per rank). "scale": D, the factor between the testbed's measured and modeled times.
##
import glob
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
PLATFORMS = os.path.join(HERE, "platforms")
REPLAY = os.path.join(HERE, "tnbc_replay.py")
NODE_REPLAY = os.path.join(HERE, "tnbc_node_replay.py")
PYTHON = "/usr/bin/python3"         # Debian's python3-simgrid is built for it only

KERNELS = ("crc", "crcrot", "ft", "is", "bcast", "bcastrot")
SOURCES = ("tnbc_sched_export.c",)
LIBRARY_SOURCES = ("tnbc_sched.c", "tnbc_sched_reduce.c", "tnbc_priority.c", "tnbc_gain.c",
                   "tnbc_policy.c")
RM_SOURCES = ("rm_plan.c",)     # reorder + merge's planner (src/mpi/coll/rm)


# ---- platforms ----

def load_platform(name_or_path, overrides=()):
    path = name_or_path
    if not os.path.exists(path):
        path = os.path.join(PLATFORMS, name_or_path + ".json")
    with open(path) as f:
        plat = json.load(f)
    for kv in overrides:
        k, _, v = kv.partition("=")
        if k not in plat["costs"]:
            raise ValueError("platform has no cost %r" % k)
        plat["costs"][k] = float(v)
    return plat


def report_platform(args, nodes, ppn, rate):
    """The platform a check replays a testbed report on: --platform, or the testbed's file for
    the report's layout and link rate."""
    return load_platform(args.platform or "testbed-%dx%d-%s" % (nodes, ppn, rate), args.set or ())


# ---- the schedule exporter, built from the library's own sources ----

def exporter(cache=None):
    """The exporter built from this tree's sources (cached by their contents)."""
    top = os.path.dirname(HERE)
    tnbc = os.path.join(top, "src", "mpi", "coll", "tnbc")
    rm = os.path.join(top, "src", "mpi", "coll", "rm")
    srcs = [os.path.join(HERE, s) for s in SOURCES] + \
        [os.path.join(tnbc, s) for s in LIBRARY_SOURCES] + \
        [os.path.join(rm, s) for s in RM_SOURCES]
    digest = hashlib.sha1()
    for path in srcs + [os.path.join(tnbc, h) for h in sorted(os.listdir(tnbc))
                        if h.endswith(".h")] + [os.path.join(rm, "rm_plan.h")]:
        with open(path, "rb") as f:
            digest.update(f.read())
    cache = cache or os.path.join(os.environ.get("XDG_CACHE_HOME",
                                                 os.path.expanduser("~/.cache")), "mpich-tnbc")
    os.makedirs(cache, exist_ok=True)
    exe = os.path.join(cache, "tnbc-sched-export-" + digest.hexdigest()[:16])
    if not os.path.exists(exe):
        tmp = "%s.%d" % (exe, os.getpid())
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-I", tnbc, "-I", rm, "-o", tmp] +
                       srcs + ["-lm"], check=True)
        os.replace(tmp, exe)
    return exe


# ---- kernels as programs ----

def node_of(rank, nodes, ppn, placement):
    return rank // ppn if placement == "block" else rank % nodes


def read_order(kernel, rank, size):
    if kernel in ("crc", "ft", "is"):
        return list(range(size))
    if kernel == "crcrot":
        return [(rank + 1 + s) % size for s in range(size)]
    if kernel == "bcast":
        return [size - 1 - s for s in range(size)]
    if kernel == "bcastrot":
        return [(rank + s) % size for s in range(size)]
    raise ValueError("no kernel %r" % kernel)


def bcast_tree_ranks(root, size, node):
    """T-NBC's tree order (tnbc_bcast.c): the root's node first, then by node, from the root."""
    slots = [((-1 if node[r] == node[root] else node[r]), v, r)
             for v, r in ((v, (root + v) % size) for v in range(size))]
    return [r for _, _, r in sorted(slots)]


def mean_of_four_cdf(x):
    """P(mean of four uniforms on [0, 1) <= x): the Irwin-Hall distribution, n = 4."""
    s = min(max(4.0 * x, 0.0), 4.0)
    binom = (1, 4, 6, 4, 1)
    return sum((-1) ** k * binom[k] * (s - k) ** 4 for k in range(int(s) + 1) if s > k) / 24.0


def is_counts(nbytes, size):
    """Bytes rank s sends rank d in the IS kernel: BYTES / 4 x size keys per rank, drawn as the
    mean of four uniforms (as NPB IS) and bucketed by an even split of the key range."""
    keys = nbytes // 4 * size
    share = [mean_of_four_cdf((d + 1) / size) - mean_of_four_cdf(d / size) for d in range(size)]
    return [[int(round(keys * share[d])) * 4 for d in range(size)] for _ in range(size)]


def kernel_program(kernel, nodes, ppn, placement, nbytes, read_s, after_s=0.0):
    """One iteration: the kernel's collective, read block by block (read_s per block, or per
    byte with per_byte), then after_s of computing. IS adds its bucket-size Alltoall (one int
    per pair) first and reads each block in a time proportional to its bytes (read_s: the
    mean block's)."""
    size = nodes * ppn
    node = [node_of(r, nodes, ppn, placement) for r in range(size)]
    orders = [read_order(kernel, r, size) for r in range(size)]
    blocks = [[(k * nbytes, nbytes) for k in range(size)] for _ in range(size)]
    if kernel.startswith("bcast"):
        # one segment per block, as maint/bench-kernels sets MPIR_CVAR_TNBC_BCAST_SEGMENTS
        coll = {"op": "bcast", "root": 0, "bytes": nbytes * size, "segments": size,
                "tree_ranks": bcast_tree_ranks(0, size, node)}
    elif kernel == "is":
        counts = is_counts(nbytes, size)
        # its counts change every iteration, and with them the call site (tnbc_priority.h:
        # the receive bytes are part of it): the library never knows where its blocks are read
        coll = {"op": "alltoallv", "mpi": "alltoallv", "counts": counts,
                "order_unknown": True}
        blocks = []
        for r in range(size):
            offs = [sum(counts[s][r] for s in range(k)) for k in range(size)]
            blocks.append([(offs[k], counts[k][r]) for k in range(size)])
        read_s = [[read_s * counts[k][r] / nbytes for k in range(size)] for r in range(size)]
    else:
        coll = {"op": "alltoallv", "counts": [[nbytes] * size for _ in range(size)]}
    coll.update(orders=orders, blocks=blocks, read_s=read_s, after_s=after_s)
    program = [coll]
    if kernel == "is":
        program.insert(0, {"op": "alltoallv", "blocking": True,
                           "counts": [[4] * size for _ in range(size)],
                           "orders": [list(range(size))] * size,
                           "blocks": [[(4 * k, 4) for k in range(size)]] * size, "read_s": 0.0})
    return program, node


# ---- configurations: bench-kernels' names ----

def config_job(config):
    """A bench-kernels configuration -> the replay's settings, or None (not modeled)."""
    base, *sets = config.split("+")
    opts = dict(s.split("=", 1) for s in sets if "=" in s)
    if base == "stock" or base.startswith("stock@"):
        return {"config": "stock@" + (base.partition("@")[2] or "default")}
    if base in ("rewrite", "rewrite@noasync"):
        return {"config": base}
    if base in ("rm@reorder", "rm@merge", "rm@reorder_merge"):
        return {"config": base}
    if base.endswith("_early"):
        base = base[:-len("_early")]
    if base not in ("fifo", "prio", "prio_noarb", "prio_trace"):
        return None
    return {"config": "tnbc", "priorities": base != "fifo",
            "arbitration": base in ("prio", "prio_trace"),
            "pace_bytes": int(opts.get("PACE_BYTES", 0))}


REPLAY_TIMEOUT_S = 900


def replay(job):
    try:
        script = NODE_REPLAY if job.get("level") == "node" else REPLAY
        out = subprocess.run([PYTHON, script], input=json.dumps(job), capture_output=True,
                             text=True, timeout=REPLAY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError("replay of %s took over %d s" % (job["config"], REPLAY_TIMEOUT_S))
    if out.returncode != 0:
        raise RuntimeError("replay failed: %s" % out.stderr.strip()[-2000:])
    its = json.loads(out.stdout)["iterations"]
    return its[-1]                  # the replay is deterministic: the last is steady


def modeled(settings, program, level):
    """Whether a replay of that level models the configuration on this program."""
    if settings is None:
        return False
    if settings["config"].startswith("rewrite"):
        return level == "rank" and all(ph["op"] != "bcast" for ph in program)
    if settings["config"].startswith("rm@"):
        return level == "node" and all(ph["op"] != "bcast" for ph in program)
    return level == "rank" or all(ph["op"] != "bcast" for ph in program)


def predict(platform, layout, program, configs, exporter_path, iterations=2, jobs=2,
            level="rank"):
    """{config: result or None} for the configurations of one kernel and layout; level "node"
    replays node pairs instead of ranks (maint/tnbc_node_replay.py)."""
    todo = {}
    for c in configs:
        settings = config_job(c)
        if not modeled(settings, program, level):
            continue
        todo[c] = dict(settings, platform=platform["costs"], layout=layout, program=program,
                       exporter=exporter_path, iterations=iterations, level=level)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = dict(zip(todo, pool.map(replay, todo.values())))
    return {c: done.get(c) for c in configs}


# ---- reports of maint/bench-kernels ----

def parse_report(text):
    """(the command's options, D, {(kernel, placement): {config: row}}) of a kernels report."""
    m = re.search(r"Generated by `maint/bench-kernels ([^`]*)`", text)
    if not m:
        raise ValueError("not a bench-kernels report")
    argv = m.group(1).split()
    opts = {}
    for i, a in enumerate(argv):
        if a.startswith("-") and i + 1 < len(argv):
            opts[a] = argv[i + 1]
    d = re.search(r"D = ([0-9.]+)", text)
    sections, cur, header = {}, None, None
    for line in text.splitlines():
        s = re.match(r"## (\w+), (\w+) placement", line)
        if s:
            cur = sections.setdefault((s.group(1), s.group(2)), {})
            header = None
            continue
        if cur is None or not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        row = dict(zip(header, cells))
        try:
            cur[row["config"]] = {"total": float(row["iteration ms"]),
                                  "wait": float(row["wait ms"])}
        except (KeyError, ValueError):
            pass
    return opts, float(d.group(1)) if d else 1.0, sections


def stock_best(rows):
    stock = {c: r["total"] for c, r in rows.items()
             if r and (c == "stock" or c.startswith("stock@"))}
    if not stock:
        return None, None
    c = min(stock, key=stock.get)
    return c, stock[c]


def check_rows(kernel, placement, measured, predicted):
    """Rows: config, measured ms and ratio, predicted ms and ratio, error of the ratio."""
    _, mbest = stock_best(measured)
    _, pbest = stock_best({c: predicted[c] for c in measured if predicted.get(c)})
    rows = []
    for c, m in measured.items():
        p = predicted.get(c)
        mr = m["total"] / mbest if mbest else None
        pr = p["total"] / pbest if p and pbest else None
        err = pr / mr - 1 if mr and pr else None
        rows.append((c, m["total"], mr, p["total"] if p else None, pr, err))
    return rows


def median(xs):
    return statistics.median(xs) if xs else None


def config_family(config):
    if config.startswith("stock"):
        return "stock"
    return "rewrite" if config.startswith("rewrite") else "T-NBC"


def summary(errors, families=("T-NBC", "stock", "rewrite")):
    """errors: [(family, |error of the ratio|)] -> one line per family and all."""
    lines = []
    for fam in families + ("all",):
        e = [x for f, x in errors if fam in (f, "all")]
        if e:
            lines.append("%s: %d ratios, error median %.0f%%, largest %.0f%%, within 15%%: %d"
                         % (fam, len(e), 100 * median(e), 100 * max(e),
                            sum(1 for x in e if x <= 0.15)))
    return lines


def check_report(path, args, out):
    """Predict every configuration of one bench-kernels report; returns the errors."""
    from tnbc_bench import md_row, md_rule
    opts, d, sections = parse_report(open(path).read())
    nodes, ppn = int(opts.get("-n", 4)), int(opts.get("-p", 2))
    nbytes, ns_per_kib = int(opts.get("-b", 262144)), float(opts.get("-w", 0))
    platform = report_platform(args, nodes, ppn, opts.get("-r"))
    exe = exporter()
    errors = []
    out.write("## %s\n\nPlatform `%s`; %d x %d, %d bytes per pair, D = %g.\n\n"
              % (os.path.relpath(path, os.path.dirname(HERE)), platform["name"], nodes, ppn,
                 nbytes, d))
    out.write(md_row(["kernel", "placement", "config", "measured ms", "measured vs stock best",
                      "predicted ms", "predicted vs stock best", "error of the ratio",
                      "error of the time"]) + "\n")
    out.write(md_rule(9) + "\n")
    for (kernel, placement), measured in sections.items():
        if args.kernels and kernel not in args.kernels:
            continue
        read_s, after_s = kernel_compute(kernel, measured, nbytes, ns_per_kib, d, nodes * ppn,
                                         platform["costs"])
        program, _ = kernel_program(kernel, nodes, ppn, placement, nbytes, read_s, after_s)
        layout = {"nodes": nodes, "ppn": ppn, "placement": placement}
        predicted = predict(platform, layout, program, list(measured), exe, jobs=args.jobs)
        for c, mt, mr, pt, pr, err in check_rows(kernel, placement, measured, predicted):
            if err is not None:
                errors.append((config_family(c), abs(err)))
            out.write(md_row([kernel, placement, c, "%.1f" % mt, fmt_x(mr), fmt_ms(pt),
                              fmt_x(pr), "%+.0f%%" % (100 * err) if err is not None else
                              "no stock row" if pt else "not modeled",
                              "%+.0f%%" % (100 * (pt * 1e3 / mt - 1))
                              if pt else "-"]) + "\n")
        out.flush()
    out.write("\n" + "".join("- %s\n" % line for line in summary(errors)) + "\n")
    return errors


CHECK_HEADER = """# Predicted on SimGrid against measured on the testbed

Generated by `maint/tnbc-predict %s` (SimGrid 3.32, flow-level CM02 model). Every configuration
of each maint/bench-kernels report replayed with the report's layout, sizes and read rate on the
testbed's platform file (maint/platforms/: costs from the calibration runs, none fitted to these
kernels). T-NBC's schedules come from the library's own builders. Times are modeled ms;
*error of the ratio* = predicted ratio to stock's best / measured ratio - 1 (the goal: within
15%%), *error of the time* = predicted / measured iteration - 1; "not modeled": the replay has no
model of that configuration yet; "no stock row": the report has no stock configuration to take
a ratio to. Predicted figures are labelled predicted.

"""


def main_check(args, out=sys.stdout):
    out.write(CHECK_HEADER % " ".join("--check " + os.path.relpath(p, os.path.dirname(HERE))
                                      for p in args.check))
    errors = []
    for path in args.check:
        errors += check_report(path, args, out)
    if len(args.check) > 1:
        out.write("## Every report\n\n" + "".join("- %s\n" % line for line in summary(errors)))
    return errors


def kernel_compute(kernel, measured, nbytes, ns_per_kib, d, size, costs):
    """Per-block read time and the computing after the reads, modeled seconds. crc, crcrot and
    the Bcasts read at the benchmark's rate (NS_PER_KIB of measured time, / D); ft and is
    compute what stock's best spends outside its collectives (iteration - wait, measured):
    ft reads by its transpose copy, then the rest; is counts while it reads."""
    if kernel in ("crc", "crcrot", "bcast", "bcastrot"):
        return ns_per_kib * 1e-9 * nbytes / 1024 / d, 0.0
    row = min((r for c, r in measured.items() if c.startswith("stock")),
              key=lambda r: r["total"])
    compute = max(0.0, (row["total"] - row["wait"]) * 1e-3)
    if kernel == "ft":
        copy = nbytes / costs["copy_rate"]
        return copy, max(0.0, compute - size * copy)
    return compute / size, 0.0


def fmt_x(v):
    return "%.2fx" % v if v else "-"


def fmt_ms(v):
    return "%.1f" % (v * 1e3) if v else "-"


# ---- the T-NBC paper's configurations (../shared/docs/research-brief.md, section 1) ----

MIB = 1 << 20
PAPER_CASES = (
    # label, nodes, ppn, bytes per pair, kernel, the paper's figures
    ("micro-benchmark, Alltoall 1 MiB per pair, 64 processes", 8, 8, MIB, "micro",
     {"Tcomm ms": 268.0, "Tinit ms": 60.0}),
    ("NPB FT class C, 64 processes", 8, 8, MIB // 2, "ft",
     {"hidden": 0.18, "gain": 0.05}),
    ("NPB IS class D, 128 processes", 16, 8, MIB // 2, "is",
     {"hidden": 0.45, "gain": 0.36}),
)
PAPER_STOCK = ("stock@scattered", "stock@pairwise")
PAPER_TNBC = ("fifo", "prio_noarb", "prio")


def collective_share(hidden, gain):
    """The collective's share of the original run time, from the paper's own two figures:
    T - T / (1 + gain) = hidden x A."""
    return gain / ((1.0 + gain) * hidden)


def paper_case(case, platform, exe, jobs=2):
    """Predict one case: stock's best and T-NBC's configurations, and the paper's figures
    derived from them. FT and IS compute as much per iteration as the paper's figures imply
    (the collective's share of the run), FT transposing each block as it reads it."""
    label, nodes, ppn, nbytes, kernel, paper = case
    layout = {"nodes": nodes, "ppn": ppn, "placement": "block"}
    copy = nbytes / platform["costs"]["copy_rate"]
    kname = "crc" if kernel == "micro" else kernel
    program, _ = kernel_program(kname, nodes, ppn, "block", nbytes, copy)
    # one iteration: the replay is deterministic and starts from the steady state
    stock = predict(platform, layout, program, list(PAPER_STOCK), exe, iterations=1, jobs=jobs)
    best_c, _ = stock_best(stock)
    a_stock = stock[best_c]["wait"]
    if kernel != "micro":
        share = collective_share(paper["hidden"], paper["gain"])
        compute = a_stock * (1 - share) / share
        size = nodes * ppn
        after = max(0.0, compute - size * copy) if kernel == "ft" else 0.0
        read = copy if kernel == "ft" else compute / size
        program, _ = kernel_program(kname, nodes, ppn, "block", nbytes, read, after)
        stock = predict(platform, layout, program, [best_c], exe, iterations=1, jobs=jobs)
    tnbc = predict(platform, layout, program, list(PAPER_TNBC), exe, iterations=1, jobs=jobs)
    base = stock[best_c]
    rows = []
    for c, r in tnbc.items():
        rows.append({"config": c, "Tcomm ms": base["wait"] * 1e3,
                     "Tinit ms": (r["wait"] - r["stall"]) * 1e3,
                     "hidden": 1 - r["wait_mean"] / base["wait_mean"],
                     "gain": base["total"] / r["total"] - 1})
    return best_c, base, rows


def main_paper(args, out=sys.stdout):
    from tnbc_bench import md_row, md_rule
    platform = load_platform(args.platform or "paper-ib-40g", args.set or ())
    exe = exporter()
    out.write("Predicted on SimGrid 3.32, platform `%s` (%s), beside the T-NBC paper's "
              "figures (MVAPICH-based T-NBC, measured).\n\n" % (platform["name"],
                                                                  platform["about"]))
    out.write(md_row(["case", "stock's best (predicted)", "T-NBC", "Tcomm ms", "Tinit ms",
                      "hidden", "end to end"]) + "\n" + md_rule(7) + "\n")
    for case in PAPER_CASES:
        if args.kernels and case[4] not in args.kernels:
            continue
        best_c, base, rows = paper_case(case, platform, exe, args.jobs)
        paper = case[5]
        out.write(md_row([case[0], "-", "**paper (measured)**",
                          fmt_num(paper.get("Tcomm ms")), fmt_num(paper.get("Tinit ms")),
                          fmt_pct(paper.get("hidden")), fmt_pct(paper.get("gain"), "+")]) + "\n")
        for r in rows:
            out.write(md_row(["", best_c, r["config"] + " (predicted)",
                              fmt_num(r["Tcomm ms"]), fmt_num(r["Tinit ms"]),
                              fmt_pct(r["hidden"]), fmt_pct(r["gain"], "+")]) + "\n")
        out.flush()


def fmt_num(v):
    return "%.1f" % v if v is not None else "-"


def fmt_pct(v, sign=""):
    return ("%" + sign + ".0f%%") % (100 * v) if v is not None else "-"


# ---- the node-level replay against the rank-level one, and predictions at scale ----

LEVEL_CASES = (
    # platform, nodes, ppn, bytes per pair, read ns per KiB
    ("eth-10g", 8, 8, 262144, 6000),
    ("eth-10g", 8, 8, 16384, 6000),
    ("ib-100g", 8, 8, 262144, 600),
)
LEVEL_KERNELS = ("crc", "crcrot", "ft")
SCALE_CONFIGS = ("stock", "stock@scattered", "stock@pairwise", "stock@brucks", "fifo",
                 "prio_noarb", "prio", "prio_noarb+PACE_BYTES=524288",
                 "prio+PACE_BYTES=524288")
LEVEL_CONFIGS = SCALE_CONFIGS[1:3] + SCALE_CONFIGS[4:]


def kernel_at(kernel, nodes, ppn, nbytes, ns_per_kib, costs, placement="block"):
    """A kernel's program on any platform: crc and crcrot read at ns_per_kib, ft transposes
    each block as it reads it (a copy) and computes nothing else."""
    read_s = nbytes / costs["copy_rate"] if kernel == "ft" else ns_per_kib * 1e-9 * nbytes / 1024
    program, _ = kernel_program(kernel, nodes, ppn, placement, nbytes, read_s)
    return program, {"nodes": nodes, "ppn": ppn, "placement": placement}


def family(config):
    if config.startswith("stock"):
        return "stock"
    if "PACE" in config:
        return "paced, turns" if config.startswith("prio+") else "paced"
    return "T-NBC, turns" if config == "prio" else "T-NBC"


def main_levels(args, out=sys.stdout):
    """Every LEVEL_CASES kernel and configuration replayed at both levels: the node level's
    ratio to stock's best against the rank level's."""
    from tnbc_bench import md_row, md_rule
    exe = exporter()
    out.write("Generated by `maint/tnbc-predict --levels`. Both **predicted** (SimGrid 3.32): "
              "the node-level replay (maint/tnbc_node_replay.py) against the rank-level one "
              "(maint/tnbc_replay.py, itself checked against the testbed: predict-check.md); "
              "block placement, ms per iteration, ratio to stock's best of the same level.\n\n")
    out.write(md_row(["platform", "layout", "bytes", "kernel", "config", "rank level",
                      "node level", "error of the ratio"]) + "\n" + md_rule(8) + "\n")
    errors = []
    for plat_name, nodes, ppn, nbytes, w in LEVEL_CASES:
        plat = load_platform(plat_name, args.set or ())
        for kernel in args.kernels or LEVEL_KERNELS:
            program, layout = kernel_at(kernel, nodes, ppn, nbytes, w, plat["costs"])
            res = {lvl: predict(plat, layout, program, list(LEVEL_CONFIGS), exe, iterations=1,
                                jobs=args.jobs, level=lvl) for lvl in ("rank", "node")}
            best = {lvl: stock_best(r)[1] for lvl, r in res.items()}
            for c in LEVEL_CONFIGS:
                rr, nr = res["rank"][c]["total"] / best["rank"], \
                    res["node"][c]["total"] / best["node"]
                errors.append((family(c), abs(nr / rr - 1)))
                out.write(md_row([plat_name, "%dx%d" % (nodes, ppn), nbytes, kernel, c,
                                  "%.1f (%.2fx)" % (res["rank"][c]["total"] * 1e3, rr),
                                  "%.1f (%.2fx)" % (res["node"][c]["total"] * 1e3, nr),
                                  "%+.0f%%" % (100 * (nr / rr - 1))]) + "\n")
            out.flush()
    out.write("\n")
    for fam in ("stock", "T-NBC", "T-NBC, turns", "paced", "paced, turns"):
        e = [x for f, x in errors if f == fam]
        if e:
            out.write("- %s: %d ratios, error median %.0f%%, largest %.0f%%\n"
                      % (fam, len(e), 100 * median(e), 100 * max(e)))
    return errors


SCALE_PLATFORMS = ("ib-100g", "eth-10g")
SCALE_KERNEL_CASES = (
    # nodes, ppn, bytes per pair, kernels: 16 MiB per rank, then 64 KiB pairs at 64 x 32 (its
    # replays take minutes each: crcrot, where the orders have room, only)
    (16, 16, 65536, LEVEL_KERNELS), (64, 32, 8192, LEVEL_KERNELS), (64, 32, 65536, ("crcrot",)),
)
SCALE_READ_NS = {"ib-100g": 600, "eth-10g": 6000}       # per KiB: about the link's own time
SCALE_EXCHANGES = (("alltoall", "small", 64), ("alltoall", "small", 1024),
                   ("alltoall", "uniform", 65536), ("alltoallv", "small", 64),
                   ("alltoallv", "skewed", 262144), ("alltoallv", "stencil2d", 262144),
                   ("alltoallv", "stencil3d", 262144), ("alltoallv", "particles", 131072))
SCALE_EXCHANGE_LAYOUTS = ((16, 16), (64, 32))
EXCHANGE_CONFIGS = ("stock@scattered", "stock@pairwise", "stock@brucks", "rm@reorder",
                    "rm@merge")


def main_scale(args, out=sys.stdout):
    """The kernels and the exchanges (args.scale: kernels, exchanges or all) at 16 x 16 and
    64 x 32, node level."""
    if args.scale in ("kernels", "all"):
        scale_kernels(args, out)
    if args.scale in ("exchanges", "all"):
        scale_exchanges(args, out)


def scale_kernels(args, out):
    from tnbc_bench import md_row, md_rule
    exe = exporter()
    kernels = args.kernels or LEVEL_KERNELS
    out.write("## Kernels (overlap: each block read as it is needed)\n\n")
    out.write(md_row(["platform", "layout", "bytes per pair", "kernel", "stock's best (ms)"] +
                     list(SCALE_CONFIGS)) + "\n" + md_rule(5 + len(SCALE_CONFIGS)) + "\n")
    for plat_name in SCALE_PLATFORMS:
        plat = load_platform(plat_name, args.set or ())
        for nodes, ppn, nbytes, case_kernels in SCALE_KERNEL_CASES:
            for kernel in [k for k in kernels if k in case_kernels]:
                program, layout = kernel_at(kernel, nodes, ppn, nbytes,
                                            SCALE_READ_NS[plat_name], plat["costs"])
                res = predict(plat, layout, program, list(SCALE_CONFIGS), exe, iterations=1,
                              jobs=args.jobs, level="node")
                best_c, best = stock_best(res)
                out.write(md_row([plat_name, "%dx%d" % (nodes, ppn), nbytes, kernel,
                                  "%.1f (%s)" % (best * 1e3, best_c)] +
                                 [fmt_x(res[c]["total"] / best) if res.get(c) else "-"
                                  for c in SCALE_CONFIGS]) + "\n")
                out.flush()
    out.write("\n")


def scale_exchanges(args, out):
    from tnbc_bench import md_row, md_rule
    from tnbc_workloads import counts as exchange_counts
    exe = exporter()
    out.write("## Exchanges (the workloads of maint/bench-exchange)\n\n")
    out.write(md_row(["platform", "layout", "collective", "workload", "stock's best (ms)"] +
                     list(EXCHANGE_CONFIGS)) + "\n" + md_rule(5 + len(EXCHANGE_CONFIGS)) + "\n")
    for plat_name in SCALE_PLATFORMS:
        plat = load_platform(plat_name, args.set or ())
        for nodes, ppn in SCALE_EXCHANGE_LAYOUTS:
            size = nodes * ppn
            for coll, workload, nbytes in SCALE_EXCHANGES:
                c = exchange_counts(workload, size, nbytes)
                program = [{"op": "alltoallv", "mpi": coll, "counts": c, "orders": [[]] * size,
                            "blocks": [[]] * size, "read_s": 0.0}]
                layout = {"nodes": nodes, "ppn": ppn, "placement": "block"}
                # MPICH's Alltoallv has scattered only (pairwise_sendrecv_replace: in place)
                configs = [x for x in EXCHANGE_CONFIGS
                           if coll == "alltoall" or x in ("stock@scattered", "rm@reorder",
                                                          "rm@merge")]
                res = predict(plat, layout, program, configs, exe, iterations=1,
                              jobs=args.jobs, level="node")
                best_c, best = stock_best(res)
                out.write(md_row([plat_name, "%dx%d" % (nodes, ppn), coll,
                                  "%s %d B" % (workload, nbytes),
                                  "%.3f (%s)" % (best * 1e3, best_c)] +
                                 [fmt_x(res[x]["total"] / best) if res.get(x) else "-"
                                  for x in EXCHANGE_CONFIGS]) + "\n")
                out.flush()


# ---- reports of maint/bench-exchange (reorder + merge), node level ----

# what each of the report's configurations runs, as the node-level replay names it; MPICH
# runs its default for pairwise_sendrecv_replace, which needs MPI_IN_PLACE; the node level
# does not tell reorder's node-distance orders apart (every message goes at once)
EXCHANGE_REPORT_CONFIGS = {
    "stock": "stock@default", "stock@pairwise_sendrecv_replace": "stock@default",
    "stock@scattered": "stock@scattered", "ours@scattered": "stock@scattered",
    "stock@pairwise": "stock@pairwise", "stock@brucks": "stock@brucks",
    "reorder": "rm@reorder", "merge": "rm@merge", "reorder_merge": "rm@merge",
    "reorder_merge_far": "rm@merge",
}


def parse_exchange_report(text):
    """(options, {workload label: {config: ms}}) of a bench-exchange report."""
    m = re.search(r"Generated by `maint/bench-exchange ([^`]*)`", text)
    if not m:
        raise ValueError("not a bench-exchange report")
    argv = m.group(1).split()
    opts = {a: argv[i + 1] for i, a in enumerate(argv[:-1]) if a.startswith("-")}
    header, cells = None, {}
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        row = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = row
            continue
        for label, cell in zip(header[1:], row[1:]):
            v = re.match(r"([0-9.]+)", cell)
            if v:
                cells.setdefault(label, {})[row[0]] = float(v.group(1))
    return opts, cells


def check_exchange_report(path, args, out):
    from tnbc_bench import md_row, md_rule
    from tnbc_workloads import counts as exchange_counts
    opts, cells = parse_exchange_report(open(path).read())
    nodes, ppn = int(opts.get("-n", 4)), int(opts.get("-p", 2))
    coll = opts.get("-c", "alltoallv")
    platform = report_platform(args, nodes, ppn, opts.get("-r"))
    exe, size = exporter(), nodes * ppn
    out.write("## %s\n\nPlatform `%s`; %d x %d, %s.\n\n" % (
        os.path.relpath(path, os.path.dirname(HERE)), platform["name"], nodes, ppn, coll))
    out.write(md_row(["workload", "config", "measured ms", "measured vs stock best",
                      "predicted ms", "predicted vs stock best", "error of the ratio"]) + "\n" +
              md_rule(7) + "\n")
    errors = []
    for label, measured in cells.items():
        workload, nbytes = label.split()[0], int(label.split()[1])
        program = [{"op": "alltoallv", "mpi": coll,
                    "counts": exchange_counts(workload, size, nbytes),
                    "orders": [[]] * size, "blocks": [[]] * size, "read_s": 0.0}]
        layout = {"nodes": nodes, "ppn": ppn, "placement": "block"}
        runs = sorted({EXCHANGE_REPORT_CONFIGS[c] for c in measured
                       if c in EXCHANGE_REPORT_CONFIGS})
        res = predict(platform, layout, program, runs, exe, iterations=1, jobs=args.jobs,
                      level="node")
        mbest = min(v for c, v in measured.items() if c.startswith("stock"))
        pbest = min(res[EXCHANGE_REPORT_CONFIGS[c]]["total"] for c in measured
                    if c.startswith("stock"))
        for c, ms in measured.items():
            run = EXCHANGE_REPORT_CONFIGS.get(c)
            if not run:
                out.write(md_row([label, c, "%.1f" % ms, fmt_x(ms / mbest), "not modeled",
                                  "-", "-"]) + "\n")
                continue
            pt = res[run]["total"]
            err = (pt / pbest) / (ms / mbest) - 1
            errors.append((config_family(c) if c.startswith("stock") else "reorder + merge",
                           abs(err)))
            out.write(md_row([label, c if run == "stock@" + c.partition("@")[2] else
                              "%s (%s)" % (c, run), "%.1f" % ms, fmt_x(ms / mbest),
                              "%.3f" % (pt * 1e3), fmt_x(pt / pbest),
                              "%+.0f%%" % (100 * err)]) + "\n")
        out.flush()
    out.write("\n" + "".join("- %s\n" % line for line in summary(errors, EXCHANGE_FAMILIES)) + "\n")
    return errors


EXCHANGE_FAMILIES = ("stock", "reorder + merge")


def main_check_exchange(args, out=sys.stdout):
    out.write("# Exchanges predicted on SimGrid (node level) against measured on the testbed\n\n"
              "Generated by `maint/tnbc-predict %s`. Each configuration of the maint/bench-"
              "exchange reports replayed by the node-level replay on the testbed's platform "
              "(costs from the calibration runs; none fitted). Ratios to stock's best of the "
              "same column; *error of the ratio* = predicted ratio / measured ratio - 1. "
              "Predicted figures are labelled predicted.\n\n"
              % " ".join("--check-exchange " + os.path.relpath(p, os.path.dirname(HERE))
                         for p in args.check_exchange))
    errors = []
    for path in args.check_exchange:
        errors += check_exchange_report(path, args, out)
    if len(args.check_exchange) > 1:
        out.write("## Every report\n\n" + "".join("- %s\n" % x
                                                   for x in summary(errors, EXCHANGE_FAMILIES)))
    return errors


# ---- the room an order has: what no order of sending beats (maint/kernels-headline) ----

ROOM_KERNELS = ("crc", "crcrot", "ft")


def order_bound(kernel, nodes, ppn, placement, nbytes, read_s, costs):
    """The least largest stall over ranks any order of sending allows, in an Alltoall whose
    readers read at read_s a block: for every link and every m, the remote blocks among the
    first m reads of the readers whose blocks cross that link need their bytes / rate to cross
    it, so the last of them arrives no earlier, while its reader reached it after at most m - 1
    reads. A limit, not a prediction: no configuration is replayed."""
    size = nodes * ppn
    node = [node_of(r, nodes, ppn, placement) for r in range(size)]
    orders = [read_order(kernel, r, size) for r in range(size)]
    hop = 2 * costs["latency"] + costs["msg_cost"]
    best, crossing = 0.0, {}
    for m in range(1, size + 1):
        for r in range(size):
            src = orders[r][m - 1]
            if node[src] != node[r]:
                for link in (("up", node[src]), ("down", node[r])):
                    crossing[link] = crossing.get(link, 0) + nbytes
        for nb in crossing.values():
            best = max(best, nb / costs["rate"] + hop - (m - 1) * read_s)
    return best


def room_share(fifo, other, bound):
    """The share of the room below FIFO another configuration took; "-" with no room (the
    bound under 20% below FIFO)."""
    if fifo - bound < 0.2 * fifo:
        return "-"
    return "%.0f%%" % (100.0 * (fifo - other) / (fifo - bound))


def main_room(args, out=sys.stdout):
    """Per kernel and placement of a bench-kernels report: FIFO's largest wait replayed, the
    bound, and the achieved share of the room (measured FIFO - measured configuration) /
    (measured FIFO - bound x measured FIFO / replayed FIFO) of each configuration compared."""
    from tnbc_bench import md_row, md_rule
    opts, d, sections = parse_report(open(args.room).read())
    nodes, ppn = int(opts.get("-n", 4)), int(opts.get("-p", 2))
    nbytes, ns_per_kib = int(opts.get("-b", 262144)), float(opts.get("-w", 0))
    platform = report_platform(args, nodes, ppn, opts.get("-r"))
    compared = [c for c in (args.C or "prio,prio_noarb").split(",") if c]
    exe = exporter()
    out.write("# The room an order has: %s\n\nGenerated by `maint/tnbc-predict --room %s -C %s`"
              ". FIFO's largest wait replayed (SimGrid, platform `%s`), the bound no order of "
              "sending beats (tnbc_predict.order_bound), and per configuration its measured "
              "largest wait and achieved share of the room.\n\n"
              % (os.path.relpath(args.room, os.path.dirname(HERE)),
                 os.path.relpath(args.room, os.path.dirname(HERE)), ",".join(compared),
                 platform["name"]))
    head = ["kernel", "placement", "replayed FIFO max / mean wait ms", "bound ms",
            "measured FIFO max ms", "measured / replayed", "bound, scaled ms"]
    for c in compared:
        head += ["%s max ms" % c, "achieved share"]
    out.write(md_row(head) + "\n" + md_rule(len(head)) + "\n")
    for (kernel, placement), measured in sections.items():
        if kernel not in ROOM_KERNELS or "fifo" not in measured:
            continue
        read_s, after_s = kernel_compute(kernel, measured, nbytes, ns_per_kib, d, nodes * ppn,
                                         platform["costs"])
        program, _ = kernel_program(kernel, nodes, ppn, placement, nbytes, read_s, after_s)
        layout = {"nodes": nodes, "ppn": ppn, "placement": placement}
        fifo = predict(platform, layout, program, ["fifo"], exe, jobs=args.jobs)["fifo"]
        bound = order_bound(kernel, nodes, ppn, placement, nbytes, read_s, platform["costs"])
        mfifo = measured["fifo"]["wait"]
        scale = mfifo / (fifo["wait"] * 1e3)
        row = [kernel, placement, "%.1f / %.1f" % (fifo["wait"] * 1e3, fifo["wait_mean"] * 1e3),
               "%.1f" % (bound * 1e3), "%.1f" % mfifo, "%.2f" % scale,
               "%.1f" % (bound * 1e3 * scale)]
        for c in compared:
            m = measured.get(c)
            row += ["%.1f" % m["wait"], room_share(mfifo, m["wait"], bound * 1e3 * scale)] \
                if m else ["-", "-"]
        out.write(md_row(row) + "\n")
        out.flush()


# ---- a trace run of the user's code (MPIR_CVAR_TNBC_TRACE, format 2) as a program ----

TRACE_COLLS = ("alltoall", "alltoallv")


def read_trace(path):
    """One rank's trace -> (rank, size, [call]); a call: {coll, size, bytes, blocks, compute_s,
    call_s, touches: [(block, s after the call returned)] in touch order}."""
    rank = size = None
    calls = []
    with open(path) as f:
        for line in f:
            head = re.match(r"# mpich-tnbc trace (\d+) rank (\d+) size (\d+)", line)
            if head:
                if int(head.group(1)) < 2:
                    raise ValueError("%s: a trace of format %s has no timings (format 2 "
                                     "needed: trace again with this library)"
                                     % (path, head.group(1)))
                rank, size = int(head.group(2)), int(head.group(3))
                continue
            f_ = line.split("#", 1)[0].split()
            if f_ and f_[0] == "call" and len(f_) == 9:
                calls.append({"coll": f_[2], "size": int(f_[3]), "bytes": int(f_[4]),
                              "blocks": int(f_[5]), "compute_s": int(f_[7]) * 1e-9,
                              "call_s": int(f_[8]) * 1e-9, "touches": []})
            elif f_ and f_[0] == "touch" and len(f_) == 4 and calls:
                calls[-1]["touches"].append((int(f_[2]), int(f_[1]), int(f_[3]) * 1e-9))
    if rank is None:
        raise ValueError("%s: not a T-NBC trace" % path)
    for c in calls:
        c["touches"] = [(b, t) for _, b, t in sorted(c["touches"])]
    return rank, size, calls


def order_pattern(orders):
    """How the ranks' orders of one call generalise to another size: ("same", order),
    ("rotation", c) when rank r reads r + c, r + c + 1, ..., or ("mean", order) (the blocks
    by their mean position over the ranks)."""
    size = len(orders)
    if all(o == orders[0] for o in orders):
        return ("same", orders[0])
    c = (orders[0][0] - 0) % size
    if all(o == [(r + c + i) % size for i in range(size)] for r, o in enumerate(orders)):
        return ("rotation", c)
    pos = [0.0] * size
    for o in orders:
        for i, b in enumerate(o):
            pos[b] += i
    return ("mean", sorted(range(size), key=lambda b: (pos[b], b)))


def scaled_order(pattern, rank, size, traced):
    kind, v = pattern
    if kind == "rotation":
        return [(rank + v + i) % size for i in range(size)]
    if size == traced:
        return list(v)
    # the traced order's blocks as fractions of the communicator, stretched to size
    where = {b: i for i, b in enumerate(v)}
    return sorted(range(size), key=lambda b: (where[b * traced // size], b))


def call_reads(c, traced):
    """One traced call's reads: (order, {block: read time}, time to the first read, time to
    the end of the last). A block's read time: to the next block's first touch; the last
    one's: the median."""
    touched = [b for b, _ in c["touches"]]
    order = touched + [b for b in range(traced) if b not in touched]
    times = [t for _, t in c["touches"]]
    gaps = [max(0.0, b - a) for a, b in zip(times, times[1:])]
    last = statistics.median(gaps) if gaps else 0.0
    return (order, dict(zip(touched, gaps + [last])), times[0] if times else 0.0,
            (times[-1] + last) if times else 0.0)


def trace_program(traces, nodes, ppn, placement, scaling="weak"):
    """The program a trace run describes, at nodes x ppn ranks: per Alltoall(v) call, the
    computing before it (per rank as traced when the sizes match, else its mean), the call
    with the traced bytes per block (weak scaling; strong: the same bytes per rank), read in
    the traced order at the traced rate after the traced time to the first read; what follows
    the last read is the next call's computing before. Calls of other collectives count as
    computing. Returns (program, notes)."""
    per_rank = sorted(traces, key=lambda t: t[0])
    traced = per_rank[0][1]
    if sorted(t[0] for t in per_rank) != list(range(traced)):
        raise ValueError("the traces are not one per rank of a %d-rank run" % traced)
    size = nodes * ppn
    shrink = traced / size if scaling == "strong" else 1.0
    # per rank, its replayed calls, each with what it computed before: a rank's trace may
    # lack calls another has (a Bcast's root receives nothing), so calls pair up only after
    # the others were folded into computing
    replayed, skipped = [], set()
    for _, _, calls in per_rank:
        mine, carry, reads_end = [], 0.0, 0.0
        for c in calls:
            # what ran since the last call returned, less its reads (replayed with that call)
            gap = max(0.0, c["compute_s"] - reads_end)
            if c["coll"] not in TRACE_COLLS or c["blocks"] != traced:
                carry += gap + c["call_s"]
                reads_end = 0.0
                skipped.add(c["coll"])
                continue
            rd = call_reads(c, traced)
            mine.append((c, gap + carry, rd))
            carry, reads_end = 0.0, rd[3]
        replayed.append(mine)
    ncalls = min(len(m) for m in replayed)
    if any(len(m) != ncalls for m in replayed):
        raise ValueError("the ranks' traces hold different numbers of Alltoall(v) calls")
    notes = ["%s calls counted as computing" % c for c in sorted(skipped)]
    program = []
    for k in range(ncalls):
        calls = [m[k][0] for m in replayed]
        c0 = calls[0]
        if any((c["coll"], c["bytes"], c["blocks"]) != (c0["coll"], c0["bytes"], c0["blocks"])
               for c in calls):
            raise ValueError("call %d differs between the ranks' traces" % (k + 1))
        compute = [m[k][1] for m in replayed]
        orders = [m[k][2][0] for m in replayed]
        reads = [m[k][2][1:] for m in replayed]
        nbytes = max(1, int(c0["bytes"] / c0["blocks"] * shrink))
        pattern = order_pattern(orders)
        if size == traced:
            read_s = [[reads[r][0].get(b, 0.0) * shrink for b in range(size)]
                      for r in range(size)]
            before = compute
        else:
            mean_read = statistics.mean(v for rd, _, _ in reads for v in rd.values()) \
                if any(rd for rd, _, _ in reads) else 0.0
            read_s = mean_read * shrink
            before = statistics.mean(compute) * shrink
        # from the call's return to the first touch: computing the data can arrive behind
        lead = [r0 * shrink for _, r0, _ in reads]
        program.append({"op": "compute", "s": before})
        program.append({"op": "alltoallv", "mpi": c0["coll"],
                        "counts": [[nbytes] * size for _ in range(size)],
                        "orders": orders if size == traced else
                        [scaled_order(pattern, r, size, traced) for r in range(size)],
                        "blocks": [[(b * nbytes, nbytes) for b in range(size)]
                                   for _ in range(size)],
                        "read_s": read_s,
                        "lead_s": lead if size == traced else statistics.mean(lead)})
        notes.append("call %d: %s, %d bytes a block, order %s" % (k + 1, c0["coll"], nbytes,
                                                                 pattern[0]))
    if not program:
        raise ValueError("no Alltoall or Alltoallv call with a block per rank in the trace")
    return program, notes


TRACE_CONFIGS = ("stock", "stock@scattered", "stock@pairwise", "stock@brucks", "fifo",
                 "prio_noarb", "prio", "prio_noarb+PACE_BYTES=524288")


def main_trace(args, out=sys.stdout):
    """Predict a traced run at -n x -p ranks on a platform, every configuration."""
    from tnbc_bench import md_row, md_rule
    paths = []
    for p in args.trace:
        paths += sorted(glob.glob(p + ".*.trace")) if not p.endswith(".trace") else [p]
    if not paths:
        raise SystemExit("tnbc-predict: no trace files for %s" % " ".join(args.trace))
    traces = [read_trace(p) for p in paths]
    plat = load_platform(args.platform, args.set or ())
    configs = (args.C.split(",") if args.C else list(TRACE_CONFIGS))
    out.write("Generated by `maint/tnbc-predict %s`. **Predicted** on SimGrid 3.32 (%s "
              "level), platform `%s`: the traced run of %d ranks replayed at %d x %d (%s "
              "placement, %s scaling): one pass through the trace, ms; *wait* = in the "
              "collectives + stalled, largest over ranks.\n\n"
              % (" ".join(sys.argv[1:]), args.level, plat["name"], traces[0][1], args.n, args.p,
                 args.P.split(",")[0], args.scaling))
    program, notes = trace_program(traces, args.n, args.p, args.P.split(",")[0], args.scaling)
    if any(ph.get("mpi") == "alltoallv" for ph in program):
        configs = [c for c in configs if c != "stock@brucks"]     # an Alltoall algorithm only
    out.write("".join("- %s\n" % n for n in notes) + "\n")
    layout = {"nodes": args.n, "ppn": args.p, "placement": args.P.split(",")[0]}
    res = predict(plat, layout, program, configs, exporter(), iterations=1, jobs=args.jobs,
                  level=args.level)
    _, best = stock_best(res)
    out.write(md_row(["config", "predicted ms", "vs stock best", "wait ms", "stall ms"]) + "\n" +
              md_rule(5) + "\n")
    for c in configs:
        r = res.get(c)
        out.write(md_row([c, fmt_ms(r["total"]) if r else "not modeled",
                          fmt_x(r["total"] / best) if r and best else "-",
                          fmt_ms(r["wait"]) if r else "-", fmt_ms(r["stall"]) if r else "-"])
                  + "\n")


# ---- reports of maint/bench-overlap: unrelated work after the call, then the reads ----

OVERLAP_CONFIGS = {"stock": "stock", "tnbc": "prio_noarb", "nbc": "rewrite@noasync",
                   "nbc_async": "rewrite"}


def parse_overlap_report(text):
    """(nodes, ppn, rate, D, bytes, [{config, scen, T_CURC, T_CRC, Ttotal}]) of a bench-overlap
    report's Alltoall lines (times measured, ms)."""
    head = re.search(r"emulated cluster: (\d+) nodes x (\d+) ranks, links (\w+) modeled", text)
    d = re.search(r"scale D=([0-9.]+)", text)
    nbytes = re.search(r"(\d+) bytes per pair", text)
    if not (head and d and nbytes):
        raise ValueError("not a bench-overlap report of the emulated cluster")
    rows, header = [], None
    section = text.split("## Every scenario line", 1)[-1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        row = dict(zip(header, cells))
        if row.get("coll") == "alltoall":
            rows.append({"config": row["config"], "scen": row["scen"],
                         "T_CURC": float(row["T_CURC"]), "T_CRC": float(row["T_CRC"]),
                         "Ttotal": float(row["Ttotal"])})
    return (int(head.group(1)), int(head.group(2)), head.group(3), float(d.group(1)),
            int(nbytes.group(1)), rows)


def overlap_config(config):
    base, _, alg = config.partition("@")
    return ("stock@" + alg) if alg else OVERLAP_CONFIGS.get(base)


def check_overlap_report(path, args, out):
    """Every Alltoall line of a bench-overlap report: the call, CURC (work that needs none of
    its data) for T_CURC, then CRC reading every block in source order for T_CRC, all measured
    / D; Ttotal's ratio to stock's best of the same scenario, predicted against measured."""
    from tnbc_bench import md_row, md_rule
    nodes, ppn, rate, d, nbytes, rows = parse_overlap_report(open(path).read())
    platform = report_platform(args, nodes, ppn, rate)
    exe, size = exporter(), nodes * ppn
    out.write("## %s\n\nPlatform `%s`; %d x %d, %d bytes per pair, D = %g.\n\n" % (
        os.path.relpath(path, os.path.dirname(HERE)), platform["name"], nodes, ppn, nbytes, d))
    out.write(md_row(["scen", "config", "measured Ttotal ms", "measured vs stock best",
                      "predicted ms", "predicted vs stock best", "error of the ratio"]) + "\n" +
              md_rule(7) + "\n")
    errors = []
    for scen in sorted({r["scen"] for r in rows}):
        lines = [r for r in rows if r["scen"] == scen]
        # one program per scenario: the configurations measured their own CURC and CRC alone;
        # the replay takes the mean of them (the work is the same code)
        curc = statistics.mean(r["T_CURC"] for r in lines) * 1e-3 / d
        crc = statistics.mean(r["T_CRC"] for r in lines) * 1e-3 / d
        program, _ = kernel_program("crc", nodes, ppn, "block", nbytes, crc / size)
        program[0]["lead_s"] = curc
        layout = {"nodes": nodes, "ppn": ppn, "placement": "block"}
        runs = sorted({overlap_config(r["config"]) for r in lines if overlap_config(r["config"])})
        res = predict(platform, layout, program, runs, exe, iterations=2, jobs=args.jobs)
        mbest = min(r["Ttotal"] for r in lines if r["config"].startswith("stock"))
        pbest = min(res[overlap_config(r["config"])]["total"] for r in lines
                    if r["config"].startswith("stock"))
        for r in lines:
            run = overlap_config(r["config"])
            if not run or not res.get(run):
                continue
            mr, pr = r["Ttotal"] / mbest, res[run]["total"] / pbest
            errors.append((config_family(run), abs(pr / mr - 1)))
            out.write(md_row([scen, "%s (%s)" % (r["config"], run), "%.1f" % r["Ttotal"],
                              fmt_x(mr), "%.1f" % (res[run]["total"] * 1e3 * d), fmt_x(pr),
                              "%+.0f%%" % (100 * (pr / mr - 1))]) + "\n")
        out.flush()
    out.write("\n" + "".join("- %s\n" % x for x in summary(errors)) + "\n")
    return errors


def main_check_overlap(args, out=sys.stdout):
    out.write("# Overlap predicted on SimGrid against measured on the testbed\n\nGenerated by "
              "`maint/tnbc-predict %s`. The Alltoall lines of maint/bench-overlap reports: the "
              "call, CURC for T_CURC, then CRC over every block for T_CRC (the report's own "
              "times / D), replayed on the testbed's platform; Ttotal in measured ms (modeled "
              "x D), ratios to stock's best of the same scenario. Predicted figures are "
              "labelled predicted.\n\n"
              % " ".join("--check-overlap " + os.path.relpath(p, os.path.dirname(HERE))
                         for p in args.check_overlap))
    errors = []
    for path in args.check_overlap:
        errors += check_overlap_report(path, args, out)
    return errors
