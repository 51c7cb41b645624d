/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The neighbour collectives with T-NBC: Neighbor_alltoall, Neighbor_alltoallv,
 * Neighbor_alltoallw (byte displacements; a derived type for every other piece),
 * Neighbor_allgather and Neighbor_allgatherv on a non-periodic Cartesian line (MPI_PROC_NULL at
 * the ends) and on a distributed graph where each process sends two messages to the next rank
 * and one to itself (a repeated neighbour: the i-th message to a process meets its i-th
 * receive from us in list order, in reverse list order for Neighbor_alltoall: MPICH 4.0.2's
 * matching, which T-NBC keeps). Pieces
 * below and above the edge size; the result is read in reverse order and the send buffer
 * overwritten at once. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>

#define MAXDEG 3

static int rank, size, errs;

/* one topology as this process sees it */
typedef struct {
    MPI_Comm comm;
    const char *name;
    int deg;                    /* in = out degree */
    int src[MAXDEG];            /* in-neighbour j (MPI_PROC_NULL: none) */
    int src_piece[2][MAXDEG];   /* ... sent us its out piece src_piece[reversed][j] */
} topo_t;

static int value(int src, int piece, int i)
{
    return src * 1000003 + piece * 7919 + i;
}

/* piece k of process r in the v variants */
static int vcount(int r, int k, int count)
{
    return count + (r * 3 + k * 5) % 7;
}

static void check(const topo_t * t, const int *r, const int *rd, const int *rc, int allgather,
                  int reversed, const char *what, int count)
{
    for (int j = t->deg - 1; j >= 0; j--) {
        for (int i = rc[j] - 1; i >= 0; i--) {
            int want = t->src[j] == MPI_PROC_NULL ? -1 :
                value(t->src[j], allgather ? 0 : t->src_piece[reversed][j], i);
            if (r[rd[j] + i] != want) {
                if (errs < 10)
                    fprintf(stderr, "rank %d %s %s count %d piece %d [%d]: got %d expected %d\n",
                            rank, t->name, what, count, j, i, r[rd[j] + i], want);
                errs++;
            }
        }
    }
}

static MPI_Datatype one_int;   /* a derived type with MPI_INT's signature */

/* v: 0 regular, 1 the v variant, 2 Neighbor_alltoallw (v layout, displacements in bytes) */
static void run(const topo_t * t, int count, int v, int allgather)
{
    int sc[MAXDEG], sd[MAXDEG], rc[MAXDEG], rd[MAXDEG], stot = 0, rtot = 0;
    for (int k = 0; k < t->deg; k++) {
        sc[k] = v && !allgather ? vcount(rank, k, count) : count;
        sd[k] = allgather ? 0 : stot;
        stot = allgather ? count : stot + sc[k];
        /* pieces in reverse order in the receive buffer: displacements need not follow */
        int j = t->deg - 1 - k;
        rc[j] = !v || t->src[j] == MPI_PROC_NULL ? count :
            (allgather ? count : vcount(t->src[j], t->src_piece[0][j], count));
    }
    for (int k = 0; k < t->deg; k++) {
        rd[k] = rtot;
        rtot += rc[k];
    }
    int *s = malloc((stot + 1) * sizeof(int)), *r = malloc((rtot + 1) * sizeof(int));
    for (int k = 0; k < t->deg; k++)
        for (int i = 0; i < sc[k]; i++)
            s[sd[k] + i] = value(rank, allgather ? 0 : k, i);
    for (int i = 0; i < rtot; i++)
        r[i] = -1;
    if (v == 2) {
        MPI_Aint sdb[MAXDEG], rdb[MAXDEG];
        MPI_Datatype st[MAXDEG], rt[MAXDEG];
        for (int k = 0; k < t->deg; k++) {
            sdb[k] = sd[k] * (MPI_Aint) sizeof(int);
            rdb[k] = rd[k] * (MPI_Aint) sizeof(int);
            st[k] = k % 2 ? one_int : MPI_INT;
            rt[k] = k % 2 ? MPI_INT : one_int;
        }
        MPI_Neighbor_alltoallw(s, sc, sdb, st, r, rc, rdb, rt, t->comm);
    } else if (allgather && v)
        MPI_Neighbor_allgatherv(s, count, MPI_INT, r, rc, rd, MPI_INT, t->comm);
    else if (allgather)
        MPI_Neighbor_allgather(s, count, MPI_INT, r, count, MPI_INT, t->comm);
    else if (v)
        MPI_Neighbor_alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, t->comm);
    else
        MPI_Neighbor_alltoall(s, count, MPI_INT, r, count, MPI_INT, t->comm);
    for (int i = 0; i < stot; i++)
        s[i] = -7;
    if (!v)     /* the regular variants place piece j at j * count */
        for (int k = 0; k < t->deg; k++)
            rd[k] = k * count;
    check(t, r, rd, rc, allgather, !v && !allgather,
          allgather ? (v ? "allgatherv" : "allgather") :
          (v == 2 ? "alltoallw" : v ? "alltoallv" : "alltoall"), count);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    topo_t line = {.name = "cart line",.deg = 2 }, graph = {.name = "dist graph",.deg = 3 };

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* line: in/out neighbours (rank - 1, rank + 1); rank - 1 sent us its piece 1 (to its + 1) */
    int dims[1] = { size }, periods[1] = { 0 };
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line.comm);
    MPI_Cart_shift(line.comm, 0, 1, &line.src[0], &line.src[1]);
    for (int rev = 0; rev <= 1; rev++) {
        line.src_piece[rev][0] = 1;
        line.src_piece[rev][1] = 0;
    }

    /* graph: out (next, next, self), in (prev, prev, self) */
    int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    int dsts[3] = { next, next, rank }, srcs[3] = { prev, prev, rank };
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, MPI_UNWEIGHTED, 3, dsts,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph.comm);
    for (int rev = 0; rev <= 1; rev++) {
        for (int j = 0; j < 3; j++) {
            /* the nth (nth-last) receive from srcs[j] gets the source's nth send to us */
            int q = srcs[j], nth = 0, qdsts[3] = { (q + 1) % size, (q + 1) % size, q };
            for (int x = 0; x < 3; x++)
                nth += (srcs[x] == q && (rev ? x > j : x < j));
            graph.src[j] = q;
            for (int e = 0; e < 3; e++)
                if (qdsts[e] == rank && nth-- == 0)
                    graph.src_piece[rev][j] = e;
        }
    }

    MPI_Type_contiguous(1, MPI_INT, &one_int);
    MPI_Type_commit(&one_int);
    const int counts[] = { 3, 1100, 5000 };
    for (int c = 0; c < 3; c++)
        for (int v = 0; v <= 2; v++)
            for (int allgather = 0; allgather <= (v < 2); allgather++) {
                run(&line, counts[c], v, allgather);
                run(&graph, counts[c], v, allgather);
            }
    MPI_Type_free(&one_int);

    MPI_Comm_free(&line.comm);
    MPI_Comm_free(&graph.comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
