/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI_Alltoallv with skewed counts (some pairs empty, receive pieces in reverse rank order),
 * MPI_IN_PLACE, send pieces that overlap, and a vector datatype with holes on the receive side
 * (whose holes must stay untouched). Data is read in forward, reverse and scattered order. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

static int count_of(int src, int dst, int scale)
{
    return (src * 7 + dst * 3) % 5 == 0 ? 0 : scale * (1 + (src + 2 * dst) % 4);
}

static int src_of(int n, int size, int order)
{
    if (order == 1)
        return size - 1 - n;
    if (order == 2 && size % 7 != 0)
        return (n * 7 + 3) % size;
    return n;
}

static int check(MPI_Comm comm, int scale, int order, int in_place, int overlap_send)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    int stot = 0, rtot = 0;

    for (int p = 0; p < size; p++) {
        /* in place sends what it receives: the counts must be symmetric */
        sc[p] = in_place ? count_of(MIN(rank, p), MAX(rank, p), scale) : count_of(rank, p, scale);
        rc[p] = in_place ? sc[p] : count_of(p, rank, scale);
    }
    for (int p = size - 1; p >= 0; p--) {       /* receive pieces in reverse rank order */
        rd[p] = rtot;
        rtot += rc[p];
    }
    for (int p = 0; p < size; p++) {
        sd[p] = overlap_send ? 0 : stot;
        stot = overlap_send ? (sc[p] > stot ? sc[p] : stot) : stot + sc[p];
    }
    int *sbuf = malloc((stot + 1) * sizeof(int)), *rbuf = malloc((rtot + 1) * sizeof(int));
    if (overlap_send) {
        /* every peer gets a prefix of the same values: value(rank, 0, i) */
        for (int i = 0; i < stot; i++)
            sbuf[i] = value(rank, 0, i);
    } else {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < sc[p]; i++)
                sbuf[sd[p] + i] = value(rank, p, i);
    }
    for (int i = 0; i < rtot; i++)
        rbuf[i] = -1;

    if (in_place) {
        /* in place needs matching layouts: send what we receive, with the same counts */
        for (int p = 0; p < size; p++)
            for (int i = 0; i < rc[p]; i++)
                rbuf[rd[p] + i] = value(rank, p, i) ^ 0x5555;
        MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rbuf, rc, rd, MPI_INT, comm);
    } else {
        MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, comm);
    }
    for (int n = 0; n < size; n++) {
        int src = src_of(n, size, order);
        for (int i = 0; i < rc[src]; i++) {
            int expect = in_place ? (value(src, rank, i) ^ 0x5555) :
                overlap_send ? value(src, 0, i) : value(src, rank, i);
            int got = rbuf[rd[src] + i];
            if (got != expect) {
                if (errs < 5)
                    fprintf(stderr, "rank %d: scale %d from %d [%d]: got %d expected %d\n",
                            rank, scale, src, i, got, expect);
                errs++;
            }
        }
    }
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sbuf);
    free(rbuf);
    return errs;
}

/* Receive through a vector type with holes: 2 ints of every 3; holes keep their marker. */
static int check_holes(MPI_Comm comm, int count)
{
    int rank, size, errs = 0;
    MPI_Datatype vec;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Type_vector(count, 2, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(vec, &lb, &ext);
    int per = (int) (ext / sizeof(int)) + 1;    /* ints per peer in the receive buffer */
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    int *sbuf = malloc((size_t) size * 2 * count * sizeof(int));
    int *rbuf = malloc((size_t) size * per * sizeof(int) + ext);

    for (int p = 0; p < size; p++) {
        sc[p] = 2 * count;
        sd[p] = p * 2 * count;
        rc[p] = 1;
        rd[p] = 0;
        for (int i = 0; i < 2 * count; i++)
            sbuf[p * 2 * count + i] = value(rank, p, i);
    }
    /* displacements are in units of the vector's extent: give each peer its own extent */
    for (int p = 0; p < size; p++)
        rd[p] = p;
    size_t rints = (size_t) size * ext / sizeof(int);
    for (size_t i = 0; i < rints; i++)
        rbuf[i] = -7;
    MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, vec, comm);
    for (int p = size - 1; p >= 0; p--) {
        int *piece = rbuf + p * ext / sizeof(int);
        for (int b = 0, k = 0; b < count; b++) {
            for (int j = 0; j < 3 && (size_t) (b * 3 + j) < ext / sizeof(int); j++) {
                int got = piece[b * 3 + j];
                int expect = j < 2 ? value(p, rank, k++) : -7;
                if (got != expect) {
                    if (errs < 5)
                        fprintf(stderr, "rank %d: holes from %d block %d [%d]: got %d exp %d\n",
                                rank, p, b, j, got, expect);
                    errs++;
                }
            }
        }
    }
    MPI_Type_free(&vec);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sbuf);
    free(rbuf);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0;
    const int scales[] = { 1, 1000, 1025, 20000, 100000 };

    MTest_Init(&argc, &argv);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (size_t s = 0; s < sizeof(scales) / sizeof(scales[0]); s++) {
        for (int order = 0; order < 3; order++)
            errs += check(order == 1 ? dup : MPI_COMM_WORLD, scales[s], order, 0, 0);
        errs += check(MPI_COMM_WORLD, scales[s], 2, 0, 1);
        errs += check(dup, scales[s], 0, 1, 0);
    }
    errs += check_holes(MPI_COMM_WORLD, 3000);
    errs += check_holes(dup, 10);
    MPI_Comm_free(&dup);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
