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
 *   tnbc_calibrate wakeup ITERS WORK_US   (T-NBC on, every call early) how soon a receiver's
 *                                         helper completes a message while its rank computes
 *
 * Prints key=value lines: compute "rank=R seconds=S" per rank; latency "half_rtt_us=" (median
 * of ITERS); alltoall "iter=K ms=" per iteration (maximum over ranks), then "errors=N" (data
 * checked); msgrate "per_msg_us=" (median over ITERS of a burst's time, from the receiver's
 * word that its receives are posted to its word that they completed, less the fastest round
 * trip, divided by COUNT: the software cost of one message at its sender or its receiver,
 * whichever is slower); wakeup "wake_us=" per sample, then "wake_p50_us= wake_p99_us=
 * wake_max_us= samples= missed= errors= sender_held=" (see wakeup()). */

#include "../tnbc_test_pvar.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* volatile: the compiler must keep the work; a capped rank spends its quota on it */
static void spin_until(double t_us)
{
    volatile double x = 1.0;
    while (now_us() < t_us)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
}

/* Pairs of ranks on different nodes (rank r with r + size/2: block placement puts them on
 * different nodes) take turns. After a barrier the receiver enters a one-page Bcast, which
 * returns early, and computes for 3 * work_us; the root computes until a random moment between
 * work_us and 2 * work_us (longer than a capped rank can be held out of its CPU, so that the
 * receive is posted), notes the time (CLOCK_MONOTONIC: every namespace of the testbed shares
 * the machine's clock), broadcasts it and computes on. The receiver's helper runs when the
 * message is there and completes the receive; after the work the receiver reads when the
 * helper last completed something (tnbc_helper_progress_ns): the delay from the send. It
 * includes the wire, the network stack and the landing: the same layout with a core per rank
 * gives the floor. Samples whose root spent over a millisecond in its own Bcast (its CPU share
 * ran out while it posted the send) are counted apart, as are samples the helper did not
 * complete (the receiver's call or read did). */
static void wakeup(int iters, int work_us)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size % 2) {
        if (rank == 0)
            fprintf(stderr, "tnbc_calibrate wakeup: the number of ranks must be even\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int partner = (rank + size / 2) % size, page = 4096;
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < partner ? rank : partner, rank, &pair);
    int me;
    MPI_Comm_rank(pair, &me);
    /* per iteration: as receiver the delay (-1: missed), as root the time in the Bcast */
    double *buf = NULL, *mine = calloc(iters + 1, sizeof(double)), *theirs = calloc(iters + 1,
                                                                             sizeof(double));
    if (posix_memalign((void **) &buf, page, page))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_T_pvar_session session;
    int provided, errors = 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    srand(1 + rank);
    for (int k = -20; k < iters; k++) {        /* twenty rounds to connect and start the helper */
        int root = (k & 1), receiving = size > 1 && me != root;
        MPI_Barrier(MPI_COMM_WORLD);
        if (size < 2)
            break;
        double t0 = now_us();
        if (receiving) {
            MPI_Bcast(buf, page, MPI_BYTE, root, pair);
            spin_until(t0 + 3 * work_us);
            double reading = now_us();
            double sent = buf[0];       /* landed long ago, or this read waits for it */
            errors += buf[page / sizeof(double) - 1] != k;
            unsigned long long ns = tnbc_read_pvar(session, "tnbc_helper_progress_ns");
            double done = ns == TNBC_PVAR_MISSING ? 0 : ns / 1e3;
            /* a helper round that ended after the read began may have been the read's: the
             * sample only says the helper was late, so it counts as missed */
            if (k >= 0)
                mine[k] = done >= sent && done < reading ? done - sent : -1;
        } else {
            spin_until(t0 + work_us * (1 + (double) rand() / RAND_MAX));
            buf[page / sizeof(double) - 1] = k;
            double before = buf[0] = now_us();
            MPI_Bcast(buf, page, MPI_BYTE, root, pair);
            if (k >= 0)
                mine[k] = now_us() - before;
            spin_until(t0 + 3 * work_us);
        }
    }
    if (size > 1)
        MPI_Sendrecv(mine, iters, MPI_DOUBLE, 1 - me, 8, theirs, iters, MPI_DOUBLE, 1 - me, 8,
                     pair, MPI_STATUS_IGNORE);
    int n = 0, missed = 0, held = 0;
    double *delay = calloc(iters + 1, sizeof(double));
    for (int k = 0; k < iters && size > 1; k++) {
        if ((k & 1) == me)
            continue;   /* we were the root */
        if (theirs[k] > 1000)
            held++;
        else if (mine[k] < 0)
            missed++;
        else
            delay[n++] = mine[k];
    }
    for (int i = 0; i < n; i++)
        printf("rank=%d wake_us=%.1f\n", rank, delay[i]);
    /* every sample of the job at rank 0 */
    int *counts = NULL, *displs = NULL, total = 0, tm[3] = { missed, errors, held }, all[3];
    double *every = NULL;
    if (rank == 0) {
        counts = calloc(size, sizeof(int));
        displs = calloc(size, sizeof(int));
    }
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int p = 0; p < size; p++) {
            displs[p] = total;
            total += counts[p];
        }
        every = calloc(total + 1, sizeof(double));
    }
    MPI_Gatherv(delay, n, MPI_DOUBLE, every, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Reduce(tm, all, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total > 0) {
        qsort(every, total, sizeof(double), cmp_double);
        printf("wake_p50_us=%.1f wake_p99_us=%.1f wake_max_us=%.1f samples=%d missed=%d "
               "errors=%d sender_held=%d\n", every[total / 2], every[(int) (total * 0.99)],
               every[total - 1], total, all[0], all[1], all[2]);
    } else if (rank == 0)
        printf("samples=0 missed=%d errors=%d sender_held=%d\n", all[0], all[1], all[2]);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Comm_free(&pair);
    free(buf);
    free(delay);
    free(mine);
    free(theirs);
    free(counts);
    free(displs);
    free(every);
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
    else if (argc == 4 && !strcmp(argv[1], "wakeup") && atoi(argv[2]) > 0 && atoi(argv[3]) > 0)
        wakeup(atoi(argv[2]), atoi(argv[3]));
    else if (argc == 4 && !strcmp(argv[1], "alltoall") && atol(argv[2]) >= (long) sizeof(int))
        alltoall((size_t) atol(argv[2]), atoi(argv[3]));
    else
        ok = 0;
    if (!ok)
        fprintf(stderr, "usage: tnbc_calibrate compute MADDS | latency BYTES ITERS | "
                "msgrate BYTES COUNT ITERS | alltoall BYTES ITERS | wakeup ITERS WORK_US\n");
    fflush(stdout);
    MPI_Finalize();
    return ok ? 0 : 2;
}
