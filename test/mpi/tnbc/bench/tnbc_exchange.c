/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Exchange workloads for the reorder + merge algorithms (the algorithm comes from the
 * environment: MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM, MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM or
 * MPIR_CVAR_NEIGHBOR_ALLTOALLV_INTRA_ALGORITHM):
 *
 *   tnbc_exchange [alltoallv|alltoall|neighbor] PATTERN BYTES ITERS
 *
 * uniform (BYTES to every rank), skewed (BYTES between a few heavy pairs, BYTES/64 elsewhere),
 * stencil2d / stencil3d (BYTES to the 4 / 6 neighbours on a periodic process grid), particles
 * (random sparse: each pair with probability 1/4, up to BYTES, new every iteration), small (many
 * small messages: BYTES to every rank, meant for a few dozen bytes). The collective is
 * MPI_Alltoallv (the default), MPI_Alltoall (uniform and small only) or MPI_Neighbor_alltoallv
 * on a distributed graph of the pairs the first iteration exchanges (not particles). Prints per
 * iteration the maximum over ranks of the collective's time, then the median; every byte is
 * checked once. */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned mix(unsigned x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    return x ^ (x >> 16);
}

/* a periodic grid of dims dimensions over size ranks (as square as MPI_Dims_create makes it) */
static int is_neighbour(int a, int b, int size, int ndims)
{
    int dims[3] = { 0, 0, 0 }, ca[3], cb[3];
    MPI_Dims_create(size, ndims, dims);
    for (int d = ndims - 1, x = a, y = b; d >= 0; d--) {
        ca[d] = x % dims[d];
        cb[d] = y % dims[d];
        x /= dims[d];
        y /= dims[d];
    }
    int diff = 0, step = 0;
    for (int d = 0; d < ndims; d++) {
        int delta = (cb[d] - ca[d] + dims[d]) % dims[d];
        if (delta == 0)
            continue;
        diff++;
        step = (delta == 1 || delta == dims[d] - 1);
    }
    return diff == 1 && step;
}

static int bytes_of(const char *pattern, int src, int dst, int size, int bytes, int iter)
{
    if (!strcmp(pattern, "uniform") || !strcmp(pattern, "small"))
        return bytes;
    if (!strcmp(pattern, "skewed"))
        return (src + 2 * dst) % 7 == 0 ? bytes : bytes / 64;
    if (!strcmp(pattern, "stencil2d"))
        return is_neighbour(src, dst, size, 2) ? bytes : 0;
    if (!strcmp(pattern, "stencil3d"))
        return is_neighbour(src, dst, size, 3) ? bytes : 0;
    if (!strcmp(pattern, "particles")) {
        unsigned h = mix((unsigned) (src * 7919 + dst * 131 + iter * 104729));
        return h % 4 == 0 ? (int) (h % (unsigned) bytes) : 0;
    }
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

enum { ALLTOALLV, ALLTOALL, NEIGHBOR };

/* The graph of what the first iteration exchanges, neighbours in rank order. */
static MPI_Comm neighbour_comm(const char *pattern, int rank, int size, int bytes, int *srcs,
                               int *nin, int *dsts, int *nout)
{
    *nin = *nout = 0;
    for (int p = 0; p < size; p++) {
        if (p != rank && bytes_of(pattern, p, rank, size, bytes, 0) > 0)
            srcs[(*nin)++] = p;
        if (p != rank && bytes_of(pattern, rank, p, size, bytes, 0) > 0)
            dsts[(*nout)++] = p;
    }
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, *nin, srcs, MPI_UNWEIGHTED, *nout, dsts,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    return g;
}

static int usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: tnbc_exchange [alltoallv|alltoall|neighbor] uniform|skewed|"
                "stencil2d|stencil3d|particles|small BYTES ITERS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
}

int main(int argc, char **argv)
{
    int rank, size, coll = ALLTOALLV;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 5) {
        coll = !strcmp(argv[1], "alltoall") ? ALLTOALL : !strcmp(argv[1], "neighbor") ?
            NEIGHBOR : !strcmp(argv[1], "alltoallv") ? ALLTOALLV : -1;
        argv++;
        argc--;
    }
    if (argc != 4 || coll < 0 || bytes_of(argv[1], 0, 0, size, 1, 0) < 0 ||
        (coll == ALLTOALL && strcmp(argv[1], "uniform") && strcmp(argv[1], "small")) ||
        (coll == NEIGHBOR && !strcmp(argv[1], "particles")))
        return usage(rank);
    const char *pattern = argv[1];
    int bytes = atoi(argv[2]), iters = atoi(argv[3]), errs = 0;
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    int *srcs = malloc(size * sizeof(int)), *dsts = malloc(size * sizeof(int)), nin = 0, nout = 0;
    double *t = malloc((iters + 1) * sizeof(double));
    MPI_Comm comm = MPI_COMM_WORLD;
    if (coll == NEIGHBOR)
        comm = neighbour_comm(pattern, rank, size, bytes, srcs, &nin, dsts, &nout);

    for (int it = 0; it <= iters; it++) {
        int stot = 0, rtot = 0;
        for (int p = 0; p < size; p++) {
            sc[p] = bytes_of(pattern, rank, p, size, bytes, it);
            rc[p] = bytes_of(pattern, p, rank, size, bytes, it);
            sd[p] = stot;
            rd[p] = rtot;
            stot += sc[p];
            rtot += rc[p];
        }
        unsigned char *sbuf = malloc(stot + 1), *rbuf = malloc(rtot + 1);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < sc[p]; i++)
                sbuf[sd[p] + i] = (unsigned char) (rank * 31 + p * 7 + i);
        /* a neighbourhood's counts, in neighbour order */
        int nsc[nout + 1], nsd[nout + 1], nrc[nin + 1], nrd[nin + 1];
        for (int k = 0; k < nout; k++) {
            nsc[k] = sc[dsts[k]];
            nsd[k] = sd[dsts[k]];
        }
        for (int k = 0; k < nin; k++) {
            nrc[k] = rc[srcs[k]];
            nrd[k] = rd[srcs[k]];
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (coll == ALLTOALL)
            MPI_Alltoall(sbuf, bytes, MPI_BYTE, rbuf, bytes, MPI_BYTE, comm);
        else if (coll == NEIGHBOR)
            MPI_Neighbor_alltoallv(sbuf, nsc, nsd, MPI_BYTE, rbuf, nrc, nrd, MPI_BYTE, comm);
        else
            MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc, rd, MPI_BYTE, comm);
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it == 1)
            for (int p = 0; p < size; p++)
                for (int i = 0; i < rc[p]; i++)
                    errs += (coll != NEIGHBOR || p != rank) &&
                        rbuf[rd[p] + i] != (unsigned char) (p * 31 + rank * 7 + i);
        if (it > 0)     /* the first call learns the node graph */
            t[it - 1] = dt * 1e3;
        free(sbuf);
        free(rbuf);
    }
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < iters; i++)
            printf("iteration %d: %.3f ms\n", i, t[i]);
        qsort(t, iters, sizeof(double), cmp_double);
        printf("%s %d bytes: median %.3f ms over %d iterations, %s\n", pattern, bytes,
               t[iters / 2], iters, errs ? "DATA ERRORS" : "data ok");
    }
    if (comm != MPI_COMM_WORLD)
        MPI_Comm_free(&comm);
    MPI_Finalize();
    return errs != 0;
}
