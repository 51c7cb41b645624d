/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Persistent collectives with T-NBC: every MPI_<Coll>_init T-NBC takes, started several times
 * with new data each time and the data checked after each completion; MPI_Startall of several
 * requests, completed by MPI_Waitall; a receive buffer read only in part before the next start
 * into it; a strided receive type freed right after the init; int count arrays the binding
 * converts into arrays it frees when the init returns; Gatherv's arrays passed as NULL where
 * MPI ignores them; MPI_Request_free of an inactive request. T-NBC keeps the calls made with
 * the info key mpi_assert_strict_persistent_collective_ordering = true; one made without it
 * runs MPICH's schedule.
 * MPICH 4.0.2's own MPI_Scatter_init (3 or more processes: MPI_Wait fails with "Invalid
 * communicator") and MPI_Allgather_init (2 processes: every start delivers the first start's
 * data) are broken upstream, in Debian's build as in ours with T-NBC off: they are run only
 * where T-NBC takes every call (MPIR_CVAR_TNBC_MIN_BYTES=0). */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STARTS 4

static int rank, size, errs;
static int tnbc_takes_all;      /* T-NBC on, every size */
/* MPI-4.1's assertion that starts are ordered alike everywhere: without it T-NBC leaves
 * persistent collectives to MPICH */
static MPI_Info ordered;

static int value(int src, int dst, int i, int start)
{
    return src * 1000003 + dst * 7919 + i + start * 31;
}

static void expect(const int *buf, long i, int want, const char *what, int start)
{
    if (buf[i] != want) {
        if (errs < 10)
            fprintf(stderr, "rank %d %s start %d [%ld]: got %d expected %d\n", rank, what, start,
                    i, buf[i], want);
        errs++;
    }
}

static void alltoall(int n, MPI_Info info)
{
    int *s = malloc((size_t) size * n * sizeof(int)), *r = malloc((size_t) size * n * sizeof(int));
    MPI_Request req;
    MPI_Alltoall_init(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, info, &req);
    for (int st = 0; st < STARTS; st++) {
        for (long i = 0; i < (long) size * n; i++)
            s[i] = value(rank, (int) (i / n), (int) (i % n), st);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        /* read only the last peer's block: the next start writes the rest while it may be
         * still on its way */
        for (int i = 0; i < n; i++)
            expect(r, (long) (size - 1) * n + i, value(size - 1, rank, i, st), "Alltoall_init",
                   st);
        if (st == STARTS - 1)
            for (long i = 0; i < (long) size * n; i++)
                expect(r, i, value((int) (i / n), rank, (int) (i % n), st), "Alltoall_init", st);
    }
    MPI_Request_free(&req);
    free(s);
    free(r);
}

/* uneven pieces, int counts the binding converts; a strided receive type freed after init */
static void alltoallv_strided(int n)
{
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int)), stot = 0, rtot = 0;
    for (int p = size - 1; p >= 0; p--) {
        sc[p] = n + ((rank + 2 * p) % 3) * 17;
        rc[p] = n + ((p + 2 * rank) % 3) * 17;
        sd[p] = stot;
        rd[p] = rtot;
        stot += sc[p];
        rtot += rc[p];
    }
    MPI_Datatype strided;
    MPI_Type_vector(1, 1, 2, MPI_INT, &strided);
    MPI_Datatype every_other;
    MPI_Type_create_resized(strided, 0, 2 * sizeof(int), &every_other);
    MPI_Type_commit(&every_other);
    MPI_Type_free(&strided);
    int *s = malloc(stot * sizeof(int)), *r = malloc(2L * rtot * sizeof(int));
    MPI_Request req;
    MPI_Alltoallv_init(s, sc, sd, MPI_INT, r, rc, rd, every_other, MPI_COMM_WORLD, ordered,
                       &req);
    MPI_Type_free(&every_other);
    for (int st = 0; st < STARTS; st++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < sc[p]; i++)
                s[sd[p] + i] = value(rank, p, i, st);
        for (long i = 0; i < 2L * rtot; i++)
            r[i] = -1;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < rc[p]; i++) {
                expect(r, 2L * (rd[p] + i), value(p, rank, i, st), "Alltoallv_init strided", st);
                expect(r, 2L * (rd[p] + i) + 1, -1, "Alltoallv_init strided hole", st);
            }
    }
    MPI_Request_free(&req);
    free(s);
    free(r);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* Bcast, Allreduce and Gatherv (NULL arrays at the non-roots) started together */
