##
## mpich-tnbc: how long a code that reads an Alltoall's blocks right away must stall, on a
## cluster of nodes whose links carry a given rate (the priorities issue's model). Pure Python,
## no MPI: maint/stall-model prints it, test/maint/test-stall-model checks it.
##
## The job: NODES x PPN ranks, placed in blocks (rank r on node r // PPN) or cyclically
## (node r % NODES). Every rank sends BYTES to every rank; right after the call each rank reads
## the blocks in its order, one every READ seconds, and stalls when the next has not arrived.
## A block between two ranks of one node arrives at once (shared memory); a block between nodes
## crosses the sender's uplink and the receiver's downlink, each carrying RATE bytes per second
## of payload (the link rate times the TCP payload share of a frame), and arrives LATENCY plus
## the per-message COST after its last byte left.
##
## Two figures per rank, both the stall after the call returns:
##   fifo   every block sent at once (T-NBC without priorities): the links are shared fairly
##          between the blocks that cross them (max-min fair rates, recomputed whenever a block
##          completes);
##   bound  what no order of sending can beat: for every link and every m, the remote blocks
##          among the first m reads of the ranks whose blocks cross that link need
##          bytes / RATE to cross it, so the last of them arrives no earlier, while its reader
##          reached it after at most m - 1 reads: that reader stalls at least the difference.
##          The bound holds for the largest stall over ranks (the benchmarks' "stall" column).
##
## And what paced sending gets (MPIR_CVAR_TNBC_PACE_BYTES, node arbitration): each sender (a
## rank, or a whole node when its ranks take turns) keeps WINDOW blocks in flight, the next
## one starting when one has arrived, taken most urgent first, the urgency of a block being its
## position in its reader's order (orders "receivers": every sender knows its readers' orders)
## or the sender's own position in its own order, all of a rank's blocks alike (orders "own":
## what a process learns alone; its blocks then go in ring order, rank + 1 first). A sender
## learns of a delivery ANSWER seconds after it (the receiver's helper matches the order report
## that follows the body, and its acknowledgement comes back): only then does the next block
## start. Each paced block's flight, from its start to the sender learning it arrived, is what
## the statistics of a paced run measure ("paced bodies: ... from post to delivery").
##

import heapq

TCP_PAYLOAD_SHARE = 1448.0 / 1514.0     # MTU 1500, timestamps: payload per frame tbf counts

KERNEL_ORDERS = ("ft", "crc", "crcrot")


def node_of(rank, nodes, ppn, placement):
    if placement == "block":
        return rank // ppn
    if placement == "cyclic":
        return rank % nodes
    raise ValueError("placement must be block or cyclic, not %r" % placement)


def read_order(kernel, rank, size):
    """The blocks rank reads, by source rank, in the order it reads them."""
    if kernel in ("ft", "crc"):
        return list(range(size))
    if kernel == "crcrot":
        return [(rank + 1 + s) % size for s in range(size)]
    raise ValueError("kernel must be one of %s, not %r" % (", ".join(KERNEL_ORDERS), kernel))


def rate_bytes(text):
    """'200mbit', '1gbit', '40000kbit', '1e9' (bit/s) -> bytes per second on the wire."""
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bit": 1.0}
    t = text.strip().lower()
    for u in ("kbit", "mbit", "gbit", "bit"):
        if t.endswith(u):
            return float(t[:-len(u)]) * units[u] / 8.0
    return float(t) / 8.0


class Layout:
    def __init__(self, nodes, ppn, placement, rate, nbytes, read_s, latency_s=0.0,
                 msg_cost_s=0.0, payload_share=TCP_PAYLOAD_SHARE):
        if nodes < 1 or ppn < 1 or nbytes < 0 or read_s < 0 or rate <= 0:
            raise ValueError("bad layout")
        self.nodes, self.ppn, self.placement = nodes, ppn, placement
        self.size = nodes * ppn
        self.goodput = rate * payload_share        # payload bytes per second per link direction
        self.nbytes, self.read_s = nbytes, read_s
        self.latency_s, self.msg_cost_s = latency_s, msg_cost_s
        self.node = [node_of(r, nodes, ppn, placement) for r in range(self.size)]

    def remote(self, src, dst):
        return self.node[src] != self.node[dst]


def stall(arrivals, read_s):
    """The reader's stall: it reads the blocks in order, one every read_s, waiting for each."""
    t = waited = 0.0
    for a in arrivals:
        if a > t:
            waited += a - t
            t = a
        t += read_s
    return waited


def start_block(lay, left, arrival, src, dst, now=0.0):
    """Block src -> dst starts at now: a flow of its bytes in left, or, empty, it arrives at
    once."""
    if lay.nbytes > 0:
        left[(src, dst)] = float(lay.nbytes)
    else:
        arrival[dst][src] = now + lay.latency_s + lay.msg_cost_s


def drain(lay, left, arrival, arrived=None, timers=None):
    """Run the flows of left (bytes still to send per (src, dst)) over max-min fair links,
    recomputing the rates whenever one completes, into arrival[dst][src]. arrived(flow, now),
    if given, may start more flows or add timers; timers is a heap of (time, seq, fn): fn(now)
    runs at that time and may start more flows."""
    now = 0.0
    timers = timers if timers is not None else []
    while left or timers:
        step = None
        if left:
            rates = fair_rates(lay, list(left))
            step = min(left[f] / rates[f] for f in left)
        if timers and (step is None or timers[0][0] - now < step):
            due = max(timers[0][0], now)
            for f in left:
                left[f] -= rates[f] * (due - now)
            now = due
            heapq.heappop(timers)[2](now)
            continue
        now += step
        for f in list(left):
            left[f] -= rates[f] * step
            if left[f] <= 1e-6 * lay.nbytes:
                del left[f]
                arrival[f[1]][f[0]] = now + lay.latency_s + lay.msg_cost_s
                if arrived:
                    arrived(f, now)


