/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* realloc of a receive buffer whose collective is still in flight: the contents must move with
 * it, whether the chunk grows in the heap (small) or glibc moves it with mremap (1 MiB and up),
 * and through reallocarray too. The last rank enters each Alltoall late, so its block is still
 * coming when the others reallocate; every int is checked. */

#define _GNU_SOURCE
#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, errs;

static int value(int from, int to, int i, int count)
{
    return from * 1000003 + to * 101 + i + count;
}

/* ints per pair: count; the receive buffer grows to grow times its size at once */
static void run(const char *what, int count, int grow, int use_reallocarray)
{
    int *sbuf = malloc((size_t) size * count * sizeof(int));
    int *rbuf = malloc((size_t) size * count * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            sbuf[p * count + i] = value(rank, p, i, count);
    if (rank == size - 1)
        usleep(200 * 1000);
    MPI_Alltoall(sbuf, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD);
    size_t n = (size_t) size * count * grow;
    rbuf = use_reallocarray ? reallocarray(rbuf, n, sizeof(int)) : realloc(rbuf, n * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            if (rbuf[p * count + i] != value(p, rank, i, count)) {
                if (errs++ < 5)
                    printf("rank %d %s: from %d int %d is %d\n", rank, what, p, i,
                           rbuf[p * count + i]);
                break;
            }
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    run("heap", 2048, 3, 0);
    run("mremap", 256 * 1024, 2, 0);
    run("reallocarray", 256 * 1024, 4, 1);

    MTest_Finalize(errs);
    return 0;
}