static void startall(int n, int root)
{
    int *b = malloc(n * sizeof(int)), *in = malloc(n * sizeof(int)), *out = malloc(n * 4);
    int *g = malloc(n * sizeof(int)), *gr = malloc((size_t) size * n * sizeof(int));
    int *counts = NULL, *displs = NULL;
    if (rank == root) {
        counts = malloc(size * sizeof(int));
        displs = malloc(size * sizeof(int));
        for (int p = 0; p < size; p++) {
            counts[p] = n;
            displs[p] = (size - 1 - p) * n;
        }
    }
    MPI_Request req[3];
    MPI_Bcast_init(b, n, MPI_INT, root, MPI_COMM_WORLD, ordered, &req[0]);
    MPI_Allreduce_init(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, ordered, &req[1]);
    MPI_Gatherv_init(g, n, MPI_INT, gr, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                     ordered, &req[2]);
    for (int st = 0; st < STARTS; st++) {
        for (int i = 0; i < n; i++) {
            b[i] = rank == root ? value(root, 0, i, st) : -1;
            in[i] = value(rank, 0, i, st);
            g[i] = value(rank, 1, i, st);
        }
        MPI_Startall(3, req);
        MPI_Status sts[3];
        MPI_Waitall(3, req, sts);
        for (int i = 0; i < n; i++) {
            expect(b, i, value(root, 0, i, st), "Bcast_init", st);
            expect(out, i, size * value(0, 0, i, st) + 1000003 * (size * (size - 1) / 2),
                   "Allreduce_init", st);
        }
        if (rank == root)
            for (int p = 0; p < size; p++)
                for (int i = 0; i < n; i++)
                    expect(gr, (long) displs[p] + i, value(p, 1, i, st), "Gatherv_init", st);
    }
    for (int k = 0; k < 3; k++)
        MPI_Request_free(&req[k]);
    free(b);
    free(in);
    free(out);
    free(g);
    free(gr);
    free(counts);
    free(displs);
}

