/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A signal handler that reads received data while the main thread itself waits for other
 * data (found by the fuzzer, seed 990): two Alltoalls return early with the last rank's blocks
 * still coming; the main thread reads the second one's, which waits in the fault handler,
 * while a timer aimed at it every 0.5 ms runs a handler that reads the first one's -- a fault
 * inside the wait. Both must wait and read the right data; every value is checked. */

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
#define ROUNDS 10

static int *volatile other;     /* the block the handler reads */
static volatile int handler_reads, handler_wrong, expected;

static void on_alarm(int sig)
{
    (void) sig;
    int *p = other;
    if (p) {
        if (p[COUNT - 1] != expected)
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
    int *first = tnbc_page_aligned(size * COUNT * sizeof(int));
    int *second = tnbc_page_aligned(size * COUNT * sizeof(int));
    tnbc_fill(sbuf, COUNT, rank, size);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    timer_t timer;
    if (tnbc_timer_to_this_thread(SIGALRM, &timer) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    struct itimerspec every = { {0, 500000}, {0, 500000} }, off = { {0, 0}, {0, 0} };

    for (int round = 0; round < ROUNDS; round++) {
        tnbc_alltoall_late(sbuf, first, COUNT, rank, size);
        tnbc_alltoall_late(sbuf, second, COUNT, rank, size);
        expected = tnbc_value(late, rank, COUNT - 1);
        other = first + late * COUNT;
        timer_settime(timer, 0, &every, NULL);
        volatile int v = second[late * COUNT];  /* waits, and the handler with it */
        timer_settime(timer, 0, &off, NULL);
        other = NULL;
        if (v != tnbc_value(late, rank, 0))
            errs++;
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (first[p * COUNT + i] != tnbc_value(p, rank, i) ||
                    second[p * COUNT + i] != tnbc_value(p, rank, i)) {
                    if (errs++ < 5)
                        printf("rank %d round %d: block %d int %d wrong\n", rank, round, p, i);
                    break;
                }
    }
    if (handler_wrong) {
        errs++;
        printf("rank %d: the handler read %d wrong values\n", rank, handler_wrong);
    }
    timer_delete(timer);
    free(sbuf);
    free(first);
    free(second);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
