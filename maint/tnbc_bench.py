#
# Copyright (C) by the mpich-tnbc authors
#     See COPYRIGHT in top-level directory
#
"""What the benchmark drivers in maint/ (bench-overlap, bench-helper, bench-kernels,
bench-exchange, bench-node, bench-calibrate) share: messages, running commands, building a
benchmark program against our install and against Debian's stock libmpich, running it on the
emulated cluster (maint/netcluster), and the pieces of the reports they all write.
Standard library only.
"""

import locale
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
import netcluster_scale  # noqa: E402  (beside this file)

MAINT = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(MAINT)
NETCLUSTER = os.path.join(MAINT, "netcluster")
RESULTS = os.path.join(TOP, "test/mpi/tnbc/bench/results")
STOCK = os.path.join(TOP, "_build/stock")        # where maint/fetch-stock unpacks Debian's
STOCK_LIB = "usr/lib/x86_64-linux-gnu"           # ... libmpich.so.12 (in STOCK)
STOCK_INC = "usr/include/x86_64-linux-gnu/mpich"  # ... mpi.h (in STOCK)

# --- messages -------------------------------------------------------------------------------


def sayer(name):
    """say(*words): one line 'NAME: words' on stderr, at once (runs take minutes)."""
    def say(*a):
        print(name + ":", *a, file=sys.stderr, flush=True)
    return say


def dier(name, code=2):
    """die(*words): say them and exit CODE."""
    say = sayer(name)

    def die(*a):
        say(*a)
        sys.exit(code)
    return die


def require_root(name):
    if os.geteuid() != 0:
        sys.exit("%s: needs root (the emulated cluster uses network namespaces)" % name)


def usage(script):
    """The '##' header at the top of SCRIPT on stderr, exit 2 (what the shell drivers did)."""
    with open(script) as f:
        lines = f.read().splitlines()[1:]
    for line in lines:
        if not line.startswith("##"):
            break
        sys.stderr.write(re.sub(r"^## ?", "", line) + "\n")
    sys.exit(2)


def getopts(argv, spec):
    """bash's getopts over argv: ([(option, value)], operands). Parsing stops at the first
    option bash would reject, as ('?', its diagnostic): the caller says it and stops there."""
    opts, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        i += 1
        j = 1
        while j < len(arg):
            c = arg[j]
            j += 1
            k = spec.find(c)
            if c == ":" or k < 0:
                opts.append(("?", "illegal option -- " + c))
                return opts, argv[i:]
            if spec[k + 1:k + 2] != ":":
                opts.append((c, None))
                continue
            if j < len(arg):
                opts.append((c, arg[j:]))
            elif i < len(argv):
                opts.append((c, argv[i]))
                i += 1
            else:
                opts.append(("?", "option requires an argument -- " + c))
                return opts, []
            break
    return opts, argv[i:]


# --- commands -------------------------------------------------------------------------------


def shell_status(rc):
    """A subprocess return code as a shell reports it (killed by signal N: 128 + N)."""
    return 128 - rc if rc < 0 else rc


def call(cmd, **kw):
    """CMD's exit status as a shell's $? (127: no such command, 126: not executable), and the
    shell's message for those two."""
    try:
        return shell_status(subprocess.run(cmd, **kw).returncode)
    except OSError as e:
        missing = isinstance(e, FileNotFoundError)
        if kw.get("stderr") is None:    # else the shell's message went where stderr goes
            print("%s: %s: %s" % (sys.argv[0], cmd[0], "command not found" if missing and
                                  "/" not in cmd[0] else e.strerror), file=sys.stderr)
        return 127 if missing else 126


def output(cmd, quiet=True, **kw):
    """CMD's standard output as a shell's $(CMD) gives it: trailing newlines dropped, '' when
    it cannot run. QUIET: its standard error is dropped too (2>/dev/null)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL if quiet else None, **kw)
    except OSError:
        return ""
    return p.stdout.decode(errors="replace").rstrip("\n")


def have(command):
    return shutil.which(command) is not None


def timed(cmd, **kw):
    """(CompletedProcess with text output captured, seconds it took)."""
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return p, time.time() - t0


def collate_sorted(items):
    """ITEMS in the locale's collation order, as a shell glob or sort(1) lists them."""
    try:
        locale.setlocale(locale.LC_COLLATE, "")
    except locale.Error:
        pass        # an unknown locale: the shell falls back to C, and so does this
    return sorted(items, key=locale.strxfrm)


def gzip_file(path, flags="-nf9", check=True):
    """Compress PATH in place (raw logs are kept compressed)."""
    return subprocess.run(["gzip", flags, path], check=check)


# --- builds ---------------------------------------------------------------------------------


def install_prefix():
    """Our install: TNBC_PREFIX, default _install."""
    return os.environ.get("TNBC_PREFIX") or os.path.join(TOP, "_install")


def stock_dirs(stock=STOCK):
    """(library directory, include directory) of Debian's MPICH unpacked in STOCK."""
    return os.path.join(stock, STOCK_LIB), os.path.join(stock, STOCK_INC)


