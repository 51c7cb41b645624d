#!/usr/bin/python3
##
## mpich-tnbc: the node-level replay on SimGrid, for layouts too large to replay rank by rank
## (maint/tnbc-predict --level node; one process per replay, like maint/tnbc_replay.py, whose
## platform, stock algorithms and job format it shares).
##
## A rank-level replay of an Alltoall moves size^2 messages, all at once for T-NBC, and SimGrid's
## max-min solver is quadratic in concurrent flows: 128 ranks took minutes, 256 over ten. Here
## the messages that start together between one pair of nodes move as one flow (a bundle): in a
## max-min model every message of a bundle shares the same links with the same start, so they
## finish together, at the bundle's end. The replay runs in waves, every rank in step:
##   stock@ALG   the algorithm's steps (tnbc_replay.alltoall_steps), one wave each;
##   tnbc        edges (and what goes besides bodies) first, then the bodies, all at once;
##   tnbc paced  edges and bodies for the rank's own node at once, then the bodies for other
##               nodes in the library's posting order, window bytes per process per wave (at
##               least one body), the next wave once the senders learn of the last delivery
##               (answer seconds later); with node turns a node's processes take turns by the
##               position of their most urgent body, one window per wave. Out of step, one
##               process's wait for its answer is covered by the others' windows: a wave of k
##               processes per node lasts max(T, gap + T / k), T its bundles' time.
##   rm@ALG      reorder + merge (reorder, merge, reorder_merge): rm_exchange.
## What a wave cannot show: ranks drifting apart within a wave (every rank waits for the wave's
## slowest bundle), bundles of unequal message counts sharing a link (max-min shares per flow,
## not per message: a link's total is right, which of its bundles ends first may not be).
## Posting: a rank's sends cost msg_cost each; a wave lasts at least its busiest rank's posting.
## T-NBC's receivers land their pieces in arrival order (posting order on ties) at
## landing_rate, a wake-up first when the helper was idle; then each rank reads its blocks in
## its order, stalling (plus fault_cost) on a block not yet landed.
## The schedules: the exporter's summary of the library's own builder (what each rank sends
## besides bodies per node, its bodies in posting order, its body receives in posting order).
##
import sys

from tnbc_replay import (Replay, alltoall_default, alltoall_steps, main, run_exporter,
                         value_of)

try:
    from simgrid import Actor, Comm, Engine, this_actor
except ImportError:
    Engine = None


RM_MERGE_MAX = 4096             # MPIR_CVAR_REORDER_MERGE_MSG_MAX
RM_FIRST_BYTES = 4096           # MPIR_CVAR_REORDER_MERGE_FIRST_BYTES
RM_AGGREGATE_MAX = 1048576      # MPIR_CVAR_REORDER_MERGE_AGGREGATE_MAX


def parse_summary(text):
    """The exporter's summary -> per rank {'edges': [bytes per node], 'sends': n,
    'bodies': [(peer, len)], 'recvs': [peer]}."""
    out, cur = [], None
    for line in text.splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "rank":
            cur = {}
            out.append(cur)
        elif tag == "E":
            cur["edges"] = [int(x) for x in rest.split()]
        elif tag == "N":
            cur["sends"] = int(rest.split()[0])
        elif tag == "B":
            v = [int(x) for x in rest.split()]
            cur["bodies"] = list(zip(v[0::2], v[1::2]))
        elif tag == "L":
            cur["recvs"] = [int(x) for x in rest.split()]
    return out


def summary_job_text(coll, node, nnodes, priorities):
    size = len(coll["counts"])
    rows = ["summary %d 0 %d %d" % (size, 1 if priorities else 0, nnodes)]
    rows += [" ".join(str(int(c)) for c in row) for row in coll["counts"]]
    rows.append(" ".join(str(n) for n in node))
    if priorities:
        rows += [" ".join(str(b) for b in order) for order in coll["orders"]]
    return "\n".join(rows) + "\n"


def export_summary(exporter, coll, node, nnodes, priorities):
    return parse_summary(run_exporter(exporter, summary_job_text(coll, node, nnodes,
                                                                 priorities)))


