#!/usr/bin/python3
##
## mpich-tnbc: one replay on SimGrid (maint/tnbc-predict runs it, one process per replay, since
## SimGrid allows one engine per process). Reads a job (JSON) on stdin, prints the result (JSON).
##
## The platform: NODES hosts in a star (SimGrid's flow-level CM02 model, max-min fair sharing),
## each node behind one full-duplex NIC of RATE payload bytes per second and LATENCY seconds
## each way; ranks of one node reach each other over a shared-memory link (SHM_RATE,
## SHM_LATENCY). Every message costs its sender MSG_COST seconds of its own time before it
## leaves, and moves once its receive is posted too (every algorithm here posts its receives
## first or at once, so this is the testbed's eager protocol, UCX_RNDV_THRESH=inf).
##
## The program, per iteration and rank: a barrier, then its phases: compute, or a collective
## followed by lead_s of computing (0 unless given), then reading its blocks, one by one in the
## rank's order, each taking its read time, then after_s of computing.
## Each collective runs as one configuration:
##   stock@ALG   MPICH 4.0.2's algorithm ALG, blocking: the application reads after it returns
##   rewrite     MPI_Irecv / MPI_Isend of every block, MPI_Wait before each read
##   tnbc        T-NBC: the schedules of the library's own builders (maint/tnbc_sched_export.c),
##               posted by a helper per rank in the library's order, one connection per pair of
##               processes (messages to a peer leave in posting order); the call returns once
##               the edge pieces are in (after guarding and copying, call_cost); a block read
##               before it has landed stalls until it has, plus the fault's cost. The helper
##               sees a completion WAKE seconds late when it was idle and lands each received
##               piece at LANDING_RATE. Pacing and node turns: class Pacer.
## A collective phase is an Alltoall unless it says "mpi": "alltoallv" (MPICH's default differs).
## Job keys: platform (costs), layout, program, config, iterations, priorities, arbitration,
## pace_bytes, exporter (maint/tnbc_sched_export.c built), simgrid_cfg (extra --cfg=... options).
## The result: per iteration, the largest and mean over ranks of the iteration time, the wait
## (in the collective plus stalled) and the stall.
##
import json
import os
import subprocess
import sys

try:
    from simgrid import (Engine, NetZone, LinkInRoute, Actor, Mailbox, Comm, this_actor,
                         Semaphore, Barrier)
except ImportError:             # the pure parts below stay usable (and tested) without it
    Engine = None


DEBUG = os.environ.get("TNBC_REPLAY_DEBUG")


# ---- schedules from the library's builders ----

def parse_schedules(text):
    """The exporter's output -> per rank {'body_prio', 'body_window', 'entries': [dict]}."""
    scheds, cur = [], None
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "rank":
            cur = {"rank": int(f[1]), "body_prio": int(f[3]), "body_window": int(f[4]),
                   "entries": []}
            scheds.append(cur)
        elif f[0] == "e":
            cur["entries"].append({
                "index": int(f[1]), "kind": f[2], "peer": int(f[3]), "off": int(f[4]),
                "len": int(f[5]), "prio": int(f[6]), "after": int(f[7]), "after2": int(f[8]),
                "tag": int(f[9]), "block": int(f[10]), "sub": int(f[11])})
    return scheds


def export_job_text(coll):
    """The exporter's stdin for one collective of the program."""
    size = len(coll["orders"])
    prio = 1 if coll.get("priorities") else 0
    if coll["op"] == "alltoallv":
        rows = ["alltoallv %d %d %d" % (size, 1 if coll.get("reports") else 0, prio)]
        rows += [" ".join(str(int(c)) for c in row) for row in coll["counts"]]
    else:
        rows = ["bcast %d %d %d %d %d" % (size, coll["root"], coll["bytes"], coll["segments"],
                                          prio)]
        rows.append(" ".join(str(r) for r in coll["tree_ranks"]))
    if prio:
        rows += [" ".join(str(b) for b in order) for order in coll.get("piece_orders",
                                                                       coll["orders"])]
    return "\n".join(rows) + "\n"


