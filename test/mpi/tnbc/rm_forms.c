/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI_Alltoall and MPI_Neighbor_alltoallv through whichever algorithms the environment selects
 * (the testlist runs reorder, merge and reorder_merge on fake nodes, MPIR_CVAR_NUM_CLIQUES, with
 * and without T-NBC): Alltoall of small, medium and large pieces, with a receive type with
 * holes, in place (a fallback) and on a split communicator; Neighbor_alltoallv on a
 * distributed graph with irregular degrees, changing counts and a self edge, on a periodic ring
 * (a repeated neighbour when there are two processes: the stock path), on a non-periodic grid
 * (MPI_PROC_NULL neighbours), and on a graph where rank 0 alone repeats an edge (the stock path
 * on every process). The MPI_T counters rm_exchanges, rm_stock and tnbc_rm_planned_sends show
 * which path each call took. */

#include "mpitest.h"
#include "tnbc_test_pvar.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_T_pvar_session session;
static int ours_alltoall, reorder_alltoall, ours_neighbor, tnbc_on;

static int is_ours(const char *cvar, int reorder_only)
{
    const char *v = getenv(cvar);
    return v && (!strcmp(v, "reorder") || !strcmp(v, "reorder_merge") ||
                 (!reorder_only && !strcmp(v, "merge")));
}

/* The growth of counter name since *before must be want; *before moves on. */
static int expect(const char *what, const char *name, unsigned long long *before,
                  unsigned long long want)
{
    unsigned long long now = tnbc_read_pvar(session, name), grew = now - *before;
    *before = now;
    if (grew == want)
        return 0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "rank %d %s: %s grew by %llu, want %llu\n", rank, what, name, grew, want);
    return 1;
}

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

/* holes: the receive type puts element i at int 2i and must leave the odd ints alone */
static int alltoall(MPI_Comm comm, int count, int holes)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int stride = holes ? 2 : 1;
    size_t n = (size_t) size * count;
    int *sbuf = malloc((n + 1) * sizeof(int)), *rbuf = malloc((stride * n + 1) * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            sbuf[(size_t) p * count + i] = value(rank, p, i);
    for (size_t i = 0; i < stride * n + 1; i++)
        rbuf[i] = -7;

    MPI_Datatype strided, rtype = MPI_INT;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    if (holes)
        rtype = strided;
    MPI_Alltoall(sbuf, count, MPI_INT, rbuf, count, rtype, comm);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++) {
            int got = rbuf[stride * ((size_t) p * count + i)], want = value(p, rank, i);
            if (got != want && errs++ < 5)
                fprintf(stderr, "rank %d alltoall %d: from %d int %d is %d, want %d\n", rank,
                        count, p, i, got, want);
        }
    if (holes)
        for (size_t i = 1; i < stride * n; i += 2)
            if (rbuf[i] != -7 && errs++ < 5)
                fprintf(stderr, "rank %d alltoall: hole %zu written\n", rank, i);
    MPI_Type_free(&strided);
    free(sbuf);
    free(rbuf);
    return errs;
}

static int alltoall_in_place(MPI_Comm comm)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *buf = malloc(size * 30 * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 30; i++)
            buf[p * 30 + i] = value(rank, p, i);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, 30, MPI_INT, comm);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 30; i++)
            if (buf[p * 30 + i] != value(p, rank, i) && errs++ < 5)
                fprintf(stderr, "rank %d alltoall in place: from %d int %d wrong\n", rank, p, i);
    free(buf);
    return errs;
}

/* The neighbour lists the topology gives, and one exchange over them: count(src, dst) ints per
 * edge (MPI_PROC_NULL edges carry their count and receive nothing). Receive pieces are laid out
 * in reverse neighbour order. */
static int neighbor_exchange(MPI_Comm comm, const char *what, int (*count) (int, int, int),
                             int iter)
{
    int rank, indeg, outdeg, weighted, errs = 0, topo, ndims = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        MPI_Cartdim_get(comm, &ndims);
        indeg = outdeg = 2 * ndims;
    } else {
        MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
    }
    int *srcs = malloc((indeg + 1) * sizeof(int)), *dsts = malloc((outdeg + 1) * sizeof(int));
    if (topo == MPI_CART) {
        for (int d = 0; d < ndims; d++) {
            int lo, hi;
            MPI_Cart_shift(comm, d, 1, &lo, &hi);
            srcs[2 * d] = dsts[2 * d] = lo;
            srcs[2 * d + 1] = dsts[2 * d + 1] = hi;
        }
    } else {
        MPI_Dist_graph_neighbors(comm, indeg, srcs, MPI_UNWEIGHTED, outdeg, dsts,
                                 MPI_UNWEIGHTED);
    }
    int *sc = malloc((outdeg + 1) * sizeof(int)), *sd = malloc((outdeg + 1) * sizeof(int));
    int *rc = malloc((indeg + 1) * sizeof(int)), *rd = malloc((indeg + 1) * sizeof(int));
    int stot = 0, rtot = 0;
    for (int k = 0; k < outdeg; k++) {
        sc[k] = count(rank, dsts[k], iter);
        sd[k] = stot;
        stot += sc[k];
    }
    for (int k = indeg - 1; k >= 0; k--) {
        rc[k] = srcs[k] == MPI_PROC_NULL ? 3 : count(srcs[k], rank, iter);
        rd[k] = rtot;
        rtot += rc[k];
    }
    int *sbuf = malloc((stot + 1) * sizeof(int)), *rbuf = malloc((rtot + 1) * sizeof(int));
    for (int k = 0; k < outdeg; k++)
        for (int i = 0; i < sc[k]; i++)
            sbuf[sd[k] + i] = value(rank, dsts[k], i);
    for (int i = 0; i < rtot + 1; i++)
        rbuf[i] = -7;
    MPI_Neighbor_alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, comm);
    for (int k = 0; k < indeg; k++)
        for (int i = 0; i < rc[k]; i++) {
            int want = srcs[k] == MPI_PROC_NULL ? -7 : value(srcs[k], rank, i);
            if (rbuf[rd[k] + i] != want && errs++ < 5)
                fprintf(stderr, "rank %d %s iter %d: from neighbour %d (%d) int %d is %d, "
                        "want %d\n", rank, what, iter, k, srcs[k], i, rbuf[rd[k] + i], want);
        }
    free(srcs);
    free(dsts);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sbuf);
    free(rbuf);
    return errs;
}

