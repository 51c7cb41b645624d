##
## mpich-tnbc: the exchanges maint/bench-exchange runs (test/mpi/tnbc/bench/tnbc_exchange.c's
## bytes_of), as byte counts for the replays (maint/tnbc-predict --scale, --check-exchange).
##

WORKLOADS = ("small", "uniform", "skewed", "stencil2d", "stencil3d", "particles")


def mix(x):
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


def is_neighbour(a, b, dims):
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
        return [[nbytes if is_neighbour(s, d, dims) else 0 for d in range(size)]
                for s in range(size)]
    if workload == "particles":
        out = []
        for s in range(size):
            row = []
            for d in range(size):
                h = mix(s * 7919 + d * 131 + iteration * 104729)
                row.append(h % nbytes if h % 4 == 0 else 0)
            out.append(row)
        return out
    raise ValueError("workload must be one of %s, not %r" % (", ".join(WORKLOADS), workload))
