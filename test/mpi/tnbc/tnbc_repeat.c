/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Thousands of early-returning Alltoalls into the same buffer, each read at once: the reader
 * meets every page just as it is opened, again and again at the same addresses. A fault that
 * arrives as its page is released must be run again, however many came before at that address
 * and however often the kernel repeats it once the page is open (a handler that counted them
 * across calls, or believed the first repeat, killed the process after some hundred calls). */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 3000

int main(int argc, char *argv[])
{
    int rank, size, errs = 0;
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int count = 65536;    /* 512 KiB of doubles per pair */
    size_t n = (size_t) size * count;
    double *sbuf = malloc(n * sizeof(double)), *rbuf = malloc(n * sizeof(double));
    if (!sbuf || !rbuf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            sbuf[(size_t) p * count + i] = rank * 1.0e6 + p * 1.0e3 + i % 997;
    for (int r = 0; r < ROUNDS && errs == 0; r++) {
        MPI_Alltoall(sbuf, count, MPI_DOUBLE, rbuf, count, MPI_DOUBLE, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < count; i++)
                if (rbuf[(size_t) p * count + i] != p * 1.0e6 + rank * 1.0e3 + i % 997 &&
                    errs++ < 3)
                    fprintf(stderr, "rank %d round %d: from %d [%d] wrong\n", rank, r, p, i);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
