##
## mpich-tnbc: how long an irregular exchange (Alltoallv, Alltoall) takes with stock MPICH's
## algorithms and with reorder + merge, on a cluster described by a handful of costs (the
## priorities issue's model, item 4). Pure Python, no MPI: maint/exchange-model prints it and
## checks it against maint/bench-exchange reports, test/maint/test-exchange-model tests it.
##
## The job: NODES x PPN ranks in block placement (rank r on node r // PPN), every rank sending
## counts[src][dst] bytes (the workloads of test/mpi/tnbc/bench/tnbc_exchange.c). The cluster:
##   rate        payload bytes per second of a node link, each direction
##   latency     one dependent step across nodes: wire plus the software's wake-up
##   msg         what one message costs the software at each end (posting, matching, the TCP
##               or verbs path), across nodes
##   shm_msg     the same within a node (shared memory)
##   node_latency one dependent step within a node
##   copy        bytes per second one process copies (packing, unpacking, shared memory)
##   nic_msg     what one message costs a node link besides its bytes (headers, the NIC)
##
## An exchange takes as long as its busiest resource, plus one latency per dependent step
## (a bottleneck model; no contention beyond the links' fair share). A message costs msg at its
## sender and at its receiver, and MSG_HEADER bytes on the wire. Only what runs without
## MPI_IN_PLACE is modeled (pairwise_sendrecv_replace needs it: MPICH runs its default instead).
##   reorder: every message at once: latency + max(the busiest process's messages and copies,
##       the busiest link's bytes and messages);
##   scattered: rounds of at most THROTTLE peers, each process waiting only for its own: the
##       busiest process's rounds (a latency and its messages each) or the links, whichever is
##       longer (a lower bound: rounds that load the same links at once take longer);
##   pairwise (Alltoall): size - 1 rounds, in round k every process sends to rank + k (rank ^ k
##       on a power of two);
##   brucks (Alltoall): log2(size) rounds, each moving half the blocks, packed and unpacked;
##   merge (merge, reorder_merge): messages of at most MERGE_MAX bytes for a remote node go as
##       one stream of growing aggregates to a forwarder there, which then hands each process of
##       its node one message: round one as all at once with the aggregates as messages (and
##       the packing copied), round two (after the last aggregate) the forwarders' copies and
##       their node_latency + shm_msg per process.
##

import math

THROTTLE = 32               # MPIR_CVAR_ALLTOALL_THROTTLE's default in MPICH 4.0.2
MERGE_MAX = 4096            # MPIR_CVAR_REORDER_MERGE_MSG_MAX
FIRST_BYTES = 4096          # MPIR_CVAR_REORDER_MERGE_FIRST_BYTES
AGGREGATE_MAX = 1048576     # MPIR_CVAR_REORDER_MERGE_AGGREGATE_MAX
AGG_HEADER = 8              # an aggregate's header (rm_plan.c) ...
FRAG_HEADER = 32            # ... and each fragment's descriptor (rm_plan.h)
MSG_HEADER = 32             # what any message adds on the wire (transport and UCX headers)
WORKLOADS = ("small", "uniform", "skewed", "stencil2d", "stencil3d", "particles")
ALGORITHMS = ("scattered", "pairwise", "brucks", "reorder", "merge", "reorder_merge")


class Cluster:
    def __init__(self, rate, latency, msg, shm_msg=None, node_latency=None, copy=5e9,
                 nic_msg=0.0):
        if rate <= 0 or copy <= 0 or min(latency, msg, nic_msg) < 0:
            raise ValueError("bad cluster")
        self.rate, self.latency, self.msg, self.copy, self.nic_msg = rate, latency, msg, copy, \
            nic_msg
        self.shm_msg = msg if shm_msg is None else shm_msg
        self.node_latency = latency if node_latency is None else node_latency


# ---- workloads: tnbc_exchange.c's bytes_of ----------------------------------------------------

def _mix(x):
    x &= 0xffffffff
    x ^= x >> 16
    x = (x * 0x7feb352d) & 0xffffffff
    x ^= x >> 15
    x = (x * 0x846ca68b) & 0xffffffff
    return x ^ (x >> 16)


def dims_create(size, ndims):
    """A balanced grid as MPI_Dims_create makes it (dims non-increasing)."""
    dims, n, f = [1] * ndims, size, 2
    primes = []
    while n > 1:
        while n % f == 0:
            primes.append(f)
            n //= f
        f += 1
    for p in sorted(primes, reverse=True):
        dims[dims.index(min(dims))] *= p
    return sorted(dims, reverse=True)


def _is_neighbour(a, b, dims):
    diff = step = 0
    for d in range(len(dims) - 1, -1, -1):
        ca, cb = a % dims[d], b % dims[d]
        a //= dims[d]
        b //= dims[d]
        delta = (cb - ca) % dims[d]
        if delta:
            diff += 1
            step = delta == 1 or delta == dims[d] - 1
    return diff == 1 and step


