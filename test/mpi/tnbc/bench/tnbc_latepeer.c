/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What a process spends while it waits for a late peer: the last rank sleeps LATE_MS before
 * each Alltoall; the others call it at once and read the received data right away, so with
 * T-NBC they wait in the page-guard handler (without it, inside the blocking call) for about
 * LATE_MS: with malloc'd buffers the late block's piece on the buffer's partial last page
 * must arrive inside the call; with page-aligned buffers (aligned = 1) the whole wait is in the
 * fault handler. Prints, per waiting rank, the wait and the CPU time of the whole process
 * (all threads) meanwhile. Usage: tnbc_latepeer [bytes per pair] [iterations] [late ms]
 * [aligned] */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
        (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

int main(int argc, char *argv[])
{
    int rank, size;
    size_t bytes = argc > 1 ? (size_t) atol(argv[1]) : 1048576;
    int iters = argc > 2 ? atoi(argv[2]) : 5;
    int late_ms = argc > 3 ? atoi(argv[3]) : 400;
    int aligned = argc > 4 ? atoi(argv[4]) : 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = bytes / sizeof(int);
    int *s, *r;
    if (aligned) {
        if (posix_memalign((void **) &s, 4096, (size_t) size * n * sizeof(int)) ||
            posix_memalign((void **) &r, 4096, (size_t) size * n * sizeof(int)))
            MPI_Abort(MPI_COMM_WORLD, 1);
    } else {
        s = malloc((size_t) size * n * sizeof(int));
        r = malloc((size_t) size * n * sizeof(int));
    }
    for (size_t i = 0; i < (size_t) size * n; i++)
        s[i] = rank;
    double wait = 0, cpu = 0;
    long errors = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == size - 1) {
            struct timespec t = {.tv_sec = late_ms / 1000,.tv_nsec = (late_ms % 1000) * 1000000L };
            nanosleep(&t, NULL);
        }
        double t0 = now_ms(), c0 = cpu_ms();
        MPI_Alltoall(s, (int) n, MPI_INT, r, (int) n, MPI_INT, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++)  /* read at once: from the late peer's block first */
            errors += r[(size_t) ((size - 1 + p) % size) * n + n - 1] != (size - 1 + p) % size;
        wait += now_ms() - t0;
        cpu += cpu_ms() - c0;
    }
    if (rank < size - 1)
        printf("latepeer rank=%d late_ms=%d aligned=%d wait_ms=%.1f cpu_ms=%.1f cpu_pct=%.1f "
               "errors=%ld\n", rank, late_ms, aligned, wait / iters, cpu / iters,
               100.0 * cpu / wait, errors);
    MPI_Finalize();
    return errors != 0;
}