def run_exporter(exporter, job_text):
    """The exporter's output for one job (maint/tnbc_sched_export.c's input format)."""
    return subprocess.run([exporter], input=job_text, capture_output=True, text=True,
                          check=True).stdout


def export(exporter, coll):
    return parse_schedules(run_exporter(exporter, export_job_text(coll)))


# ---- stock MPICH 4.0.2 algorithms, as messages per step ----

ALLTOALL_THROTTLE = 32          # MPIR_CVAR_ALLTOALL_THROTTLE
ALLTOALL_SHORT = 256            # MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE
ALLTOALL_MEDIUM = 32768         # MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE
BCAST_SHORT = 12288             # MPIR_CVAR_BCAST_SHORT_MSG_SIZE
BCAST_LONG = 524288             # MPIR_CVAR_BCAST_LONG_MSG_SIZE
BCAST_MIN_PROCS = 8             # MPIR_CVAR_BCAST_MIN_PROCS


def alltoall_default(coll, size):
    """MPICH 4.0.2's choice for a phase: Alltoallv is scattered (its only other algorithm
    needs MPI_IN_PLACE); Alltoall by the block's size."""
    if coll.get("mpi") == "alltoallv":
        return "scattered"
    nbytes = coll["counts"][0][1 % size]
    if nbytes <= ALLTOALL_SHORT and size >= 8:
        return "brucks"
    return "scattered" if nbytes <= ALLTOALL_MEDIUM else "pairwise"


def bcast_default(nbytes, size, nodes):
    if nodes > 1 and size > nodes:
        return "smp"
    return bcast_flat_default(nbytes, size)


def bcast_flat_default(nbytes, size):
    if nbytes < BCAST_SHORT or size < BCAST_MIN_PROCS:
        return "binomial"
    pof2 = size & (size - 1) == 0
    if nbytes < BCAST_LONG and pof2:
        return "scatter_recursive_doubling_allgather"
    return "scatter_ring_allgather"


def alltoall_steps(alg, rank, counts):
    """Steps of (sends [(peer, bytes)], recvs [(peer, bytes)], copy bytes) for one rank."""
    size = len(counts)
    if alg == "scattered":
        # MPICH posts no message for a zero count: a batch without any costs nothing
        steps = []
        for first in range(1, size, ALLTOALL_THROTTLE):
            idx = range(first, min(first + ALLTOALL_THROTTLE, size))
            sends = [((rank + i) % size, counts[rank][(rank + i) % size]) for i in idx]
            recvs = [((rank - i) % size, counts[(rank - i) % size][rank]) for i in idx]
            steps.append(([m for m in sends if m[1]], [m for m in recvs if m[1]], 0))
        return steps
    if alg == "pairwise":
        pof2 = size & (size - 1) == 0
        steps = []
        for i in range(1, size):
            dst = rank ^ i if pof2 else (rank + i) % size
            src = rank ^ i if pof2 else (rank - i) % size
            steps.append(([(dst, counts[rank][dst])], [(src, counts[src][rank])], 0))
        return steps
    if alg == "brucks":
        # log2 rounds, each moving the blocks whose (rotated) index has the round's bit,
        # packed and unpacked; uniform sizes (Bruck is Alltoall only)
        b = counts[rank][(rank + 1) % size] if size > 1 else 0
        steps, k = [], 1
        while k < size:
            nblk = sum(1 for i in range(size) if i & k)
            steps.append(([((rank + k) % size, nblk * b)], [((rank - k) % size, nblk * b)],
                          2 * nblk * b))
            k *= 2
        steps[0] = (steps[0][0], steps[0][1], steps[0][2] + 2 * size * b)    # rotations
        return steps
    raise ValueError("no Alltoall algorithm %r" % alg)