def fetch_stock(stock=STOCK, **kw):
    """maint/fetch-stock STOCK: Debian's mpich packages, downloaded and unpacked, never
    installed. Its standard output (STOCK) is captured."""
    return subprocess.run([os.path.join(MAINT, "fetch-stock"), stock], stdout=subprocess.PIPE,
                          text=True, **kw)


def ours_command(prefix, src, out, flags=("-O2", "-Wall"), libs=()):
    """Our mpicc building SRC into OUT."""
    return [os.path.join(prefix, "bin/mpicc")] + list(flags) + ["-o", out, src] + list(libs)


def compile_ours(prefix, src, out, flags=("-O2", "-Wall"), libs=(), check=True):
    return subprocess.run(ours_command(prefix, src, out, flags, libs), check=check)


def stock_command(stock, src, out, flags=("-O2", "-Wall"), libs=()):
    """gcc against Debian's libmpich in STOCK, found at run time through an rpath: the binary
    runs on that library whatever the system has installed."""
    lib, inc = stock_dirs(stock)
    return (["gcc"] + list(flags) + ["-I" + inc, "-o", out, src, "-L" + lib,
                                     "-Wl,-rpath," + lib, "-lmpich"] + list(libs))


def compile_stock(stock, src, out, flags=("-O2", "-Wall"), libs=(), check=True):
    return subprocess.run(stock_command(stock, src, out, flags, libs), check=check)


def build_pair(prefix, work, stock, src, name, say, libs=()):
    """SRC as WORK/NAME (ours) and WORK/NAME.stock (Debian's libmpich, if STOCK holds it):
    (ours, stock binary or None, stock library directory). A failed build raises."""
    os.makedirs(work, exist_ok=True)
    ours = os.path.join(work, name)
    compile_ours(prefix, src, ours, libs=libs)
    stocklib = stock_dirs(stock)[0]
    if not os.path.exists(os.path.join(stocklib, "libmpich.so.12")):
        say("no Debian libmpich in", stocklib, "- run maint/bench-overlap once to fetch it")
        return ours, None, stocklib
    theirs = os.path.join(work, name + ".stock")
    compile_stock(stock, src, theirs, libs=libs)
    return ours, theirs, stocklib


# --- the emulated cluster -------------------------------------------------------------------


def netcluster(*args, **kw):
    """maint/netcluster ARGS (up, down, status, run)."""
    return subprocess.run([NETCLUSTER] + [str(a) for a in args], **kw)


def netcluster_run(prog, nodes, ppn, seconds, rate=None, d=None, h=None):
    """The command line of `maint/netcluster run` for PROG (program and arguments, strings):
    NODES x PPN ranks bounded by SECONDS, links at the modeled RATE, CPU share 1/D, the
    helper threads on 1/H of a core."""
    return ([NETCLUSTER, "run", "-n", str(nodes), "-p", str(ppn), "-t", str(seconds)] +
            (["-r", rate] if rate is not None else []) + (["-D", d] if d else []) +
            (["-H", h] if h else []) + ["--"] + list(prog))


def clean_env(prefixes=("MPIR_CVAR_",), names=("TNBC_MPIEXEC_ARGS", "LD_LIBRARY_PATH")):
    """Our environment without the settings a run must get from its configuration only: a
    CVAR left there would reach every rank through hydra."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(tuple(prefixes)) and k not in names}


def cluster_env(prefix, env, drop=("MPIR_CVAR_",)):
    """The environment of a netcluster run: clean_env, then ENV, our mpiexec."""
    full = clean_env(prefixes=drop)
    full.update(env)
    full["TNBC_MPIEXEC"] = os.path.join(prefix, "bin/mpiexec")
    return full


def env_words(env, sort=True):
    """NAME=VALUE ... of a configuration's settings, for the raw logs."""
    return " ".join("%s=%s" % kv for kv in (sorted(env.items()) if sort else env.items()))


def scale_fields(stdout):
    """The raw key=value pairs of netcluster's scale line ({} when there is none)."""
    return netcluster_scale.fields(stdout) or {}


# --- reports --------------------------------------------------------------------------------


def stamp():
    """The UTC time stamp in the results' file names."""
    return time.strftime("%Y%m%d-%H%M%SZ", time.gmtime())


def utc(fmt="%Y-%m-%d %H:%M:%S UTC"):
    return time.strftime(fmt, time.gmtime())


def commit(short=12, top=TOP):
    """HEAD's commit id (SHORT: abbreviated to that many digits, True: git's default, None:
    in full); '' when it is not a git work tree."""
    arg = [] if short is None else ["--short"] if short is True else ["--short=%d" % short]
    return output(["git", "-C", top, "rev-parse"] + arg + ["HEAD"]).strip()


def dirty_paths(top=TOP):
    """How many paths git status lists as changed or untracked."""
    out = output(["git", "-C", top, "status", "--porcelain"])
    return out.count("\n") + 1 if out else 0


def rel(path, top=TOP):
    return os.path.relpath(path, top)


def md_row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def md_rule(columns):
    return "|" + "---|" * columns


def write_md(path, lines):
    """A report: LINES, one newline after each."""
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
