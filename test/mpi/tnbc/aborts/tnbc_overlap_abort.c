/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* An erroneous program: the receive buffer of a pending MPI_Irecv is also the receive buffer
 * of an MPI_Alltoall. Rank 0's Alltoall returns early (rank 1 is late), so rank 1's block is
 * guarded; rank 1 then sends the Irecv's message before entering the Alltoall, and MPICH
 * delivers it into that block while it holds its lock, where it cannot wait. The job must
 * abort with mpich-tnbc's message, never let either message overwrite the other silently.
 * Run by maint/run-tests, which expects the abort. */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Request req = MPI_REQUEST_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2)
        MPI_Abort(MPI_COMM_WORLD, 1);
    size_t len = 2 * COUNT * sizeof(int);
    int *sbuf = malloc(len);
#ifdef TNBC_RBUF_IN_FRAME
    int frame_rbuf[2 * COUNT] __attribute__ ((aligned(4096))), *rbuf = frame_rbuf;
#else
    int *rbuf;
    if (posix_memalign((void **) &rbuf, 4096, len) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    for (int i = 0; i < 2 * COUNT; i++)
        sbuf[i] = rank;

    if (rank == 0)
        MPI_Irecv(&rbuf[COUNT], COUNT, MPI_INT, 1, 5, MPI_COMM_WORLD, &req);
    if (rank == 1) {
        usleep(300 * 1000);
        MPI_Send(sbuf, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);      /* eager: copied in progress */
    }
    MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);

    /* not reached with T-NBC on */
    if (rank == 0)
        printf(" No Errors\n");
    free(sbuf);
#ifndef TNBC_RBUF_IN_FRAME
    free(rbuf);
#endif
    MPI_Finalize();
    return 0;
}
