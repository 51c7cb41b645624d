/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A short job for the Finalize-hang check (maint/run-tests, group "finalize"): Init, one
 * Allreduce, a Barrier right before Finalize (the pattern that hung most often over TCP). */

#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && sum != size * (size - 1) / 2) {
        printf("wrong sum %d\n", sum);
        return 1;
    }
    return 0;
}
