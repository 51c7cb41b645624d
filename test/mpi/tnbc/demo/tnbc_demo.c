/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The quick-start demo: an unchanged application that calls MPI_Alltoall, then computes on its
 * own data for a while (work that does not touch what it received), then reads every received
 * element. Run it with MPIR_CVAR_TNBC_ENABLE=0 and =1 and compare; the data check must pass
 * either way.
 *
 * Usage: tnbc_demo [bytes_per_pair] [iterations] [independent_work_ms]
 * Prints one line (rank 0): time in the call, in the independent work, in the reading, total per
 * iteration, and the CPU time the process used per iteration in all its threads (max over ranks,
 * ms), and the data check. A blocking call polls, so its CPU time is its wall time; with T-NBC
 * the helper thread's CPU time shows up in the column instead. */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
        (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double value(int src, int dst, size_t i)
{
    return src * 1.0e6 + dst * 1.0e3 + (double) (i % 997);
}

/* Real floating-point work on a private array, about `ms` milliseconds (calibrated once). */
static double work_data[4096];
static volatile double work_sink;      /* keeps the compiler from dropping the work */
static double work_units(long units)
{
    double acc = 0;
    for (long u = 0; u < units; u++)
        for (int i = 0; i < 4096; i++)
            acc += work_data[i] * work_data[(i * 7) & 4095];
    return acc;
}

static long calibrate(double ms)
{
    long units = 8;
    double t;
    for (int i = 0; i < 4096; i++)
        work_data[i] = 1.0 / (i + 1);
    do {
        units *= 2;
        t = MPI_Wtime();
        work_sink += work_units(units);
        t = MPI_Wtime() - t;
    } while (t < 0.02);
    return (long) (units * (ms / 1e3) / t) + 1;
}

int main(int argc, char *argv[])
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 1 << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    double work_ms = argc > 3 ? atof(argv[3]) : 5.0;
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

    long units = work_ms > 0 ? calibrate(work_ms) : 0;
    long errors = 0;
    double t_call = 0, t_work = 0, t_compute = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double cpu0 = process_cpu_s();
    for (int it = 0; it < iters; it++) {
        double t0 = MPI_Wtime();
        MPI_Alltoall(sendbuf, (int) count, MPI_DOUBLE, recvbuf, (int) count, MPI_DOUBLE,
                     MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        /* Work that does not touch the received data (overlaps the communication). */
        work_sink += work_units(units);
        double t1b = MPI_Wtime();
        /* Communication-related computation: read every received sub-message in order. */
        for (int src = 0; src < size; src++)
            for (size_t i = 0; i < count; i++)
                if (recvbuf[src * count + i] != value(src, rank, i))
                    errors++;
        double t2 = MPI_Wtime();
        t_call += t1 - t0;
        t_work += t1b - t1;
        t_compute += t2 - t1b;
        MPI_Barrier(MPI_COMM_WORLD);
    }

    double cpu = process_cpu_s() - cpu0;
    double local[5] = { t_call / iters, t_work / iters, t_compute / iters,
        (t_call + t_work + t_compute) / iters, cpu / iters
    }, worst[5];
    long all_errors = 0;
    MPI_Reduce(local, worst, 5, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ranks=%d bytes_per_pair=%zu iterations=%d call_ms=%.3f work_ms=%.3f "
               "read_ms=%.3f total_ms=%.3f cpu_ms=%.3f check=%s%s\n", size,
               count * sizeof(double), iters, worst[0] * 1e3, worst[1] * 1e3, worst[2] * 1e3,
               worst[3] * 1e3, worst[4] * 1e3,
               all_errors ? "FAILED" : "ok", work_sink == 12345.678 ? " " : "");
    }
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
