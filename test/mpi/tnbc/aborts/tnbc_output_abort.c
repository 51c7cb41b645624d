/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A scalar output argument inside a receive block still in flight: rank 0's Alltoall returns
 * early (rank 1 is late), then MPI_Type_contiguous stores the new handle into that block.
 * MPICH writes it while it holds its lock, so it cannot wait for the page, and the bindings do
 * not settle scalar outputs (it would cost every MPI_Test a search): the job must abort with
 * mpich-tnbc's message, never lose the handle or the block silently. Run by maint/run-tests,
 * which expects the abort. */

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
    int *sbuf = malloc(len), *rbuf;
    if (posix_memalign((void **) &rbuf, 4096, len) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < len / sizeof(int); i++)
        sbuf[i] = rank;

    if (rank == 1)
        usleep(300 * 1000);
    MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Datatype *t = (MPI_Datatype *) & rbuf[COUNT];       /* rank 1's block */
        MPI_Type_contiguous(4, MPI_INT, t);
        MPI_Type_free(t);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* not reached with T-NBC on */
    if (rank == 0)
        printf(" No Errors\n");
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
