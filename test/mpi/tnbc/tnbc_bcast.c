/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI_Bcast from every root, sizes around page and segment boundaries, read in forward,
 * reverse and scattered order; the root overwrites its buffer right after the call (its data
 * must already be safe); a derived datatype with holes; a stack buffer. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int value(int root, int i, int round)
{
    return root * 7777 + i * 3 + round;
}

static int check(MPI_Comm comm, int count, int root, int order, int round)
{
    int rank, errs = 0;
    MPI_Comm_rank(comm, &rank);
    int *buf = malloc((size_t) count * sizeof(int) + 1);
    for (int i = 0; i < count; i++)
        buf[i] = rank == root ? value(root, i, round) : -1;
    MPI_Bcast(buf, count, MPI_INT, root, comm);
    if (rank == root) {
        /* the root may reuse its buffer at once */
        for (int i = 0; i < count; i++)
            buf[i] = -2;
    } else {
        for (int n = 0; n < count; n++) {
            int i = order == 0 ? n : order == 1 ? count - 1 - n : (int) ((n * 40503LL) % count);
            if (order == 2 && count % 40503 == 0)
                i = n;
            if (buf[i] != value(root, i, round)) {
                if (errs < 5)
                    fprintf(stderr, "rank %d: count %d root %d [%d]: got %d expected %d\n",
                            rank, count, root, i, buf[i], value(root, i, round));
                errs++;
            }
        }
    }
    free(buf);
    return errs;
}

static int check_holes(MPI_Comm comm, int count, int root)
{
    int rank, errs = 0;
    MPI_Datatype vec;
    MPI_Comm_rank(comm, &rank);
    MPI_Type_vector(count, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    double *buf = malloc(2 * count * sizeof(double));
    for (int i = 0; i < 2 * count; i++)
        buf[i] = rank == root ? i : -1;
    MPI_Bcast(buf, 1, vec, root, comm);
    for (int i = 0; i < 2 * count; i++) {
        double expect = (i % 2 == 0 || rank == root) ? i : -1;
        if (buf[i] != expect) {
            if (errs < 5)
                fprintf(stderr, "rank %d: holes [%d]: got %g expected %g\n", rank, i, buf[i],
                        expect);
            errs++;
        }
    }
    MPI_Type_free(&vec);
    free(buf);
    return errs;
}

static int check_stack(MPI_Comm comm, int root)
{
    int rank, errs = 0;
    int buf[12000];     /* 48 KB on the stack: whole pages get guarded */
    MPI_Comm_rank(comm, &rank);
    for (int i = 0; i < 12000; i++)
        buf[i] = rank == root ? value(root, i, 9) : -1;
    MPI_Bcast(buf, 12000, MPI_INT, root, comm);
    for (int i = 11999; i >= 0; i--)
        if (buf[i] != value(root, i, 9))
            errs++;
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0, size;
    const int counts[] = { 1, 1023, 1024, 1025, 4099, 65536 + 3, 300000 };

    MTest_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int round = 0;
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int root = 0; root < size; root++)
            for (int order = 0; order < 3; order++)
                errs += check(order == 1 ? dup : MPI_COMM_WORLD, counts[c], root, order, round++);
    for (int root = 0; root < size; root++) {
        errs += check_holes(MPI_COMM_WORLD, 5000, root);
        errs += check_stack(dup, root);
    }
    MPI_Comm_free(&dup);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
