/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The quick-start demo: an unchanged application that calls MPI_Alltoall and then computes on
 * what it received. Run it with MPIR_CVAR_TNBC_ENABLE=0 and =1 and compare; the data check must
 * pass either way.
 *
 * Usage: tnbc_demo [bytes_per_pair] [iterations]
 * Prints one line (rank 0): time in the call, time computing, total per iteration (max over
 * ranks, ms), and the data check. */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double value(int src, int dst, size_t i)
{
    return src * 1.0e6 + dst * 1.0e3 + (double) (i % 997);
}

int main(int argc, char *argv[])
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 1 << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    size_t count = bytes / sizeof(double);
    if (count == 0 || iters <= 0) {
        if (rank == 0)
            fprintf(stderr, "usage: tnbc_demo [bytes_per_pair >= 8] [iterations >= 1]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    double *sendbuf = malloc(count * size * sizeof(double));
    double *recvbuf = malloc(count * size * sizeof(double));
    if (!sendbuf || !recvbuf)
        MPI_Abort(MPI_COMM_WORLD, 3);
    for (int dst = 0; dst < size; dst++)
        for (size_t i = 0; i < count; i++)
            sendbuf[dst * count + i] = value(rank, dst, i);

    long errors = 0;
    double t_call = 0, t_compute = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < iters; it++) {
        double t0 = MPI_Wtime();
        MPI_Alltoall(sendbuf, (int) count, MPI_DOUBLE, recvbuf, (int) count, MPI_DOUBLE,
                     MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        /* Communication-related computation: read every received sub-message in order. */
        for (int src = 0; src < size; src++)
            for (size_t i = 0; i < count; i++)
                if (recvbuf[src * count + i] != value(src, rank, i))
                    errors++;
        double t2 = MPI_Wtime();
        t_call += t1 - t0;
        t_compute += t2 - t1;
        MPI_Barrier(MPI_COMM_WORLD);
    }

    double local[2] = { t_call / iters, t_compute / iters }, worst[2];
    long all_errors = 0;
    MPI_Reduce(local, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ranks=%d bytes_per_pair=%zu iterations=%d call_ms=%.3f compute_ms=%.3f "
               "total_ms=%.3f check=%s\n", size, count * sizeof(double), iters,
               worst[0] * 1e3, worst[1] * 1e3, (worst[0] + worst[1]) * 1e3,
               all_errors ? "FAILED" : "ok");
    }
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