def fifo_arrivals(lay):
    """arrival[dst][src] when every block is sent at once over max-min fair links."""
    arrival = [[0.0] * lay.size for _ in range(lay.size)]
    left = {}
    for dst in range(lay.size):
        for src in range(lay.size):
            if lay.remote(src, dst):
                start_block(lay, left, arrival, src, dst)
    drain(lay, left, arrival)
    return arrival


def fair_rates(lay, flows):
    """Max-min fair rates of flows (src, dst) over the uplinks and downlinks (water-filling)."""
    cap = {}
    users = {}
    for f in flows:
        for link in (("up", lay.node[f[0]]), ("down", lay.node[f[1]])):
            cap[link] = lay.goodput
            users.setdefault(link, []).append(f)
    rate = {}
    active = set(flows)
    while active:
        share = {l: cap[l] / sum(1 for f in users[l] if f in active)
                 for l in users if any(f in active for f in users[l])}
        tight = min(share, key=share.get)
        r = share[tight]
        for f in [f for f in users[tight] if f in active]:
            rate[f] = r
            active.discard(f)
            for link in (("up", lay.node[f[0]]), ("down", lay.node[f[1]])):
                cap[link] -= r
    return rate


def fifo_stalls(lay, kernel):
    return stalls_of(lay, kernel, fifo_arrivals(lay))


def bound_max_stall(lay, kernel):
    """The least largest stall over ranks that any order of sending allows (see the header)."""
    orders = [read_order(kernel, r, lay.size) for r in range(lay.size)]
    best = 0.0
    for m in range(1, lay.size + 1):
        crossing = {}
        for r in range(lay.size):
            for src in orders[r][:m]:
                if lay.remote(src, r):
                    for link in (("up", lay.node[src]), ("down", lay.node[r])):
                        crossing[link] = crossing.get(link, 0) + lay.nbytes
        for nbytes in crossing.values():
            last = nbytes / lay.goodput + lay.latency_s + lay.msg_cost_s
            best = max(best, last - (m - 1) * lay.read_s)
    return best


def paced_arrivals(lay, kernel, window=1, per_node=True, orders="receivers", answer_s=0.0,
                   flights=None):
    """arrival[dst][src] with paced sending (see the header); flights, if a list, gets each
    remote block's time from its start to its sender learning it arrived."""
    size = lay.size
    reads = [read_order(kernel, r, size) for r in range(size)]
    pos = [{src: i for i, src in enumerate(reads[dst])} for dst in range(size)]
    if orders not in ("receivers", "own"):
        raise ValueError("orders must be receivers or own, not %r" % orders)
    if window < 1 or answer_s < 0:
        raise ValueError("window must be at least 1 and answer_s not negative")
    arrival = [[0.0] * size for _ in range(size)]
    queues = {}
    for src in range(size):
        for dst in range(size):
            if not lay.remote(src, dst):
                continue
            urgency = pos[dst][src] if orders == "receivers" else pos[src][src]
            unit = lay.node[src] if per_node else src
            queues.setdefault(unit, []).append((urgency, (dst - src) % size, src, dst))
    for q in queues.values():
        q.sort(reverse=True)            # most urgent last: popped first
    in_flight = {unit: 0 for unit in queues}
    posted, timers = {}, []

    def start(unit, now):
        while queues[unit] and in_flight[unit] < window:
            _, _, src, dst = queues[unit].pop()
            in_flight[unit] += 1
            posted[(src, dst)] = (unit, now)
            start_block(lay, left, arrival, src, dst, now)
            if (src, dst) not in left:  # empty: arrived at once
                arrived((src, dst), now)

    def learnt(unit, flow, now):
        in_flight[unit] -= 1
        if flights is not None:
            flights.append(now - posted[flow][1])
        start(unit, now)

    def arrived(flow, now):
        unit = posted[flow][0]
        heapq.heappush(timers, (now + answer_s, len(posted) + len(timers),
                                lambda t, u=unit, f=flow: learnt(u, f, t)))

    left = {}
    for unit in queues:
        start(unit, 0.0)
    drain(lay, left, arrival, arrived, timers)
    return arrival


def stalls_of(lay, kernel, arrival):
    return [stall([arrival[r][s] for s in read_order(kernel, r, lay.size)], lay.read_s)
            for r in range(lay.size)]


def predict(lay, kernel, window=1, answer_s=0.0):
    """{'fifo_max', 'fifo_mean', 'bound_max', 'paced_own_max', 'paced_receivers_max',
    'paced_flight_mean'} in seconds; paced: window blocks in flight per node (node
    arbitration), a delivery learnt answer_s after it; the flight is the receivers' orders'."""
    s = fifo_stalls(lay, kernel)
    out = {"fifo_max": max(s), "fifo_mean": sum(s) / len(s),
           "bound_max": bound_max_stall(lay, kernel)}
    flights = []
    for orders in ("own", "receivers"):
        arrival = paced_arrivals(lay, kernel, window, orders=orders, answer_s=answer_s,
                                 flights=flights if orders == "receivers" else None)
        out["paced_%s_max" % orders] = max(stalls_of(lay, kernel, arrival))
    out["paced_flight_mean"] = sum(flights) / len(flights) if flights else 0.0
    return out