def binomial_children(vrank, size):
    out, mask = [], 1
    while mask < size:
        if vrank & mask:
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if vrank + mask < size:
            out.append(vrank + mask)
        mask >>= 1
    return out


def binomial_parent(vrank):
    if vrank == 0:
        return -1
    mask = 1
    while not vrank & mask:
        mask <<= 1
    return vrank - mask


# ---- the replay ----

class Replay:
    def __init__(self, job):
        self.job = job
        p = job["platform"]
        lay = job["layout"]
        self.nodes, self.ppn = lay["nodes"], lay["ppn"]
        self.size = self.nodes * self.ppn
        if lay["placement"] == "block":
            self.node = [r // self.ppn for r in range(self.size)]
        else:
            self.node = [r % self.nodes for r in range(self.size)]
        self.p = p
        self.iters = job.get("iterations", 2)
        self.results = []           # per iteration: per rank (total, wait, stall)
        self.handles = {}           # per operation: the receives' payload slots

    # platform
    def build(self):
        e = Engine(["tnbc-replay", "--cfg=network/model:CM02",
                    "--cfg=network/crosstraffic:0", "--log=root.thres:critical",
                    "--cfg=network/TCP-gamma:0"] + self.job.get("simgrid_cfg", []))
        z = NetZone.create_star_zone("cluster")
        self.hosts = []
        for n in range(self.nodes):
            h = z.create_host("node%d" % n, 1.0)
            h.core_count = self.ppn
            h.seal()
            nic = z.create_split_duplex_link("nic%d" % n, self.p["rate"])
            nic.set_latency(self.p["latency"])
            nic.seal()
            z.add_route(h.netpoint, None, None, None,
                        [LinkInRoute(nic, LinkInRoute.Direction.UP)], True)
            shm = z.create_link("shm%d" % n, self.p["shm_rate"])
            shm.set_latency(self.p["shm_latency"])
            shm.seal()
            z.add_route(h.netpoint, h.netpoint, None, None, [LinkInRoute(shm)], False)
            self.hosts.append(h)
        z.seal()
        return e

    def mailbox(self, seq, src, dst, tag):
        return Mailbox.by_name("%d:%d>%d:%d" % (seq, src, dst, tag))

    def put(self, seq, src, dst, tag, nbytes):
        if self.p["msg_cost"] > 0:
            this_actor.sleep_for(self.p["msg_cost"])
        wire = nbytes / self.share[src] if self.node[src] != self.node[dst] else nbytes
        return self.mailbox(seq, src, dst, tag).put_async(None, max(1, int(wire)))

    def get(self, seq, src, dst, tag):
        comm, handle = self.mailbox(seq, src, dst, tag).get_async()
        self.handles.setdefault(seq, []).append(handle)   # the comm writes into it: keep it
        return comm

    # stock algorithms, run by the application itself
    def rank_progress(self, rank, one_peer):
        """A rank that progresses its own messages gets this share of a link: the testbed's
        CPU shares (1 on a core per rank), less when each of its steps talks to one peer at a
        time (calibrated on pairwise; every stock algorithm but scattered is so), since
        nothing else fills the link while that peer is held out of its CPU. T-NBC's helper
        runs apart (1)."""
        self.share[rank] = self.progress_share(one_peer)

    def progress_share(self, one_peer):
        many = self.p.get("stock_share", 1.0)
        return self.p.get("stock_share_single", many) if one_peer else many

    def stock_alltoall(self, rank, coll, alg, seq):
        counts = coll["counts"]
        if alg == "default":
            alg = alltoall_default(coll, self.size)
        self.rank_progress(rank, alg != "scattered")
        if counts[rank][rank]:
            this_actor.sleep_for(counts[rank][rank] / self.p["copy_rate"])
        for sends, recvs, copy in alltoall_steps(alg, rank, counts):
            if copy:
                this_actor.sleep_for(copy / self.p["copy_rate"])
            comms = [self.get(seq, src, rank, 0) for src, _ in recvs]
            comms += [self.put(seq, rank, dst, 0, b) for dst, b in sends]
            Comm.wait_all(comms)

    def stock_bcast(self, rank, coll, alg, seq):
        n, root = coll["bytes"], coll["root"]
        if alg == "default":
            alg = bcast_default(n, self.size, self.nodes)
        self.rank_progress(rank, True)
        if alg == "smp":
            self.bcast_smp(rank, coll, seq)
        elif alg == "binomial":
            self.bcast_binomial(rank, list(range(self.size)), root, n, seq, 0)
        elif alg in ("scatter_recursive_doubling_allgather", "scatter_ring_allgather"):
            self.bcast_scatter_allgather(rank, root, n, seq, alg)
        else:
            raise ValueError("no Bcast algorithm %r" % alg)

    def bcast_binomial(self, rank, group, root, n, seq, tag):
        size = len(group)
        me = group.index(rank)
        vr = (me - group.index(root)) % size
        par = binomial_parent(vr)
        if par >= 0:
            self.get(seq, group[(par + group.index(root)) % size], rank, tag).wait()
        for c in binomial_children(vr, size):      # MPIC_Send: one child after another
            self.put(seq, rank, group[(c + group.index(root)) % size], tag, n).wait()

    def bcast_smp(self, rank, coll, seq):
        n, root = coll["bytes"], coll["root"]
        leaders = []
        for nd in range(self.nodes):
            ranks = [r for r in range(self.size) if self.node[r] == nd]
            leaders.append(root if self.node[root] == nd else ranks[0])
        mine = [r for r in range(self.size) if self.node[r] == self.node[rank]]
        leader = leaders[self.node[rank]]
        if rank in leaders:
            self.bcast_binomial(rank, leaders, root, n, seq, 1)
        self.bcast_binomial(rank, mine, leader, n, seq, 2)

    def bcast_scatter_allgather(self, rank, root, n, seq, alg):
        size = self.size
        chunk = -(-n // size)
        vr = (rank - root) % size
        real = lambda v: (v + root) % size          # noqa: E731
        # binomial scatter: each subtree gets its chunks
        par = binomial_parent(vr)
        def span(v):
            mask = 1
            while mask < size and not v & mask:
                mask <<= 1
            return min(mask if v else size, size - v)
        if par >= 0:
            self.get(seq, real(par), rank, 0).wait()
        for c in binomial_children(vr, size):      # MPIC_Send: one child after another
            self.put(seq, rank, real(c), 0, min(n, span(c) * chunk)).wait()
        if alg == "scatter_ring_allgather":
            left, right = real((vr - 1) % size), real((vr + 1) % size)
            for _ in range(size - 1):
                Comm.wait_all([self.get(seq, left, rank, 1), self.put(seq, rank, right, 1,
                                                                          chunk)])
        else:
            mask = 1
            while mask < size:
                peer = vr ^ mask
                if peer < size:
                    Comm.wait_all([self.get(seq, real(peer), rank, 1),
                                   self.put(seq, rank, real(peer), 1, chunk * mask)])
                mask <<= 1

    def rewrite_exchange(self, rank, ph, seq):
        """The user's rewrite (tnbc_kernels.c, TNBC_KERNELS_P2P): MPI_Irecv from every rank,
        MPI_Isend to every rank in ring order, then MPI_Wait for each block right before it is
        read. rewrite: MPICH's progress thread moves the messages meanwhile (a rank
        progressing its own: stock_share); rewrite@noasync: a message moves only once its
        receiver waits for it. Returns the time spent waiting."""
        if ph["op"] != "alltoallv":
            raise ValueError("the rewrite is modeled for Alltoall(v) only")
        counts, size = ph["counts"], self.size
        self.rank_progress(rank, False)
        lazy = self.config == "rewrite@noasync"
        waited = 0.0
        recvs = {} if lazy else {s: self.get(seq, s, rank, 0) for s in range(size) if s != rank}
        sends = [self.put(seq, rank, (rank + k) % size, 0, counts[rank][(rank + k) % size])
                 for k in range(1, size)]
        this_actor.sleep_for(value_of(ph.get("lead_s", 0.0), rank))
        for b in ph["orders"][rank]:
            t = Engine.clock
            if b == rank:
                this_actor.sleep_for(counts[rank][rank] / self.p["copy_rate"])
            else:
                c = recvs.get(b) or self.get(seq, b, rank, 0)
                c.wait()
            waited += Engine.clock - t
            this_actor.sleep_for(value_of(ph["read_s"], rank, b) * self.p.get("async_slowdown",
                                                                                1.0))
        t = Engine.clock
        Comm.wait_all(sends)
        return waited + Engine.clock - t

    # T-NBC
    def tnbc_helper(self, rank, sched, seq, state):
        """Post the schedule in the library's order; land what arrives; tell the reader."""
        entries = {e["index"]: e for e in sched["entries"]}
        done, posted, inflight = set(), set(), []
        body = lambda e: sched["body_prio"] > 0 and e["prio"] >= sched["body_prio"]  # noqa
        pace = state["pace"]
        order = [e["index"] for e in sched["entries"]]

        def ready(e):
            return all(d < 0 or d in done for d in (e["after"], e["after2"]))

        unposted = list(order)

        def post_ready():
            for i in list(unposted):
                e = entries[i]
                if not ready(e):
                    continue
                if e["kind"] in ("copy", "reduce"):
                    this_actor.sleep_for(e["len"] / self.p["copy_rate"])
                    posted.add(i)
                    finish(e)
                    continue
                if e["kind"] == "send":
                    remote = self.node[e["peer"]] != self.node[rank]
                    if pace and body(e) and remote:
                        pace.request(rank, e, state["urgency"](rank, e), seq)
                        posted.add(i)
                        continue
                    posted.add(i)
                    send(e)
                    continue
                posted.add(i)
                inflight.append((self.get(seq, e["peer"], rank, e["tag"]), e))
            unposted[:] = [j for j in unposted if j not in posted]

        # one connection per pair of processes (TCP, an endpoint's ordered lane): the
        # messages to one peer leave one after another, in posting order
        channel, busy = {}, set()

        def send(e):
            if self.p.get("pair_fifo", 1) and e["peer"] in busy:
                channel.setdefault(e["peer"], []).append(e)
                return
            busy.add(e["peer"])
            inflight.append((self.put(seq, rank, e["peer"], e["tag"], e["len"]), e))

        def sent(e):
            busy.discard(e["peer"])
            if channel.get(e["peer"]):
                send(channel[e["peer"]].pop(0))

        def finish(e):
            done.add(e["index"])
            if e["kind"] != "send" and e["sub"] >= 0:
                state["landed"](rank, e)

        post_ready()
        idle_since = [Engine.clock]     # completions before this need no new wake-up
        while len(done) < len(entries):
            granted = pace.granted(rank) if pace else []
            for e in granted:
                send(e)
            if not inflight:
                if pace:
                    pace.wait(rank)
                    continue
                raise RuntimeError("rank %d: schedule stuck" % rank)
            comms = [c for c, _ in inflight]
            if pace:
                i = Comm.wait_any_for(comms, pace.poll_s)
                if i < 0:
                    continue
            else:
                i = Comm.wait_any(comms)
            if self.p["wake"] > 0 and Engine.clock > idle_since[0]:
                this_actor.sleep_for(self.p["wake"])    # it slept: the wake-up costs
            c, e = inflight.pop(i)
            if e["kind"] == "recv" and e["sub"] >= 0:
                this_actor.sleep_for(e["len"] / self.p["landing_rate"])
            if pace and e["kind"] == "send" and body(e) and \
                    self.node[e["peer"]] != self.node[rank]:
                pace.delivered(rank, e)
            if e["kind"] == "send":
                sent(e)
            finish(e)
            post_ready()
            idle_since[0] = Engine.clock

    # the application
    def run(self):
        job = self.job
        self.program = job["program"]
        self.config = job["config"]
        self.share = [1.0] * self.size     # per rank: set by the algorithm it runs now
        self.schedules = {}
        if self.config.startswith("tnbc"):
            for k, ph in enumerate(self.program):
                if ph["op"] != "compute":
                    self.schedules[k] = self.tnbc_schedules(ph)
        e = self.build()
        self.barrier = Barrier(self.size)
        self.work = {r: [] for r in range(self.size)}
        self.work_sem = {r: Semaphore(0) for r in range(self.size)}
        self.pace = None
        pace_bytes, arbitration = job.get("pace_bytes", 0), job.get("arbitration", False)
        if self.config.startswith("tnbc") and (pace_bytes > 0 or arbitration):
            self.pace = Pacer(self, pace_bytes, self.p.get("answer", 0.0) if pace_bytes else 0.0,
                              turns=arbitration)
        for r in range(self.size):
            if self.config.startswith("tnbc"):
                helper = Actor.create("helper%d" % r, self.hosts[self.node[r]], self.helper_main,
                                      r)
                helper.daemonize()      # it waits for work for ever; the ranks end the run
        for r in range(self.size):
            Actor.create("rank%d" % r, self.hosts[self.node[r]], self.app_main, r)
        e.run()
        return self.summary()

    def tnbc_schedules(self, ph):
        coll = dict(ph)
        coll["priorities"] = self.job.get("priorities", False) and not ph.get("order_unknown")
        if coll["op"] == "bcast":
            # piece order from the block order: a piece goes when the first block it overlaps
            # is read (the edges first anyway)
            first = export(self.job["exporter"], dict(coll, priorities=False))
            pieces = sorted({(e["block"], e["off"], e["len"]) for s in first
                             for e in s["entries"] if e["kind"] == "recv" and e["sub"] >= 0})
            orders = []
            for r in range(self.size):
                blocks = ph["blocks"][r]
                when = {}
                for pos, b in enumerate(ph["orders"][r]):
                    off, ln = blocks[b]
                    for pc, poff, plen in pieces:
                        if poff < off + ln and off < poff + plen and pc not in when:
                            when[pc] = pos
                orders.append(sorted(when, key=lambda pc: (when[pc], pc)))
            coll["piece_orders"] = orders
        return export(self.job["exporter"], coll)

    def call_cost(self, rank, ph):
        """What a T-NBC call spends before its edges: a fixed part, the receive buffer's guard,
        and the send buffer's copy (up to MPIR_CVAR_TNBC_SEND_COPY_MAX) or guard."""
        if ph["op"] == "alltoallv":
            sent, received = sum(ph["counts"][rank]), sum(ln for _, ln in ph["blocks"][rank])
        else:
            sent = ph["bytes"] if rank == ph["root"] else 0
            received = 0 if rank == ph["root"] else ph["bytes"]
        mib, p = 1 << 20, self.p
        guard, copy = p.get("guard_s_per_mib", 0.0), p.get("send_copy_s_per_mib", 0.0)
        send = copy if sent <= p.get("send_copy_max", 0) else guard
        return p["call_cost"] + (received * guard + sent * send) / mib

    def helper_main(self, rank):
        while True:
            self.work_sem[rank].acquire()
            sched, seq, state = self.work[rank].pop(0)
            self.tnbc_helper(rank, sched, seq, state)

    def app_main(self, rank):
        try:
            self.app_iterations(rank)
        except Exception as exc:          # an exception would abort the whole simulation
            sys.stderr.write("tnbc_replay: rank %d: %r\n" % (rank, exc))
            raise

    def app_iterations(self, rank):
        for it in range(self.iters):
            self.barrier.wait()
            if rank == 0:               # every receive of the last iteration has completed
                for old in [q for q in self.handles if q < it * len(self.program)]:
                    del self.handles[old]
            t0, wait, stall = Engine.clock, 0.0, 0.0
            for k, ph in enumerate(self.program):
                if ph["op"] == "compute":
                    this_actor.sleep_for(value_of(ph["s"], rank))
                    continue
                seq = it * len(self.program) + k
                t = Engine.clock
                if self.config.startswith("rewrite") and not ph.get("blocking"):
                    wait += self.rewrite_exchange(rank, ph, seq)
                elif self.config.startswith("tnbc"):
                    w, st = self.tnbc_call(rank, ph, k, seq)
                    wait, stall = wait + w, stall + st
                else:
                    alg = self.config.partition("@")[2] if self.config.startswith("stock") \
                        else ""
                    if ph["op"] == "alltoallv":
                        self.stock_alltoall(rank, ph, alg or "default", seq)
                    else:
                        self.stock_bcast(rank, ph, alg or "default", seq)
                    wait += Engine.clock - t
                    this_actor.sleep_for(value_of(ph.get("lead_s", 0.0), rank))
                    for b in ph["orders"][rank]:
                        this_actor.sleep_for(value_of(ph["read_s"], rank, b))
                this_actor.sleep_for(value_of(ph.get("after_s", 0.0), rank))
            self.record(it, rank, Engine.clock - t0, wait, stall)

    def tnbc_call(self, rank, ph, k, seq):
        sched = self.schedules[k][rank]
        t = Engine.clock
        this_actor.sleep_for(self.call_cost(rank, ph))
        blocks = ph["blocks"][rank]
        need = [0] * len(blocks)
        piece_blocks = {}
        edges_left = [0]
        for e in sched["entries"]:
            if e["sub"] < 0 or e["kind"] == "send":
                continue
            bs = [b for b, (off, ln) in enumerate(blocks)
                  if e["off"] < off + ln and off < e["off"] + e["len"]]
            piece_blocks[e["index"]] = bs
            for b in bs:
                need[b] += 1
            if not (sched["body_prio"] > 0 and e["prio"] >= sched["body_prio"]):
                edges_left[0] += 1
        waiting = {}
        edges_sem = Semaphore(0)

        def landed(r, e):
            if DEBUG:           # TNBC_REPLAY_DEBUG=1: every landed piece, on stderr
                sys.stderr.write("%.6f rank %d landed %s\n" % (Engine.clock, r, e))
            if not (sched["body_prio"] > 0 and e["prio"] >= sched["body_prio"]):
                edges_left[0] -= 1
                if edges_left[0] == 0:
                    edges_sem.release()
            for b in piece_blocks.get(e["index"], []):
                need[b] -= 1
                if need[b] == 0 and b in waiting:
                    waiting.pop(b).release()

        order = ph["orders"]
        paced = ph["op"] == "alltoallv" and not ph.get("order_unknown")
        state = {"landed": landed, "pace": self.pace if paced else None,
                 "urgency": lambda r, e: order[e["peer"]].index(r)}
        self.work[rank].append((sched, seq, state))
        self.work_sem[rank].release()
        if edges_left[0] > 0:
            edges_sem.acquire()
        wait = Engine.clock - t
        stall = 0.0
        this_actor.sleep_for(value_of(ph.get("lead_s", 0.0), rank))
        for b in order[rank]:
            if need[b] > 0:
                ts = Engine.clock
                waiting[b] = Semaphore(0)
                waiting[b].acquire()
                this_actor.sleep_for(self.p["fault_cost"])
                stall += Engine.clock - ts
            this_actor.sleep_for(value_of(ph["read_s"], rank, b))
        return wait + stall, stall

    def record(self, it, rank, total, wait, stall):
        while len(self.results) <= it:
            self.results.append({})
        self.results[it][rank] = (total, wait, stall)

    def summary(self):
        out = []
        for per_rank in self.results:
            vals = list(per_rank.values())
            n = len(vals)
            out.append({"total": max(v[0] for v in vals), "wait": max(v[1] for v in vals),
                         "stall": max(v[2] for v in vals),
                         "wait_mean": sum(v[1] for v in vals) / n,
                         "stall_mean": sum(v[2] for v in vals) / n})
        return {"iterations": out}


def value_of(v, rank, block=None):
    """A scalar, a per-rank list, or a per-rank list of per-block lists."""
    if isinstance(v, list):
        v = v[rank]
        if isinstance(v, list):
            v = v[block]
    return float(v)


class Pacer:
    """Bodies for other nodes held back (tnbc_flow.c, tnbc_node.c). Pacing: a process keeps at
    most window bytes of them undelivered (at least one body), most urgent first, and learns
    of a delivery answer seconds after it. Node turns (arbitration): a process holds its
    bodies while a node peer in the same operation with a more urgent position (that of its
    most urgent undelivered body; ties: the lower rank) has bodies undelivered."""

    def __init__(self, replay, window, answer, turns):
        self.r = replay
        self.window, self.answer, self.turns = window, answer, turns
        self.poll_s = max(answer, 1e-5) if answer > 0 else 1e-4
        ranks = range(replay.size)
        self.peers = {r: [q for q in ranks if replay.node[q] == replay.node[r]] for r in ranks}
        self.queue = {r: [] for r in ranks}        # held: (urgency, index, entry)
        self.flying = {r: {} for r in ranks}       # undelivered, sent: index -> urgency
        self.bytes = {r: 0 for r in ranks}         # in flight as the sender knows it
        self.known = {r: [] for r in ranks}        # (time the sender learns, bytes)
        self.out = {r: [] for r in ranks}
        self.op = {}

    def request(self, rank, e, urgency, seq):
        if self.op.get(rank) != seq:
            self.op[rank] = seq
        self.queue[rank].append((urgency, e["index"], e))
        self.queue[rank].sort(key=lambda q: q[:2])
        self.dispatch_node(rank)

    def position(self, rank):
        urg = [q[0] for q in self.queue[rank]] + list(self.flying[rank].values())
        return min(urg) if urg else None

    def may_send(self, rank):
        if not self.turns:
            return True
        mine = (self.position(rank), rank)
        op = self.op.get(rank)
        for q in self.peers[rank]:
            if q == rank or self.op.get(q) != op:
                continue
            pos = self.position(q)
            if pos is not None and (pos, q) < mine:
                return False
        return True

    def dispatch(self, rank):
        now = Engine.clock
        for t, b in list(self.known[rank]):
            if t <= now:
                self.known[rank].remove((t, b))
                self.bytes[rank] -= b
        while self.queue[rank] and self.may_send(rank):
            urgency, index, e = self.queue[rank][0]
            if self.window and self.bytes[rank] and self.bytes[rank] + e["len"] > self.window:
                break
            self.queue[rank].pop(0)
            self.bytes[rank] += e["len"]
            self.flying[rank][index] = urgency
            self.out[rank].append(e)

    def dispatch_node(self, rank):
        for q in self.peers[rank]:
            self.dispatch(q)

    def granted(self, rank):
        self.dispatch_node(rank)
        out, self.out[rank] = self.out[rank], []
        return out

    def wait(self, rank):
        this_actor.sleep_for(self.poll_s)

    def delivered(self, rank, e):
        self.flying[rank].pop(e["index"], None)
        self.known[rank].append((Engine.clock + self.answer, e["len"]))
        self.dispatch_node(rank)

def main(replay_class=Replay, name="tnbc_replay"):
    """Read a job on stdin, replay it with replay_class, print the result."""
    job = json.load(sys.stdin)
    if Engine is None:
        sys.stderr.write("%s: the SimGrid Python module is missing "
                         "(apt-get install python3-simgrid; run with /usr/bin/python3)\n" % name)
        return 2
    json.dump(replay_class(job).run(), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
