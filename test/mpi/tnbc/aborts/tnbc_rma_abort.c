/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A receive buffer that is also RMA window memory: rank 0's Alltoall returns early (rank 1 is
 * late), then rank 1 puts into the block rank 0 still waits for. MPICH writes the put while it
 * holds its lock, so it cannot wait for the page: the job must abort with mpich-tnbc's message
 * (never lose the put or the block silently). Run by maint/run-tests, which expects the abort. */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t len = (size_t) size * COUNT * sizeof(int);
    int *sbuf = malloc(len), *rbuf = malloc(len);
    for (size_t i = 0; i < len / sizeof(int); i++)
        sbuf[i] = rank;
    MPI_Win win;
    MPI_Win_create(rbuf, len, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    if (rank == 1) {
        int v = 42;
        usleep(100 * 1000);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Put(&v, 1, MPI_INT, 0, COUNT, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    /* not reached with T-NBC on */
    if (rank == 0)
        printf(" No Errors\n");
    MPI_Win_free(&win);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
