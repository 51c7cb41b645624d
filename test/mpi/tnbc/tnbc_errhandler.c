/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* User error handlers that read a receive buffer whose collective is still in flight (the last
 * rank enters late): a communicator's handler run by MPI_Comm_call_errhandler and by a failing
 * MPI_Send, a window's by MPI_Win_call_errhandler, and a communicator's reading a buffer in a
 * live frame of its own thread's stack. MPICH calls handlers from inside the MPI call; each must
 * see the collective's result, as with stock MPICH. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include "tnbc_test_pvar.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 4096              /* ints per pair: 4 pages */

static int rank, size, errs;
static MPI_T_pvar_session pvars;
static const int *pending;      /* the buffer the handlers read */
static long seen_sum;
static int handler_calls;

static long late_block_sum(void)
{
    long sum = 0;
    for (int i = 0; i < COUNT; i++)
        sum += pending[(size - 1) * COUNT + i];
    return sum;
}

static long expected_sum(void)
{
    long sum = 0;
    for (int i = 0; i < COUNT; i++)
        sum += tnbc_value(size - 1, rank, i);
    return sum;
}

static void comm_handler(MPI_Comm * comm, int *code, ...)
{
    handler_calls++;
    seen_sum = late_block_sum();
}

static void win_handler(MPI_Win * win, int *code, ...)
{
    handler_calls++;
    seen_sum = late_block_sum();
}

static void alltoall_late(int *sbuf, int *rbuf)
{
    tnbc_fill(sbuf, COUNT, rank, size);
    pending = rbuf;
    seen_sum = 0;
    handler_calls = 0;
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
    errs += tnbc_missed_early(pvars, early, rank, "Alltoall");
}

static void check(const char *what)
{
    if (handler_calls != 1 || seen_sum != expected_sum()) {
        errs++;
        printf("rank %d %s: handler ran %d times, late block sums to %ld, want %ld\n", rank,
               what, handler_calls, seen_sum, expected_sum());
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The receive buffer is in this frame, which is live while the handler reads it. */
static void stack_buffer(int *sbuf)
{
    char area[(size_t) size * COUNT * sizeof(int) + 4096];
    int *rbuf = (int *) (((uintptr_t) area + 4095) & ~(uintptr_t) 4095);
    alltoall_late(sbuf, rbuf);
    MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
    check("stack buffer, MPI_Comm_call_errhandler");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &(int) { 0 });
    MPI_T_pvar_session_create(&pvars);
    size_t len = (size_t) size * COUNT * sizeof(int);
    int *sbuf = malloc(len), *rbuf = tnbc_page_aligned(len);

    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(comm_handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);

    alltoall_late(sbuf, rbuf);
    MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
    check("MPI_Comm_call_errhandler");

    /* an error MPICH finds itself: a rank outside the communicator */
    alltoall_late(sbuf, rbuf);
    int one = 1;
    if (MPI_Send(&one, 1, MPI_INT, size + 7, 0, MPI_COMM_WORLD) == MPI_SUCCESS) {
        errs++;
        printf("rank %d: MPI_Send to rank %d succeeded\n", rank, size + 7);
    }
    check("failed MPI_Send");

    stack_buffer(sbuf);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);

    /* a window's handler; the window is elsewhere (window memory is never guarded) */
    int word;
    MPI_Win win;
    MPI_Win_create(&word, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_create_errhandler(win_handler, &eh);
    MPI_Win_set_errhandler(win, eh);
    alltoall_late(sbuf, rbuf);
    MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    check("MPI_Win_call_errhandler");
    MPI_Win_free(&win);
    MPI_Errhandler_free(&eh);

    free(sbuf);
    free(rbuf);
    MPI_T_pvar_session_free(&pvars);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return 0;
}
