/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A periodic signal handler that reads received data while the main thread computes (a
 * progress monitor, a checkpoint timer): SIGALRM every millisecond; between an Alltoall's
 * return and the next call, the handler reads an int of every block of the receive buffer,
 * whose blocks may still be on the way (rank 1 enters every call late). The process-directed
 * signal may go to any thread that does not block it; a handler that waits for data on the
 * thread that lands it would wait for ever. Every value the handler and the main thread read
 * is checked. */

#include <mpi.h>
#include "mpitest.h"
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define CALLS 200

static int rank, size, errs;
static int *sbuf, *rbuf;
/* the handler may run on any thread: it counts itself in, and the main thread waits for it
 * to leave before the buffer changes */
static int readable, call_no, in_handler, handler_reads, handler_errs;

static int value(int from, int to, int i, int call)
{
    return from * 1000003 + to * 101 + i + call;
}

static void on_alarm(int sig)
{
    (void) sig;
    __atomic_add_fetch(&in_handler, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&readable, __ATOMIC_SEQ_CST)) {
        int call = __atomic_load_n(&call_no, __ATOMIC_SEQ_CST);
        for (int p = size - 1; p >= 0; p--) {
            int i = (call * 97 + p * 13) % COUNT;
            if (rbuf[p * COUNT + i] != value(p, rank, i, call))
                __atomic_add_fetch(&handler_errs, 1, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(&handler_reads, 1, __ATOMIC_SEQ_CST);
        }
    }
    __atomic_sub_fetch(&in_handler, 1, __ATOMIC_SEQ_CST);
}

static void spin_us(long us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sbuf = malloc((size_t) size * COUNT * sizeof(int));
    rbuf = malloc((size_t) size * COUNT * sizeof(int));

    struct sigaction sa = { 0 };
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every_ms = { {0, 1000}, {0, 1000} };
    setitimer(ITIMER_REAL, &every_ms, NULL);

    for (int call = 0; call < CALLS; call++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                sbuf[p * COUNT + i] = value(rank, p, i, call);
        if (rank == 1)
            usleep(2000);
        MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
        __atomic_store_n(&call_no, call, __ATOMIC_SEQ_CST);
        __atomic_store_n(&readable, 1, __ATOMIC_SEQ_CST);
        spin_us(3000);          /* the handler runs a few times here */
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (rbuf[p * COUNT + i] != value(p, rank, i, call) && errs++ < 10)
                    printf("rank %d call %d: [%d] from %d is %d\n", rank, call, i, p,
                           rbuf[p * COUNT + i]);
        __atomic_store_n(&readable, 0, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&in_handler, __ATOMIC_SEQ_CST))
            sched_yield();
    }
    struct itimerval off = { {0, 0}, {0, 0} };
    setitimer(ITIMER_REAL, &off, NULL);
    if (handler_errs) {
        errs += handler_errs;
        printf("rank %d: the handler read %d wrong values\n", rank, handler_errs);
    }
    if (handler_reads == 0) {
        errs++;
        printf("rank %d: the handler never read\n", rank);
    }
    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
