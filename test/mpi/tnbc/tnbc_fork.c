/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* fork() while a collective is still in flight (rank 1 enters late): the child (a checkpoint,
 * a helper process) reads the receive buffer and must see the whole result, then exits
 * without MPI; the parent goes on and reads it too. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define LATE 1

static int rank, size;

static int count_wrong(const int *rbuf)
{
    int wrong = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++)
            wrong += rbuf[p * COUNT + i] != tnbc_value(p, rank, i);
    return wrong;
}

int main(int argc, char **argv)
{
    int errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *sbuf = malloc((size_t) size * COUNT * sizeof(int));
    int *rbuf = malloc((size_t) size * COUNT * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++)
            sbuf[p * COUNT + i] = tnbc_value(rank, p, i);
    if (rank == LATE)
        usleep(200 * 1000);
    MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);

    pid_t child = fork();
    if (child == 0)
        _exit(count_wrong(rbuf) ? 1 : 0);
    int status = -1;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        errs++;
        printf("rank %d: the child saw a wrong or missing result (status %d)\n", rank, status);
    }
    if (count_wrong(rbuf)) {
        errs++;
        printf("rank %d: wrong result in the parent\n", rank);
    }

    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