def counts(workload, size, nbytes, iteration=0):
    """counts[src][dst]: the bytes src sends dst in the workload's iteration."""
    if workload in ("uniform", "small"):
        return [[nbytes] * size for _ in range(size)]
    if workload == "skewed":
        return [[nbytes if (s + 2 * d) % 7 == 0 else nbytes // 64 for d in range(size)]
                for s in range(size)]
    if workload in ("stencil2d", "stencil3d"):
        dims = dims_create(size, 2 if workload == "stencil2d" else 3)
        return [[nbytes if _is_neighbour(s, d, dims) else 0 for d in range(size)]
                for s in range(size)]
    if workload == "particles":
        out = []
        for s in range(size):
            row = []
            for d in range(size):
                h = _mix(s * 7919 + d * 131 + iteration * 104729)
                row.append(h % nbytes if h % 4 == 0 else 0)
            out.append(row)
        return out
    raise ValueError("workload must be one of %s, not %r" % (", ".join(WORKLOADS), workload))


# ---- the algorithms ---------------------------------------------------------------------------

def _aggregates(total, alpha, first=FIRST_BYTES, cap=AGGREGATE_MAX):
    """How many aggregates MPIR_Rm_split makes of a stream of total bytes (one if empty)."""
    n, t = 1, min(max(first, 1), cap)
    while total > t:
        total -= t
        nxt = t * max(alpha, 1.0)
        t = cap if nxt >= cap else int(max(nxt, t + 1))
        n += 1
    return n


def _alpha(node_bytes, a, b):
    """1.5 + log2(max(out-degree of node a, in-degree of node b)) in the node graph."""
    nodes = len(node_bytes)
    out = sum(1 for c in range(nodes) if c != a and node_bytes[a][c] > 0)
    inn = sum(1 for c in range(nodes) if c != b and node_bytes[c][b] > 0)
    return 1.5 + math.log2(max(out, inn, 1))


class _Load:
    """What one round asks of each process and each node link, counted: its time on a cluster
    is one latency plus the busiest process's or link's work."""

    def __init__(self, nodes, size):
        self.msgs = [0] * size          # messages across nodes, sent or received
        self.shm = [0] * size           # messages within a node
        self.copied = [0] * size        # bytes copied
        self.up = [0] * nodes           # bytes a node sends
        self.down = [0] * nodes
        self.up_msgs = [0] * nodes
        self.down_msgs = [0] * nodes
        self.remote = False

    def message(self, node, src, dst, nbytes):
        """A message src -> dst of nbytes (a process's message to itself costs a copy)."""
        if src == dst:
            self.copied[src] += nbytes
        elif node[src] == node[dst]:
            for p in (src, dst):
                self.shm[p] += 1
                self.copied[p] += nbytes
        else:
            self.remote = True
            self.msgs[src] += 1
            self.msgs[dst] += 1
            self.up[node[src]] += nbytes + MSG_HEADER
            self.down[node[dst]] += nbytes + MSG_HEADER
            self.up_msgs[node[src]] += 1
            self.down_msgs[node[dst]] += 1

    def work(self, cl):
        cpu = max(m * cl.msg + s * cl.shm_msg + b / cl.copy
                  for m, s, b in zip(self.msgs, self.shm, self.copied))
        link = max(max(b / cl.rate + m * cl.nic_msg for b, m in zip(self.up, self.up_msgs)),
                   max(b / cl.rate + m * cl.nic_msg for b, m in zip(self.down, self.down_msgs)))
        return max(cpu, link)

    def time(self, cl):
        return (cl.latency if self.remote else cl.node_latency) + self.work(cl)


class _Rounds:
    """Rounds one after another."""

    def __init__(self, rounds, copied=0):
        self.rounds, self.copied = rounds, copied

    def time(self, cl):
        return sum(r.time(cl) for r in self.rounds) + self.copied / cl.copy


def _at_once(node, c, nodes):
    size = len(c)
    load = _Load(nodes, size)
    for p in range(size):
        for dst in range(size):
            if c[p][dst] or dst == p:
                load.message(node, p, dst, c[p][dst])
    return _Rounds([load])


class _Scattered:
    """MPICH's scattered: rounds of THROTTLE peers (receives from p + i, sends to p - i), each
    process waiting for its own round's messages only; the links carry everything."""

    def __init__(self, node, c, nodes):
        size = len(c)
        self.links = _Load(nodes, size)
        self.rounds = []
        for first in range(0, size, THROTTLE):
            load = _Load(nodes, size)
            for p in range(size):
                for i in range(first, min(first + THROTTLE, size)):
                    dst = (p - i) % size
                    if c[p][dst] or i == 0:
                        load.message(node, p, dst, c[p][dst])
                        self.links.message(node, p, dst, c[p][dst])
            self.rounds.append(load)

    def time(self, cl):
        def wait(r, p):         # a round with nothing to wait for returns at once
            return cl.latency if r.msgs[p] else cl.node_latency if r.shm[p] else 0.0
        busiest = max(sum(wait(r, p) + r.msgs[p] * cl.msg + r.shm[p] * cl.shm_msg +
                          r.copied[p] / cl.copy for r in self.rounds)
                      for p in range(len(self.links.msgs)))
        return max(busiest, self.links.time(cl))


def _pairwise_rounds(node, c, nodes):
    size = len(c)
    xor = size & (size - 1) == 0            # MPICH pairs rank ^ k on a power of two
    rounds = []
    for k in range(1, size):
        load = _Load(nodes, size)
        for p in range(size):
            dst = p ^ k if xor else (p + k) % size
            load.message(node, p, dst, c[p][dst])
        rounds.append(load)
    return _Rounds(rounds, max(c[p][p] for p in range(size)))


def _brucks(node, c, nodes):
    size = len(c)
    rounds, k = [], 1
    block = max(max(row) for row in c)
    while k < size:
        load = _Load(nodes, size)
        nblocks = sum(1 for i in range(size) if i & k)
        for p in range(size):
            load.message(node, p, (p + k) % size, nblocks * block)
            load.copied[p] += 2 * nblocks * block       # pack and unpack
        rounds.append(load)
        k <<= 1
    return _Rounds(rounds, size * block * 3)            # Bruck's rotations and the copy in


class _Merge:
    """Round one: direct messages and the streams' aggregates, packed; round two, after the
    last aggregate: each forwarder unpacks and hands every other process of its node one
    message, which copies its part out."""

    def __init__(self, node, c, nodes, ppn):
        size = len(c)
        node_bytes = [[0] * nodes for _ in range(nodes)]
        for s in range(size):
            for d in range(size):
                node_bytes[node[s]][node[d]] += c[s][d]
        alpha = [[_alpha(node_bytes, a, b) for b in range(nodes)] for a in range(nodes)]
        self.one = _Load(nodes, size)
        self.forwarded = [0] * size         # bytes each forwarder unpacks and passes on
        self.delivered = [0] * size         # merged bytes each process copies out
        for s in range(size):
            merged, frags = [0] * nodes, [0] * nodes
            for d in range(size):
                if node[d] == node[s] or c[s][d] > MERGE_MAX:
                    if c[s][d] or d == s:
                        self.one.message(node, s, d, c[s][d])
                else:
                    merged[node[d]] += c[s][d]
                    frags[node[d]] += 1 if c[s][d] else 0
                    self.delivered[d] += c[s][d]
            for b in range(nodes):
                if b == node[s]:
                    continue
                f = b * ppn + s % ppn                   # the forwarder of s on node b
                n = _aggregates(merged[b], alpha[node[s]][b])
                wire = merged[b] + AGG_HEADER * n + FRAG_HEADER * frags[b]
                for k in range(n):
                    self.one.message(node, s, f, wire // n)
                self.one.copied[s] += merged[b]         # packing
                self.forwarded[f] += merged[b]
        self.ppn = ppn

    def time(self, cl):
        fwd = max(self.forwarded) / cl.copy + (self.ppn - 1) * cl.shm_msg
        out = max(self.delivered) / cl.copy + (self.ppn - 1) * cl.shm_msg
        return self.one.time(cl) + (cl.node_latency + fwd + out if self.ppn > 1 else fwd)


def stock_default(coll, size, nbytes):
    """What MPICH 4.0.2 runs by default, not in place (maint/tuning/coll/mpir/generic.json; the
    message size is one block's)."""
    if coll == "alltoallv":
        return "scattered"
    if size >= 8 and nbytes <= 256:
        return "brucks"
    return "scattered" if nbytes <= 32768 else "pairwise"


def plan(nodes, ppn, c, algorithm):
    """What algorithm asks of the processes and links for counts c: .time(cluster) is one
    exchange's seconds on that cluster, slowest process."""
    size = nodes * ppn
    if len(c) != size:
        raise ValueError("counts are for %d ranks, the layout has %d" % (len(c), size))
    node = [r // ppn for r in range(size)]
    if algorithm == "scattered":
        return _Scattered(node, c, nodes)
    if algorithm == "reorder":
        return _at_once(node, c, nodes)
    if algorithm == "pairwise":
        return _pairwise_rounds(node, c, nodes)
    if algorithm == "brucks":
        return _brucks(node, c, nodes)
    if algorithm in ("merge", "reorder_merge"):
        return _Merge(node, c, nodes, ppn)
    raise ValueError("algorithm must be one of %s, not %r" % (", ".join(ALGORITHMS), algorithm))


def exchange_time(cl, nodes, ppn, c, algorithm):
    """Seconds one exchange of counts c takes with algorithm, slowest process."""
    return plan(nodes, ppn, c, algorithm).time(cl)