/* The rest, each started twice */
static void others(int n, int root)
{
    int *s = malloc((size_t) size * n * sizeof(int)), *r = malloc((size_t) size * n * sizeof(int));
    MPI_Request req[7];
    int counts[64];
    for (int p = 0; p < size && p < 64; p++)
        counts[p] = n;
    MPI_Allgather_init(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, ordered, &req[0]);
    MPI_Scatter_init(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD, ordered, &req[1]);
    int first = tnbc_takes_all ? 0 : 2;
    MPI_Reduce_init(s, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, ordered, &req[2]);
    MPI_Reduce_scatter_block_init(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, ordered,
                                  &req[3]);
    MPI_Reduce_scatter_init(s, r, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, ordered,
                            &req[4]);
    MPI_Scan_init(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, ordered, &req[5]);
    MPI_Exscan_init(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, ordered, &req[6]);
    for (int st = 0; st < 2; st++) {
        for (long i = 0; i < (long) size * n; i++)
            s[i] = value(rank, (int) (i / n), (int) (i % n), st);
        for (int k = first; k < 2; k++) {
            MPI_Start(&req[k]);
            MPI_Wait(&req[k], MPI_STATUS_IGNORE);
            if (k == 0)
                for (long i = 0; i < (long) size * n; i++)
                    expect(r, i, value((int) (i / n), 0, (int) (i % n), st), "Allgather_init", st);
            else
                for (int i = 0; i < n; i++)
                    expect(r, i, value(root, rank, i, st), "Scatter_init", st);
        }
        int sum_ranks = size * (size - 1) / 2;
        MPI_Start(&req[2]);
        MPI_Wait(&req[2], MPI_STATUS_IGNORE);
        if (rank == root)
            for (int i = 0; i < n; i++)
                expect(r, i, size * value(0, 0, i, st) + 1000003 * sum_ranks, "Reduce_init", st);
        for (int k = 3; k <= 4; k++) {
            MPI_Start(&req[k]);
            MPI_Wait(&req[k], MPI_STATUS_IGNORE);
            for (int i = 0; i < n; i++)
                expect(r, i, size * value(0, rank, i, st) + 1000003 * sum_ranks,
                       k == 3 ? "Reduce_scatter_block_init" : "Reduce_scatter_init", st);
        }
        MPI_Start(&req[5]);
        MPI_Wait(&req[5], MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++)
            expect(r, i, (rank + 1) * value(0, 0, i, st) + 1000003 * (rank * (rank + 1) / 2),
                   "Scan_init", st);
        MPI_Start(&req[6]);
        MPI_Wait(&req[6], MPI_STATUS_IGNORE);
        if (rank > 0)
            for (int i = 0; i < n; i++)
                expect(r, i, rank * value(0, 0, i, st) + 1000003 * (rank * (rank - 1) / 2),
                       "Exscan_init", st);
    }
    for (int k = 0; k < 7; k++)
        MPI_Request_free(&req[k]);
    free(s);
    free(r);
}

/* a ring: piece 0 to the left, piece 1 to the right */
static void neighbor(int n)
{
    MPI_Comm ring;
    int periods = 1, dims = size;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &dims, &periods, 0, &ring);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int *s = malloc(2 * n * sizeof(int)), *r = malloc(2 * n * sizeof(int));
    int counts[2] = { n, n }, displs[2] = { n, 0 };
    MPI_Request req[2];
    MPI_Neighbor_alltoall_init(s, n, MPI_INT, r, n, MPI_INT, ring, ordered, &req[0]);
    MPI_Neighbor_allgatherv_init(s, n, MPI_INT, r, counts, displs, MPI_INT, ring, ordered,
                                 &req[1]);
    for (int st = 0; st < STARTS; st++) {
        for (int i = 0; i < n; i++) {
            s[i] = value(rank, left, i, st);
            s[n + i] = value(rank, right, i, st);
        }
        MPI_Start(&req[0]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) {
            expect(r, i, value(left, rank, i, st), "Neighbor_alltoall_init", st);
            expect(r, n + i, value(right, rank, i, st), "Neighbor_alltoall_init", st);
        }
        MPI_Start(&req[1]);
        MPI_Wait(&req[1], MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) {
            expect(r, n + i, value(left, (left + size - 1) % size, i, st),
                   "Neighbor_allgatherv_init", st);
            expect(r, i, value(right, rank, i, st), "Neighbor_allgatherv_init", st);
        }
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    free(s);
    free(r);
    MPI_Comm_free(&ring);
}

int main(int argc, char *argv[])
{
    const int counts[] = { 1, 1024, 3000, 65536 };

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *on = getenv("MPIR_CVAR_TNBC_ENABLE"), *min = getenv("MPIR_CVAR_TNBC_MIN_BYTES");
    tnbc_takes_all = on && atoi(on) == 1 && min && atoi(min) == 0;
    MPI_Info_create(&ordered);
    MPI_Info_set(ordered, "mpi_assert_strict_persistent_collective_ordering", "true");
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int n = counts[c];
        alltoall(n, ordered);
        alltoall(n, MPI_INFO_NULL);     /* MPICH's schedule */
        alltoallv_strided(n);
        for (int root = 0; root < size; root++) {
            startall(n, root);
            others(n, root);
        }
        neighbor(n);
    }
    MPI_Info_free(&ordered);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
