/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Kernels that calibrate the emulated cluster (maint/bench-calibrate): does a rank on its CPU
 * share behave like a core of its own, and does the wire deliver what the links allow?
 *
 *   tnbc_calibrate compute MADDS          every rank: MADDS dependent multiply-adds, no MPI
 *   tnbc_calibrate latency BYTES ITERS    ping-pong between rank 0 and the last rank
 *   tnbc_calibrate alltoall BYTES ITERS   blocking MPI_Alltoall, BYTES per pair
 *   tnbc_calibrate msgrate BYTES COUNT ITERS
 *                                         rank 0 sends COUNT messages of BYTES at once to the
 *                                         last rank, whose receives are posted first
 *
 * Prints key=value lines: compute "rank=R seconds=S" per rank; latency "half_rtt_us=" (median
 * of ITERS); alltoall "iter=K ms=" per iteration (maximum over ranks), then "errors=N" (data
 * checked); msgrate "per_msg_us=" (median over ITERS of a burst's time, from the receiver's
 * word that its receives are posted to its word that they completed, less the fastest round
 * trip, divided by COUNT: the software cost of one message at its sender or its receiver,
 * whichever is slower). */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static void compute(long madds)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    volatile double seed = 1.0000001;
    double x = seed, t0 = MPI_Wtime();
    for (long i = 0; i < madds; i++)
        x = x * seed + 1e-9;    /* each step needs the previous one: one core's latency */
    double t = MPI_Wtime() - t0;
    printf("rank=%d seconds=%.4f check=%g\n", rank, t, x > 0 ? 1.0 : 0.0);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* One ping-pong of bytes with peer on tag, rank 0 leading: its seconds. */
static double round_trip(char *buf, int bytes, int peer, int tag)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double t0 = MPI_Wtime();
    if (rank == 0) {
        MPI_Send(buf, bytes, MPI_CHAR, peer, tag, MPI_COMM_WORLD);
        MPI_Recv(buf, bytes, MPI_CHAR, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, bytes, MPI_CHAR, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, bytes, MPI_CHAR, peer, tag, MPI_COMM_WORLD);
    }
    return MPI_Wtime() - t0;
}

static void latency(size_t bytes, int iters)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank == 0 ? size - 1 : 0;
    char *buf = calloc(bytes + 1, 1);
    double *half = calloc(iters, sizeof(double));
    MPI_Barrier(MPI_COMM_WORLD);
    if (size > 1 && (rank == 0 || rank == size - 1)) {
        for (int k = -10; k < iters; k++) {     /* ten rounds to connect and warm up */
            double t = round_trip(buf, (int) bytes, peer, 0);
            if (k >= 0)
                half[k] = t / 2;
        }
        if (rank == 0) {
            qsort(half, iters, sizeof(double), cmp_double);
            printf("half_rtt_us=%.2f p10_us=%.2f p90_us=%.2f\n", 1e6 * half[iters / 2],
                   1e6 * half[iters / 10], 1e6 * half[iters * 9 / 10]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    free(half);
}

static void alltoall(size_t bytes, int iters)
{
    int rank, size, errors = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = bytes / sizeof(int);
    int *s = malloc(n * size * sizeof(int)), *r = malloc(n * size * sizeof(int));
    for (int k = -1; k < iters; k++) {          /* one round to connect */
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < n; i += 1024)
                s[p * n + i] = rank * 7 + p + k;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Alltoall(s, (int) n, MPI_INT, r, (int) n, MPI_INT, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0, tmax;
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < n; i += 1024)
                errors += r[p * n + i] != p * 7 + rank + k;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0 && k >= 0)
            printf("iter=%d ms=%.3f\n", k, 1e3 * tmax);
    }
    int all;
    MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("errors=%d\n", all);
    free(s);
    free(r);
}

static void msgrate(size_t bytes, int count, int iters)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank == 0 ? size - 1 : 0;
    char *buf = calloc((bytes + 1) * (size_t) count, 1);
    MPI_Request *reqs = malloc(count * sizeof(MPI_Request));
    double *per = calloc(iters, sizeof(double)), rtt = 1e30;
    MPI_Barrier(MPI_COMM_WORLD);
    if (size > 1 && (rank == 0 || rank == size - 1)) {
        for (int k = -200; k < 0; k++) {        /* connect, warm up, take the fastest round trip */
            double t = round_trip(buf, 0, peer, 1);
            if (t < rtt)
                rtt = t;
        }
        for (int k = -2; k < iters; k++) {
            /* the receiver posts every receive first and says so: the burst meets posted
             * receives, as a collective's does */
            if (rank != 0) {
                for (int m = 0; m < count; m++)
                    MPI_Irecv(buf + (bytes + 1) * (size_t) m, (int) bytes, MPI_CHAR, peer, 0,
                              MPI_COMM_WORLD, &reqs[m]);
                MPI_Send(buf, 0, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE);
                MPI_Send(buf, 0, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                continue;
            }
            MPI_Recv(buf, 0, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double t0 = MPI_Wtime();
            for (int m = 0; m < count; m++)
                MPI_Isend(buf + (bytes + 1) * (size_t) m, (int) bytes, MPI_CHAR, peer, 0,
                          MPI_COMM_WORLD, &reqs[m]);
            MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(buf, 0, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (k >= 0)
                per[k] = (MPI_Wtime() - t0 - rtt) / count;
        }
        if (rank == 0) {
            qsort(per, iters, sizeof(double), cmp_double);
            printf("per_msg_us=%.3f p10_us=%.3f p90_us=%.3f rtt_us=%.2f\n", 1e6 * per[iters / 2],
                   1e6 * per[iters / 10], 1e6 * per[iters * 9 / 10], 1e6 * rtt);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    free(reqs);
    free(per);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int ok = 1;
    if (argc == 3 && !strcmp(argv[1], "compute"))
        compute(atol(argv[2]));
    else if (argc == 4 && !strcmp(argv[1], "latency") && atoi(argv[3]) > 0)
        latency((size_t) atol(argv[2]), atoi(argv[3]));
    else if (argc == 5 && !strcmp(argv[1], "msgrate") && atoi(argv[3]) > 0 && atoi(argv[4]) > 0)
        msgrate((size_t) atol(argv[2]), atoi(argv[3]), atoi(argv[4]));
    else if (argc == 4 && !strcmp(argv[1], "alltoall") && atol(argv[2]) >= (long) sizeof(int))
        alltoall((size_t) atol(argv[2]), atoi(argv[3]));
    else
        ok = 0;
    if (!ok)
        fprintf(stderr, "usage: tnbc_calibrate compute MADDS | latency BYTES ITERS | "
                "msgrate BYTES COUNT ITERS | alltoall BYTES ITERS\n");
    fflush(stdout);
    MPI_Finalize();
    return ok ? 0 : 2;
}
