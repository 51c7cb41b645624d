/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI_Alltoall delivers exactly the right bytes whatever T-NBC does with the call: several
 * sizes around the page and threshold boundaries, two communicators, and the received data read
 * in forward, reverse and scattered order. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

static int check_alltoall(MPI_Comm comm, int count, int order)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    int *sendbuf = malloc((size_t) size * count * sizeof(int));
    int *recvbuf = malloc((size_t) size * count * sizeof(int));
    for (int dst = 0; dst < size; dst++)
        for (int i = 0; i < count; i++)
            sendbuf[(size_t) dst * count + i] = value(rank, dst, i);
    for (size_t k = 0; k < (size_t) size * count; k++)
        recvbuf[k] = -1;

    MPI_Alltoall(sendbuf, count, MPI_INT, recvbuf, count, MPI_INT, comm);

    for (int n = 0; n < size; n++) {
        int src = order == 0 ? n : order == 1 ? size - 1 - n : (n * 7 + 3) % size;
        if (order == 2 && size % 7 == 0)
            src = n;    /* 7 does not generate the group: fall back to forward */
        for (int i = 0; i < count; i++) {
            int got = recvbuf[(size_t) src * count + i];
            if (got != value(src, rank, i)) {
                if (errs < 5)
                    fprintf(stderr, "rank %d: count %d from %d [%d]: got %d expected %d\n",
                            rank, count, src, i, got, value(src, rank, i));
                errs++;
            }
        }
    }
    free(sendbuf);
    free(recvbuf);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0;
    const int counts[] = { 1, 1000, 1024, 1025, 4096, 65536 + 3, 262144 };

    MTest_Init(&argc, &argv);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int order = 0; order < 3; order++) {
            errs += check_alltoall(MPI_COMM_WORLD, counts[c], order);
            errs += check_alltoall(dup, counts[c], order);
        }
    }
    MPI_Comm_free(&dup);

    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