def pace_chunks(bodies, window):
    """Bodies (peer, len) in posting order -> the chunks a window of bytes lets go at once (at
    least one body each)."""
    chunks, cur, used = [], [], 0
    for b in bodies:
        if cur and window and used + b[1] > window:
            chunks.append(cur)
            cur, used = [], 0
        cur.append(b)
        used += b[1]
    if cur:
        chunks.append(cur)
    return chunks


def paced_waves(senders, node, nodes, window, turns, urgency):
    """The waves of paced bodies: per wave, [(rank, [(peer, len)])]. senders: rank -> its
    remote bodies in posting order; urgency(rank, peer): where that reader reads rank's block.
    Without turns, wave k holds every rank's k-th chunk; with them, each node's chunks go one
    at a time, by (urgency of the chunk's first body, rank)."""
    chunks = {r: pace_chunks(b, window) for r, b in senders.items()}
    if not turns:
        n = max((len(c) for c in chunks.values()), default=0)
        return [[(r, c[k]) for r, c in chunks.items() if k < len(c)] for k in range(n)]
    per_node = [[] for _ in range(nodes)]
    for r, cs in chunks.items():
        for c in cs:
            per_node[node[r]].append((urgency(r, c[0][0]), r, c))
    for q in per_node:
        q.sort(key=lambda x: x[:2])
    n = max((len(q) for q in per_node), default=0)
    return [[(r, c) for q in per_node if k < len(q) for _, r, c in [q[k]]] for k in range(n)]


def land_and_read(arrivals, recv_order, order, read, call_end, p, after):
    """One T-NBC receiver: arrivals {source: time its body is in}; lands them in arrival order
    (posting order on ties) at landing_rate, a wake-up when the helper was idle, then reads.
    Returns (end, stall)."""
    pos = {s: i for i, s in enumerate(recv_order)}
    avail, t = {}, 0.0
    for s in sorted(arrivals, key=lambda s: (arrivals[s][0], pos.get(s, 0))):
        at, nbytes = arrivals[s]
        if at > t:
            t = at + p["wake"]
        t += nbytes / p["landing_rate"]
        avail[s] = t
    t, stall = call_end, 0.0
    for b in order:
        a = avail.get(b, 0.0)
        if a > t:
            stall += a - t + p["fault_cost"]
            t = a + p["fault_cost"]
        t += read(b)
    return t + after, stall


