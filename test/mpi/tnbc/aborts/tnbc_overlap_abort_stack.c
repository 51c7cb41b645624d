/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* tnbc_overlap_abort with the receive buffer in a live frame (main's): the page MPICH writes
 * under its lock is on the calling thread's stack, above the frame of the MPI routine, so it
 * must not be given up as a frame that has returned (which would drop the rest of the late
 * block silently). The job must abort with mpich-tnbc's message. Run by maint/run-tests. */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */

int main(int argc, char **argv)
{
    int rank, size;
    int rbuf[2 * COUNT] __attribute__ ((aligned(4096)));
    MPI_Request req = MPI_REQUEST_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int *sbuf = malloc(2 * COUNT * sizeof(int));
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
    MPI_Finalize();
    return 0;
}
