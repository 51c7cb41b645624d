/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The gather family with T-NBC: Allgather, Allgatherv, Gather, Gatherv, Scatter, Scatterv, each
 * with and without MPI_IN_PLACE, every root, sizes around the page and edge boundaries; the
 * received data is read in reverse order, and the send buffer is overwritten right after the
 * call (it must already be safe). Gatherv and Scatterv pass NULL counts at non-roots, as MPI
 * allows: they must not be read there. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>

static int rank, size, errs;

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

static void expect(const int *buf, int i, int want, const char *what, int count)
{
    if (buf[i] != want) {
        if (errs < 10)
            fprintf(stderr, "rank %d %s count %d [%d]: got %d expected %d\n", rank, what, count,
                    i, buf[i], want);
        errs++;
    }
}

static int vcount(int p, int count)
{
    return count + (p * 37) % 5;        /* Allgatherv/Gatherv/Scatterv: uneven pieces */
}

static void allgather(int count, int in_place, int v)
{
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int)), tot = 0;
    for (int p = size - 1; p >= 0; p--) {       /* pieces in reverse rank order */
        rc[p] = v ? vcount(p, count) : count;
        rd[p] = v ? tot : p * count;
        tot += rc[p];
    }
    if (!v)
        tot = size * count;
    int *s = malloc((rc[rank] + 1) * sizeof(int)), *r = malloc((tot + 1) * sizeof(int));
    for (int i = 0; i < rc[rank]; i++)
        s[i] = value(rank, 0, i);
    for (int i = 0; i < tot; i++)
        r[i] = in_place ? -1 : -2;
    if (in_place)
        for (int i = 0; i < rc[rank]; i++)
            r[rd[rank] + i] = value(rank, 0, i);
    if (v)
        MPI_Allgatherv(in_place ? MPI_IN_PLACE : s, rc[rank], MPI_INT, r, rc, rd, MPI_INT,
                       MPI_COMM_WORLD);
    else
        MPI_Allgather(in_place ? MPI_IN_PLACE : s, count, MPI_INT, r, count, MPI_INT,
                      MPI_COMM_WORLD);
    for (int i = 0; i < rc[rank]; i++)
        s[i] = -3;      /* overwriting the send buffer at once must not change what others get */
    for (int p = size - 1; p >= 0; p--)
        for (int i = rc[p] - 1; i >= 0; i--)
            expect(r, rd[p] + i, value(p, 0, i), v ? "allgatherv" : "allgather", count);
    free(s);
    free(r);
    free(rc);
    free(rd);
}

static void gather(int count, int root, int in_place, int v)
{
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int)), tot = 0;
    for (int p = 0; p < size; p++) {
        rc[p] = v ? vcount(p, count) : count;
        rd[p] = tot;
        tot += rc[p];
    }
    int *s = malloc((rc[rank] + 1) * sizeof(int)), *r = malloc((tot + 1) * sizeof(int));
    for (int i = 0; i < rc[rank]; i++)
        s[i] = value(rank, root, i);
    for (int i = 0; i < tot; i++)
        r[i] = -1;
    int ip = in_place && rank == root;
    if (ip)
        for (int i = 0; i < rc[rank]; i++)
            r[rd[rank] + i] = value(rank, root, i);
    if (v)
        MPI_Gatherv(ip ? MPI_IN_PLACE : s, rc[rank], MPI_INT, r, rank == root ? rc : NULL,
                    rank == root ? rd : NULL, MPI_INT, root, MPI_COMM_WORLD);
    else
        MPI_Gather(ip ? MPI_IN_PLACE : s, count, MPI_INT, r, count, MPI_INT, root,
                   MPI_COMM_WORLD);
    for (int i = 0; i < rc[rank]; i++)
        s[i] = -3;
    if (rank == root)
        for (int p = size - 1; p >= 0; p--)
            for (int i = rc[p] - 1; i >= 0; i--)
                expect(r, rd[p] + i, value(p, root, i), v ? "gatherv" : "gather", count);
    free(s);
    free(r);
    free(rc);
    free(rd);
}

static void scatter(int count, int root, int in_place, int v)
{
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int)), tot = 0;
    for (int p = size - 1; p >= 0; p--) {
        sc[p] = v ? vcount(p, count) : count;
        sd[p] = v ? tot : p * count;
        tot += sc[p];
    }
    if (!v)
        tot = size * count;
    int *s = malloc((tot + 1) * sizeof(int)), *r = malloc((sc[rank] + 1) * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < sc[p]; i++)
            s[sd[p] + i] = value(root, p, i);
    for (int i = 0; i < sc[rank]; i++)
        r[i] = -1;
    int ip = in_place && rank == root;
    if (v)
        MPI_Scatterv(s, rank == root ? sc : NULL, rank == root ? sd : NULL, MPI_INT,
                     ip ? MPI_IN_PLACE : r, sc[rank], MPI_INT, root, MPI_COMM_WORLD);
    else
        MPI_Scatter(s, count, MPI_INT, ip ? MPI_IN_PLACE : r, count, MPI_INT, root,
                    MPI_COMM_WORLD);
    const int *got = ip ? s + sd[rank] : r;
    for (int i = sc[rank] - 1; i >= 0; i--)
        expect(got, i, value(root, rank, i), v ? "scatterv" : "scatter", count);
    if (rank == root)
        for (int i = 0; i < tot; i++)
            s[i] = -3;
    free(s);
    free(r);
    free(sc);
    free(sd);
}

int main(int argc, char *argv[])
{
    const int counts[] = { 1, 1024, 2049, 30000, 262144 };

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int v = 0; v < 2; v++) {
                allgather(counts[c], in_place, v);
                for (int root = 0; root < size; root++) {
                    gather(counts[c], root, in_place, v);
                    scatter(counts[c], root, in_place, v);
                }
            }
        }
    }
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