static int world_size;

/* rank r sends to r+1, r+3 and 2r+1 (mod size, once each) and rank 0 to itself */
static int irregular_dsts(int r, int *d)
{
    int n = 0, cand[3] = { (r + 1) % world_size, (r + 3) % world_size,
        (2 * r + 1) % world_size
    };
    for (int k = 0; k < 3; k++) {
        int dup = (cand[k] == r);
        for (int j = 0; j < n; j++)
            dup |= (d[j] == cand[k]);
        if (!dup)
            d[n++] = cand[k];
    }
    if (r == 0)
        d[n++] = 0;
    return n;
}

static int irregular_count(int src, int dst, int iter)
{
    int c[] = { 1, 40, 3000, 0, 70000 };
    return c[(src * 3 + dst + iter) % 5];
}

static int ring_count(int src, int dst, int iter)
{
    return src == MPI_PROC_NULL || dst == MPI_PROC_NULL ? 0 : 5 + src + 2 * iter;
}

static int dist_graph(MPI_Comm comm, int repeated)
{
    int rank, errs = 0, d[5];
    MPI_Comm_rank(comm, &rank);
    int n = irregular_dsts(rank, d);
    if (repeated && rank == 0)  /* only rank 0 and d[0] see it: the paths must agree */
        d[n++] = d[0];
    MPI_Comm g;
    MPI_Dist_graph_create(comm, 1, &rank, &n, d, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    for (int iter = 0; iter < (repeated ? 1 : 5); iter++)       /* iter 0 and 5: the same */
        errs += neighbor_exchange(g, repeated ? "repeated edge" : "graph",
                                  repeated ? ring_count : irregular_count, iter);
    if (!repeated)
        errs += neighbor_exchange(g, "graph", irregular_count, 5);
    MPI_Comm_free(&g);
    return errs;
}

static int cart(MPI_Comm comm, int ndims, int periodic)
{
    int errs = 0, dims[2] = { 0, 0 }, periods[2] = { periodic, periodic }, size;
    MPI_Comm_size(comm, &size);
    MPI_Dims_create(size, ndims, dims);
    MPI_Comm c;
    MPI_Cart_create(comm, ndims, dims, periods, 0, &c);
    for (int iter = 0; iter < 3; iter++)
        errs += neighbor_exchange(c, periodic ? "ring" : "grid", ring_count, iter);
    MPI_Comm_free(&c);
    return errs;
}

int main(int argc, char **argv)
{
    int errs = 0, rank, provided;
    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    const char *env = getenv("MPIR_CVAR_TNBC_ENABLE");
    tnbc_on = env && !strcmp(env, "1");
    ours_alltoall = is_ours("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", 0);
    reorder_alltoall = is_ours("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", 1);
    ours_neighbor = is_ours("MPIR_CVAR_NEIGHBOR_ALLTOALLV_INTRA_ALGORITHM", 0);
    unsigned long long ran = tnbc_read_pvar(session, "rm_exchanges");
    unsigned long long stock = tnbc_read_pvar(session, "rm_stock");
    unsigned long long planned = tnbc_read_pvar(session, "tnbc_rm_planned_sends");
    if (ran == TNBC_PVAR_MISSING || stock == TNBC_PVAR_MISSING || planned == TNBC_PVAR_MISSING) {
        fprintf(stderr, "rm pvars not found\n");
        errs++;
    }

    /* small pieces: T-NBC declines them, the algorithm runs; large: T-NBC takes them */
    for (int iter = 0; iter < 2; iter++) {
        errs += alltoall(MPI_COMM_WORLD, 4, 0);
        errs += expect("alltoall 4", "rm_exchanges", &ran, ours_alltoall);
        errs += alltoall(MPI_COMM_WORLD, 1000, 0);
        errs += alltoall(MPI_COMM_WORLD, 70000, 0);
        errs += expect("alltoall 70000", "tnbc_rm_planned_sends", &planned,
                       tnbc_on && reorder_alltoall);
        errs += expect("alltoall 1000, 70000", "rm_exchanges", &ran,
                       ours_alltoall * (tnbc_on ? 1 : 2));
    }
    errs += alltoall(MPI_COMM_WORLD, 500, 1);
    errs += alltoall_in_place(MPI_COMM_WORLD);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, world_size - rank, &half);
    errs += alltoall(half, 300, 0);
    MPI_Comm_free(&half);

    /* T-NBC takes every neighbourhood call */
    ran = tnbc_read_pvar(session, "rm_exchanges");
    errs += dist_graph(MPI_COMM_WORLD, 0);
    errs += expect("graph", "rm_exchanges", &ran, ours_neighbor && !tnbc_on ? 6 : 0);
    errs += cart(MPI_COMM_WORLD, 1, 1);
    errs += cart(MPI_COMM_WORLD, 2, 0);
    stock = tnbc_read_pvar(session, "rm_stock");
    errs += dist_graph(MPI_COMM_WORLD, 1);
    errs += expect("repeated edge", "rm_stock", &stock, ours_neighbor && !tnbc_on);
    errs += alltoall(MPI_COMM_WORLD, 64, 0);

    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
