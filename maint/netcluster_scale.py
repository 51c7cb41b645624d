##
## mpich-tnbc: what `maint/netcluster run` says about the scale of a run, for the benchmark
## drivers: each rank's CPU share 1/D and the links shaped at the modeled rate / D, so that
## measured times divide by D (maint/netcluster-cpu).
##
import re

_LINE = re.compile(r"^netcluster: scale (.*)$", re.M)


HELPER_PLACES = {
    "rt": "outside its rank's share, woken at once (SCHED_FIFO in a small RT budget): as on a "
          "core per rank; its CPU is reported, not charged to the rank",
    "free": "outside its rank's share at the highest CFS weight; its CPU is reported, not "
            "charged to the rank",
    "rank": "inside its rank's share (a woken helper may wait out the quota's holes)"}


def fields(stdout):
    """The key=value pairs of netcluster's scale line, as written, or None."""
    m = _LINE.search(stdout)
    if not m:
        return None
    return dict(w.split("=", 1) for w in m.group(1).split() if "=" in w)


def parse(stdout):
    """The scale of one run from netcluster's output, or None."""
    m = _LINE.search(stdout)
    if not m:
        return None
    kv = fields(stdout)
    try:
        return {"D": float(kv["D"]), "capped": kv.get("capped") == "yes",
                "period_us": int(kv.get("period_us", 0)), "quota_us": int(kv.get("quota_us", 0)),
                "rate": kv.get("rate", "?"), "shaped": kv.get("shaped", "?"),
                "rndv_thresh": kv.get("rndv_thresh", "default"),
                "tcp_cc": kv.get("tcp_cc", "unknown"),
                "helper_share": kv.get("helper_share"), "helper": kv.get("helper"),
                "oversubscribed": "oversubscribed" in m.group(1)}
    except (KeyError, ValueError):
        return None


def modeled(ms, scale):
    """A measured time in the modeled cluster's units."""
    return ms / scale["D"] if scale else ms


def describe(scales):
    """One sentence for a report on the scale of its runs (all of one layout)."""
    scales = [s for s in scales if s]
    if not scales:
        return "Scale unknown (no netcluster scale line in the runs)."
    kinds = sorted({(s["D"], s["capped"], s["period_us"], s["quota_us"], s["shaped"],
                     s["oversubscribed"]) for s in scales})
    parts = []
    for d, capped, period, quota, shaped, over in kinds:
        if over:
            parts.append("OVERSUBSCRIBED, not a cluster figure: the ranks shared the cores "
                         "uncapped (no writable cpu controller); links shaped at %s" % shaped)
        elif d == 1:
            parts.append("a core per rank (no more ranks than cores), links shaped at %s; "
                         "times as measured" % shaped)
        else:
            parts.append("every rank on 1/D of a core, D = %g (CFS period %d us, quota %d us), "
                         "links shaped at %s = the modeled rate / D; times are modeled "
                         "(measured / %g)" % (d, period, quota, shaped, d))
    helpers = sorted({s["helper_share"] for s in scales if s.get("helper_share")})
    if helpers:
        parts.append("T-NBC's helper thread of every rank on its own %s of a core, outside the "
                     "rank's share (a node with spare cores for the helpers)" % ", ".join(helpers))
    placed = sorted({s["helper"] for s in scales if s.get("helper") in HELPER_PLACES})
    if placed:
        parts.append("T-NBC's helper thread %s" % ", ".join(HELPER_PLACES[h] for h in placed))
    eager = sorted({s["rndv_thresh"] for s in scales})
    cc = sorted({s["tcp_cc"] for s in scales})
    return "Scale (maint/netcluster): " + "; ".join(parts) + "; UCX_RNDV_THRESH " + \
        ", ".join(eager) + " (inf: every configuration eager); TCP congestion control " + \
        ", ".join(cc) + "."
