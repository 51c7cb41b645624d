/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI_Alltoallw with T-NBC: a datatype per peer on both sides (MPI_INT, a contiguous pair of
 * ints, and a pair of ints followed by a one-int hole), byte displacements with a marker int
 * between pieces, receive pieces in reverse rank order, skewed and empty counts, and
 * MPI_IN_PLACE. Flat receive types return early; a hole on the receive side makes the process
 * wait in the call (packed). Gaps and holes must keep their marker. Data is read in forward,
 * reverse and scattered order. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MARK (-7)

enum { K_INT, K_PAIR, K_HOLEY, K_COUNT };
static MPI_Datatype kind_type[K_COUNT];

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

/* ints from src to dst: even (a pair type carries two), sometimes none */
static int ints_of(int src, int dst, int scale)
{
    return (src * 7 + dst * 3) % 5 == 0 ? 0 : 2 * scale * (1 + (src + 2 * dst) % 4);
}

static int elements(int kind, int n)
{
    return kind == K_INT ? n : n / 2;
}

/* where int i of a piece sits, and how many ints the piece spans */
static int int_pos(int kind, int i)
{
    return kind == K_HOLEY ? (i / 2) * 3 + i % 2 : i;
}

static int span(int kind, int n)
{
    return kind == K_HOLEY ? (n / 2) * 3 : n;
}

static int src_of(int n, int size, int order)
{
    if (order == 1)
        return size - 1 - n;
    if (order == 2 && size % 7 != 0)
        return (n * 7 + 3) % size;
    return n;
}

static int check(MPI_Comm comm, int scale, int order, int in_place, int recv_holes)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sn = malloc(size * sizeof(int)), *rn = malloc(size * sizeof(int));
    int *sk = malloc(size * sizeof(int)), *rk = malloc(size * sizeof(int));
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    MPI_Datatype *st = malloc(size * sizeof(MPI_Datatype));
    MPI_Datatype *rt = malloc(size * sizeof(MPI_Datatype));
    int stot = 0, rtot = 0;

    for (int p = 0; p < size; p++) {
        /* in place sends what it receives: the counts must be symmetric */
        sn[p] = in_place ? ints_of(MIN(rank, p), MAX(rank, p), scale) : ints_of(rank, p, scale);
        rn[p] = in_place ? sn[p] : ints_of(p, rank, scale);
        sk[p] = (rank + p) % K_COUNT;
        rk[p] = recv_holes ? (p + 2 * rank) % K_COUNT : ((p + rank) % 2 ? K_PAIR : K_INT);
        if (in_place)
            sk[p] = rk[p];
    }
    /* byte displacements; receive pieces in reverse rank order; one marker int between */
    for (int p = size - 1; p >= 0; p--) {
        rd[p] = rtot * (int) sizeof(int);
        rtot += span(rk[p], rn[p]) + 1;
    }
    for (int p = 0; p < size; p++) {
        sd[p] = stot * (int) sizeof(int);
        stot += span(sk[p], sn[p]) + 1;
    }
    for (int p = 0; p < size; p++) {
        sc[p] = elements(sk[p], sn[p]);
        rc[p] = elements(rk[p], rn[p]);
        st[p] = kind_type[sk[p]];
        rt[p] = kind_type[rk[p]];
    }
    int *sbuf = malloc((stot + 1) * sizeof(int)), *rbuf = malloc((rtot + 1) * sizeof(int));
    for (int i = 0; i < stot; i++)
        sbuf[i] = MARK;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < sn[p]; i++)
            sbuf[sd[p] / sizeof(int) + int_pos(sk[p], i)] = value(rank, p, i);
    for (int i = 0; i < rtot; i++)
        rbuf[i] = MARK;

    if (in_place) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < rn[p]; i++)
                rbuf[rd[p] / sizeof(int) + int_pos(rk[p], i)] = value(rank, p, i) ^ 0x5555;
        MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, rbuf, rc, rd, rt, comm);
    } else {
        MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, comm);
    }
    for (int i = 0; i < stot; i++)      /* the send buffer may be reused at once */
        sbuf[i] = 0;
    for (int n = 0; n < size; n++) {
        int src = src_of(n, size, order);
        int *piece = rbuf + rd[src] / sizeof(int);
        for (int i = 0, k = 0; i <= span(rk[src], rn[src]); i++) {
            int is_data = k < rn[src] && int_pos(rk[src], k) == i;
            int expect = !is_data ? MARK : in_place ? (value(src, rank, k) ^ 0x5555) :
                value(src, rank, k);
            k += is_data;
            if (piece[i] != expect) {
                if (errs < 5)
                    fprintf(stderr, "rank %d: scale %d%s%s from %d [%d]: got %d expected %d\n",
                            rank, scale, in_place ? " in place" : "",
                            recv_holes ? " holes" : "", src, i, piece[i], expect);
                errs++;
            }
        }
    }
    free(sn);
    free(rn);
    free(sk);
    free(rk);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
    free(sbuf);
    free(rbuf);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0;
    const int scales[] = { 1, 1000, 1025, 20000, 100000 };
    MPI_Datatype pair;

    MTest_Init(&argc, &argv);
    kind_type[K_INT] = MPI_INT;
    MPI_Type_contiguous(2, MPI_INT, &kind_type[K_PAIR]);
    MPI_Type_commit(&kind_type[K_PAIR]);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_create_resized(pair, 0, 3 * sizeof(int), &kind_type[K_HOLEY]);
    MPI_Type_commit(&kind_type[K_HOLEY]);
    MPI_Type_free(&pair);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (size_t s = 0; s < sizeof(scales) / sizeof(scales[0]); s++) {
        for (int order = 0; order < 3; order++)
            errs += check(order == 1 ? dup : MPI_COMM_WORLD, scales[s], order, 0, 0);
        errs += check(MPI_COMM_WORLD, scales[s], 2, 0, 1);
        errs += check(dup, scales[s], 1, 1, 0);
        errs += check(dup, scales[s], 0, 1, 1);
    }
    MPI_Comm_free(&dup);
    MPI_Type_free(&kind_type[K_PAIR]);
    MPI_Type_free(&kind_type[K_HOLEY]);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
