/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A signal handler that reads received data while its thread is inside an MPI call (issue 49,
 * item 1): after an Alltoall that returned early with the last rank's block still coming, the
 * other ranks wait in MPI_Recv for a message the last rank sends once it is done, while a timer
 * aimed at their main thread runs a handler every 0.5 ms that reads the pending block. The
 * thread holds MPICH's lock in MPI_Recv, and the data needs that lock: the handler must run
 * once the lock is let go (between polls), wait there, and read the right data. Each round
 * also runs the handler while the main thread sits in a Barrier, and in a second Alltoall
 * that T-NBC runs inside the call (a derived type), where the thread drives progress itself
 * and sleeps without the lock: the helper must bring the data the handler waits for (found
 * by the fuzzer, seed 1038). Every value is checked. */

#define _GNU_SOURCE
#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include "tnbc_test_timer.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define ROUNDS 8

static int *volatile watched;   /* the pending block the handler reads */
static volatile int handler_reads, handler_wrong, expected;

static void on_alarm(int sig, siginfo_t * info, void *uctx)
{
    (void) sig;
    (void) info;
    (void) uctx;
    int *p = watched;
    if (p) {
        if (p[COUNT / 2] != expected)
            handler_wrong++;
        handler_reads++;
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int late = size - 1;
    int *sbuf = malloc(size * COUNT * sizeof(int));
    int *rbuf = tnbc_page_aligned(size * COUNT * sizeof(int));
    int *rbuf2 = tnbc_page_aligned(size * COUNT * sizeof(int));
    tnbc_fill(sbuf, COUNT, rank, size);
    MPI_Datatype pair;          /* T-NBC takes the call, and completes it inside */
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_alarm;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    timer_t timer;
    if (tnbc_timer_to_this_thread(SIGALRM, &timer) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    struct itimerspec every = { {0, 500000}, {0, 500000} }, off = { {0, 0}, {0, 0} };

    for (int round = 0; round < ROUNDS; round++) {
        tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
        int token = round;
        if (rank == late) {
            usleep(50 * 1000);
            for (int p = 0; p < size - 1; p++)
                MPI_Send(&token, 1, MPI_INT, p, 7, MPI_COMM_WORLD);
        } else {
            expected = tnbc_value(late, rank, COUNT / 2);
            watched = rbuf + late * COUNT;
            timer_settime(timer, 0, &every, NULL);
            MPI_Recv(&token, 1, MPI_INT, late, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Barrier(MPI_COMM_WORLD);
            timer_settime(timer, 0, &off, NULL);
            watched = NULL;
            if (token != round)
                errs++;
        }
        if (rank == late)
            MPI_Barrier(MPI_COMM_WORLD);

        tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
        if (rank != late) {
            expected = tnbc_value(late, rank, COUNT / 2);
            watched = rbuf + late * COUNT;
            timer_settime(timer, 0, &every, NULL);
        } else {
            usleep(50 * 1000);
        }
        MPI_Alltoall(sbuf, COUNT / 2, pair, rbuf2, COUNT / 2, pair, MPI_COMM_WORLD);
        timer_settime(timer, 0, &off, NULL);
        watched = NULL;
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (rbuf2[p * COUNT + i] != tnbc_value(p, rank, i)) {
                    if (errs++ < 5)
                        printf("rank %d round %d: second block %d int %d wrong\n", rank, round,
                               p, i);
                    break;
                }
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (rbuf[p * COUNT + i] != tnbc_value(p, rank, i)) {
                    if (errs++ < 5)
                        printf("rank %d round %d: block %d int %d wrong\n", rank, round, p, i);
                    break;
                }
    }
    if (handler_wrong) {
        errs++;
        printf("rank %d: the handler read %d wrong values\n", rank, handler_wrong);
    }
    if (rank != late && handler_reads == 0) {
        errs++;
        printf("rank %d: the handler never ran\n", rank);
    }
    timer_delete(timer);
    MPI_Type_free(&pair);
    free(sbuf);
    free(rbuf);
    free(rbuf2);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
