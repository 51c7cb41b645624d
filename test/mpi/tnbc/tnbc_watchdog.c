/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A watchdog around work that reads received data: sigsetjmp, a one-shot timer aimed at this
 * thread, and a handler that leaves with siglongjmp when the work takes too long. Here the
 * work reads the block of a rank that enters every Alltoall late, so the read waits in
 * T-NBC's fault handler when the timer fires and the jump leaves that wait for good. The
 * program then reads the data again without a watchdog, and goes on with more collectives
 * and MPI_Finalize: nothing may hang (the left wait must not pin the buffer's region), and
 * every value is checked. */

#define _GNU_SOURCE
#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_timer.h"
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COUNT 16384             /* ints per pair: 16 pages */
#define CALLS 10

static int rank, size, errs;
static sigjmp_buf timed_out;

static int value(int from, int to, int i, int call)
{
    return from * 1000003 + to * 101 + i + call;
}

static void watchdog(int sig)
{
    (void) sig;
    siglongjmp(timed_out, 1);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *sbuf = malloc((size_t) size * COUNT * sizeof(int));
    int *rbuf = malloc((size_t) size * COUNT * sizeof(int));

    struct sigaction sa = { 0 };
    sa.sa_handler = watchdog;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    timer_t timer;
    if (tnbc_timer_to_this_thread(SIGALRM, &timer) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);

    int late = 1 % size, jumps = 0;
    for (int call = 0; call < CALLS; call++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                sbuf[p * COUNT + i] = value(rank, p, i, call);
        if (rank == late)
            usleep(30000);
        MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
        volatile long sum = 0;
        if (!sigsetjmp(timed_out, 1)) {
            struct itimerspec once = { {0, 0}, {0, 2 * 1000 * 1000} };
            timer_settime(timer, 0, &once, NULL);
            for (int i = 0; i < COUNT; i++)
                sum += rbuf[late * COUNT + i];  /* the late block: may wait here */
            struct itimerspec off = { {0, 0}, {0, 0} };
            timer_settime(timer, 0, &off, NULL);
        } else {
            jumps++;
        }
        for (int p = size - 1; p >= 0; p--)
            for (int i = 0; i < COUNT; i++)
                if (rbuf[p * COUNT + i] != value(p, rank, i, call) && errs++ < 10)
                    printf("rank %d call %d: [%d] from %d is %d\n", rank, call, i, p,
                           rbuf[p * COUNT + i]);
    }
    timer_delete(timer);
    int any = 0;
    MPI_Allreduce(&jumps, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    /* with -must-fire (where a late block is certain to be waited for) the test is void
     * unless some wait was left by the jump */
    if (rank == 0 && argc > 1 && strcmp(argv[1], "-must-fire") == 0 && any == 0) {
        errs++;
        printf("the watchdog never fired during a wait\n");
    }
    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