class NodeReplay(Replay):
    """A driver actor runs the waves; the results per rank come from the bundles' ends."""

    def start(self, bundles, share=1.0):
        """Start bundles {key: bytes}, key (..., src node, dst node); [(key, comm)]."""
        comms = []
        for k, nbytes in bundles.items():
            a, b = k[-2:]
            if nbytes > 0:
                wire = nbytes / share if a != b else nbytes
                comms.append((k, Comm.sendto_async(self.hosts[a], self.hosts[b],
                                                   max(1, int(wire)))))
        return comms

    @staticmethod
    def finish(comms):
        """Wait for started bundles; {key: end time}."""
        if comms:
            Comm.wait_all([c for _, c in comms])
        return {k: c.finish_time for k, c in comms}

    def posting(self, msgs, work=None):
        """The busiest rank's time to post msgs [(src, dst, bytes)] (msg_cost a message for
        another node, shm_msg_cost within one), with work {rank: seconds} of its own besides."""
        busy = dict(work or {})
        mc, shm = self.p["msg_cost"], self.p.get("shm_msg_cost", self.p["msg_cost"])
        for s, d, _ in msgs:
            busy[s] = busy.get(s, 0.0) + (mc if self.node[s] != self.node[d] else shm)
        return max(busy.values(), default=0.0)

    def wave(self, msgs, share=1.0, work=None):
        """One wave of messages [(src, dst, bytes)] at once; returns the bundles' ends. It lasts
        at least its busiest rank's posting (and work) plus a crossing."""
        if not msgs and not work:
            return {}
        t0 = Engine.clock
        bundles = {}
        for s, d, nbytes in msgs:
            k = (self.node[s], self.node[d])
            bundles[k] = bundles.get(k, 0) + nbytes
        ends = self.finish(self.start(bundles, share))
        floor = t0 + self.posting(msgs, work) + 2 * self.p["latency"]
        if Engine.clock < floor:
            this_actor.sleep_for(floor - Engine.clock)
        return ends

    # stock
    def stock_alltoall(self, ph, alg):
        counts = ph["counts"]
        if alg == "default":
            alg = alltoall_default(ph, self.size)
        share = self.progress_share(alg != "scattered")
        steps = [alltoall_steps(alg, r, counts) for r in range(self.size)]
        selfcopy = max(counts[r][r] for r in range(self.size)) / self.p["copy_rate"]
        this_actor.sleep_for(selfcopy)
        for k in range(len(steps[0])):
            copy = max(steps[r][k][2] for r in range(self.size))
            if copy:
                this_actor.sleep_for(copy / self.p["copy_rate"])
            self.wave([(r, d, b) for r in range(self.size) for d, b in steps[r][k][0]], share)

    # reorder + merge (src/mpi/coll/rm)
    def rm_exchange(self, ph, alg):
        """reorder: every message at once (its order changes which ends first, not the
        exchange's end). merge, reorder_merge: direct messages (within a node, or over
        MERGE_MAX) and each sender's stream per other node, split into aggregates by the
        library's planner, to that node's forwarder for the sender, packed (every sender sends
        every other node a stream, empty or not, its first aggregate announcing the direct
        messages); once all is in, each forwarder hands every other process of its node one
        message (a directory and its part, empty or not), which copies it out."""
        c = ph["counts"]
        msgs = [(s, d, c[s][d]) for s in range(self.size) for d in range(self.size)
                if c[s][d] and s != d]
        copy = self.p["copy_rate"]
        share = self.progress_share(False)          # the application's rank moves them
        selfcopy = {s: c[s][s] / copy for s in range(self.size)}
        if alg == "reorder":
            self.wave(msgs, share, selfcopy)
            return
        ranks = [[r for r in range(self.size) if self.node[r] == nd] for nd in range(self.nodes)]
        direct, streams = [], {}
        for s, d, nbytes in msgs:
            if self.node[s] == self.node[d] or nbytes > RM_MERGE_MAX:
                direct.append((s, d, nbytes))
            else:
                streams.setdefault((s, self.node[d]), []).append((d, nbytes))
        announced = {}
        for s, d, _ in direct:
            if self.node[s] != self.node[d]:
                announced[(s, self.node[d])] = announced.get((s, self.node[d]), 0) + 1
        aggs = self.rm_aggregates(c, streams, announced)
        one, work = list(direct), dict(selfcopy)
        handed = {(f, d): [0, 0] for nd in ranks for f in nd for d in nd if f != d}
        for (s, b), sizes in aggs.items():
            f = ranks[b][s % len(ranks[b])]
            one += [(s, f, nbytes) for nbytes in sizes]
            parts = streams.get((s, b), [])
            work[s] = work.get(s, 0.0) + sum(n for _, n in parts) / copy     # packing
            for d, nbytes in parts:
                h = handed.setdefault((f, d), [0, 0])
                h[0] += nbytes
                h[1] += 1
        self.wave(one, share, work)
        unpack, out = {}, {}
        for (f, d), (nbytes, _) in handed.items():
            unpack[f] = unpack.get(f, 0.0) + nbytes / copy
            out[d] = out.get(d, 0.0) + nbytes / copy
        # a directory: a count, then a source and its bytes per entry (rm_plan.c)
        self.wave([(f, d, nbytes + 8 * (1 + 2 * n)) for (f, d), (nbytes, n) in handed.items()
                   if f != d], share, unpack)
        this_actor.sleep_for(max(out.values(), default=0.0))

    def rm_aggregates(self, c, streams, announced):
        """{(sender, node): [bytes on the wire of each aggregate]} from rm_plan.c (exporter),
        for every sender and every other node."""
        graph = [[0] * self.nodes for _ in range(self.nodes)]
        for s in range(self.size):
            for d in range(self.size):
                graph[self.node[s]][self.node[d]] += c[s][d]
        keys = [(s, b) for s in range(self.size) for b in range(self.nodes)
                if b != self.node[s]]
        rows = ["merge %d %d %d" % (self.nodes, RM_FIRST_BYTES, RM_AGGREGATE_MAX)]
        rows += [" ".join(str(v) for v in row) for row in graph]
        rows.append(str(len(keys)))
        for s, b in keys:
            parts = [n for _, n in sorted(streams.get((s, b), []))]
            rows.append("%d %d %d %d %s" % (self.node[s], b, len(parts),
                                            announced.get((s, b), 0),
                                            " ".join(str(n) for n in parts)))
        out = run_exporter(self.job["exporter"], "\n".join(rows) + "\n").split("\n")
        return {k: [int(x) for x in line.split()[1:]] for k, line in zip(keys, out)}

    # T-NBC
    def tnbc_alltoall(self, ph, sums, t0):
        """Returns per rank (call end, {source: (arrival, bytes)})."""
        p = self.p
        cost = max(self.call_cost(r, ph) for r in range(self.size))
        this_actor.sleep_for(cost)
        pace = self.job.get("pace_bytes", 0) if not ph.get("order_unknown") else 0
        turns = self.job.get("arbitration", False) and not ph.get("order_unknown")
        paced = pace > 0 or turns
        edges = {}
        for r, s in enumerate(sums):
            for nd, nbytes in enumerate(s["edges"]):
                k = (self.node[r], nd)
                edges[k] = edges.get(k, 0) + nbytes
        at_once, senders = [], {}
        for r, s in enumerate(sums):
            for k, (peer, ln) in enumerate(s["bodies"]):
                if paced and self.node[peer] != self.node[r]:
                    senders.setdefault(r, []).append((peer, ln))
                else:
                    at_once.append((r, peer, ln, k))
        posting = max(s["sends"] for s in sums)
        start = Engine.clock
        # what goes besides bodies first (both orders post it first), then the bodies that go
        # at once, sharing the links with it; paced bodies start beside them
        both = {("e",) + k: v for k, v in edges.items()}
        for r, d, ln, _ in at_once:
            k = ("b", self.node[r], self.node[d])
            both[k] = both.get(k, 0) + ln
        first = self.start(both)
        arrivals = [{} for _ in range(self.size)]
        if paced:
            order = ph["orders"]
            pos = [None] * self.size

            def urgency(r, peer):
                if pos[peer] is None:
                    pos[peer] = {b: i for i, b in enumerate(order[peer])}
                return pos[peer][r]
            last = {}
            for w in paced_waves(senders, self.node, self.nodes, pace, turns, urgency):
                mine = {self.node[r]: r for r, _ in w}
                gap = self.pace_gap(not turns or any(last.get(nd) == r
                                                     for nd, r in mine.items()))
                last = mine
                msgs = [(r, peer, ln) for r, chunk in w for peer, ln in chunk]
                t = Engine.clock
                wends = self.wave(msgs)
                for r, peer, ln in msgs:
                    arrivals[peer][r] = (wends.get((self.node[r], self.node[peer]),
                                                   Engine.clock), ln)
                # k processes of a node send in this wave; out of step, as they are, one's gap
                # is covered by the others' chunks: a wave lasts max(T, gap + T / k)
                k = max(sum(1 for r, _ in w if self.node[r] == nd) for nd in range(self.nodes))
                this_actor.sleep_until(max(Engine.clock, t + gap + (Engine.clock - t) / k))
        ends = self.finish(first)
        posted = start + posting * p["msg_cost"]
        edge_in = [posted + 2 * p["latency"]] * self.nodes
        for (kind, a, b), t in ends.items():
            if kind == "e":
                edge_in[b] = max(edge_in[b], t)
        mc, hop = p["msg_cost"], 2 * p["latency"]
        for r, d, ln, k in at_once:
            # a body posted early finishes early: as much before its bundle's end as the rest
            # of its sender's posting takes, but not before it could cross alone
            sent = start + (sums[r]["sends"] + k + 1) * mc
            last = start + (sums[r]["sends"] + len(sums[r]["bodies"])) * mc
            end = ends.get(("b", self.node[r], self.node[d]), start)
            alone = ln / (p["rate"] if self.node[r] != self.node[d] else p["shm_rate"])
            arrivals[d][r] = (max(end - (last - sent), sent + hop + alone), ln)
        floor = start + (posting + max(len(s["bodies"]) for s in sums)) * p["msg_cost"] + \
            2 * p["latency"]
        if Engine.clock < floor:
            this_actor.sleep_for(floor - Engine.clock)
        call_end = [max(t0 + cost, edge_in[self.node[r]]) for r in range(self.size)]
        return call_end, arrivals

    def pace_gap(self, same_sender):
        """Between a paced wave's end and the next: the sender's helper sees the completion a
        wake-up late, its window frees an answer later and it sees that on its next poll; a
        node peer waiting for its turn sees the positions change on its next poll. Polls come
        every answer seconds: half of one on average."""
        p = self.p
        return p["wake"] + p["answer"] / 2 + (p["answer"] if same_sender else 0.0)

    def driver(self):
        for it in range(self.iters):
            t0 = Engine.clock
            clock = [t0] * self.size
            wait, stall = [0.0] * self.size, [0.0] * self.size
            for k, ph in enumerate(self.program):
                start = max(clock)      # every rank in step: a wave waits for the slowest
                if Engine.clock < start:
                    this_actor.sleep_until(start)
                if ph["op"] == "compute":
                    for r in range(self.size):
                        clock[r] += value_of(ph["s"], r)
                    continue
                if ph["op"] != "alltoallv":
                    raise ValueError("the node-level replay models Alltoall(v) only")
                after = lambda r: value_of(ph.get("after_s", 0.0), r)      # noqa: E731
                if self.config.startswith("tnbc") and not ph.get("blocking"):
                    call_end, arrivals = self.tnbc_alltoall(ph, self.sums[k], start)
                    for r in range(self.size):
                        lead = value_of(ph.get("lead_s", 0.0), r)
                        end, st = land_and_read(arrivals[r], self.sums[k][r]["recvs"],
                                                ph["orders"][r],
                                                lambda b: value_of(ph["read_s"], r, b),
                                                call_end[r] + lead, self.p, after(r))
                        wait[r] += call_end[r] - start + st
                        stall[r] += st
                        clock[r] = end
                    continue
                alg = self.config.partition("@")[2]
                if self.config.startswith("rm@") and not ph.get("blocking"):
                    self.rm_exchange(ph, alg)
                else:
                    self.stock_alltoall(ph, alg if self.config.startswith("stock@") else
                                        "default")
                for r in range(self.size):
                    wait[r] += Engine.clock - start
                    clock[r] = Engine.clock + value_of(ph.get("lead_s", 0.0), r) + \
                        sum(value_of(ph["read_s"], r, b) for b in ph["orders"][r]) + after(r)
            end = max(clock)
            if Engine.clock < end:
                this_actor.sleep_until(end)
            for r in range(self.size):
                self.record(it, r, clock[r] - t0, wait[r], stall[r])

    def run(self):
        job = self.job
        self.program, self.config = job["program"], job["config"]
        if self.config.startswith("rewrite"):
            raise ValueError("the node-level replay does not model the rewrite")
        self.sums = {}
        if self.config.startswith("tnbc"):
            for k, ph in enumerate(self.program):
                if ph["op"] == "alltoallv" and not ph.get("blocking"):
                    prio = job.get("priorities", False) and not ph.get("order_unknown")
                    self.sums[k] = export_summary(job["exporter"], ph, self.node, self.nodes,
                                                  prio)
        e = self.build()
        Actor.create("driver", self.hosts[0], self.driver)
        e.run()
        return self.summary()


if __name__ == "__main__":
    sys.exit(main(NodeReplay, "tnbc_node_replay"))
