/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Output arguments inside a receive block still in flight (the last rank enters the Alltoall
 * late): a new handle, a request, a status, a flag and an attribute value that MPICH stores
 * while it holds its lock, and the size-1 shortcuts of the collective bindings (MPI_COMM_SELF)
 * that copy from or into the block. Each store must wait for the late data and then win over
 * it; the rest of the block must be the late rank's data. Run on a heap buffer and on a buffer
 * in a live frame of the caller's stack. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include "tnbc_test_pvar.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define MAX_PROCS 8
#define SHORT 16                /* ints copied by the size-1 shortcuts */

static int rank, size, late, errs;
static MPI_T_pvar_session pvars;

/* The late rank's block, in flight on the other ranks where T-NBC returned early. */
static int *alltoall_late(int *sbuf, int *rbuf, const char *what)
{
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    tnbc_fill(sbuf, COUNT, rank, size);
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
    errs += tnbc_missed_early(pvars, early, rank, what);
    return &rbuf[late * COUNT];
}

/* Every element of rbuf but [skip_lo, skip_hi) of the late block is what was sent. */
static void check_data(const char *what, const int *rbuf, int skip_lo, int skip_hi)
{
    int bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++) {
            if (p == late && i >= skip_lo && i < skip_hi)
                continue;
            if (rbuf[p * COUNT + i] != tnbc_value(p, rank, i) && bad++ < 3)
                printf("rank %d %s: from %d [%d] = %d, want %d\n", rank, what, p, i,
                       rbuf[p * COUNT + i], tnbc_value(p, rank, i));
        }
    errs += bad != 0;
}

static void fail(const char *where, const char *what)
{
    errs++;
    printf("rank %d %s: %s\n", rank, where, what);
}

/* Each case stores into block (the late rank's, in flight) at ints [0, n) and checks what it
 * stored; it returns n. The late rank runs it on data that has arrived. */

static int new_type(int *block, const char *where)
{
    MPI_Datatype *t = (MPI_Datatype *) block;
    int tsize;
    MPI_Type_contiguous(4, MPI_INT, t);
    MPI_Type_commit(t);
    MPI_Type_size(*t, &tsize);
    if (tsize != 4 * (int) sizeof(int))
        fail(where, "MPI_Type_contiguous: the new type has the wrong size");
    MPI_Type_free(t);
    return 1;
}

/* the MPI_PROC_NULL shortcut of the binding stores a request */
static int request_and_status(int *block, const char *where)
{
    MPI_Request *req = (MPI_Request *) block;
    MPI_Status *status = (MPI_Status *) & block[4];
    int n = 4 + (int) ((sizeof(MPI_Status) + sizeof(int) - 1) / sizeof(int)), x;
    MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, req);
    MPI_Wait(req, status);
    int count = -1;
    MPI_Get_count(status, MPI_INT, &count);
    if (*req != MPI_REQUEST_NULL || count != 0)
        fail(where, "MPI_Irecv/MPI_Wait: wrong request or status");
    return n;
}

/* an array of requests, completed without statuses */
static int requests(int *block, const char *where)
{
    MPI_Request *reqs = (MPI_Request *) block;
    int x[2];
    for (int i = 0; i < 2; i++)
        MPI_Irecv(&x[i], 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &reqs[i]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    if (reqs[0] != MPI_REQUEST_NULL || reqs[1] != MPI_REQUEST_NULL)
        fail(where, "MPI_Waitall: requests not freed");
    return 2;
}

static int flag_and_attribute(int *block, const char *where)
{
    int **value = (int **) block, *flag = &block[4];
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, value, flag);
    if (!*flag || **value < 32767)
        fail(where, "MPI_Comm_get_attr: no MPI_TAG_UB");
    return 5;
}

/* size-1 shortcuts: from the block, then into it */
static int self_copies(int *block, const char *where)
{
    int v[SHORT], one = 1;
    MPI_Allreduce(block, v, SHORT, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    for (int i = 0; i < SHORT; i++)
        if (v[i] != tnbc_value(late, rank, i)) {
            fail(where, "MPI_Allreduce on MPI_COMM_SELF read a stale block");
            break;
        }
    for (int i = 0; i < SHORT; i++)
        v[i] = -i;
    MPI_Allgatherv(v, SHORT, MPI_INT, block, &(int) { SHORT }, &(int) { 0 }, MPI_INT,
                   MPI_COMM_SELF);
    MPI_Reduce_scatter(v, &block[SHORT], &(int) { SHORT }, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    MPI_Reduce(&one, &block[2 * SHORT], 1, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF);
    MPI_Request *req = (MPI_Request *) & block[2 * SHORT + 2];
    MPI_Iallreduce(&one, &block[2 * SHORT + 1], 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, req);
    MPI_Wait(req, MPI_STATUS_IGNORE);
    for (int i = 0; i < 2 * SHORT; i++)
        if (block[i] != -(i % SHORT)) {
            fail(where, "MPI_Allgatherv/MPI_Reduce_scatter on MPI_COMM_SELF: wrong result");
            break;
        }
    if (block[2 * SHORT] != 1 || block[2 * SHORT + 1] != 1)
        fail(where, "MPI_Reduce/MPI_Iallreduce on MPI_COMM_SELF: wrong result");
    return 2 * SHORT + 3;
}

static int (*const cases[])(int *, const char *) = {
    new_type, request_and_status, requests, flag_and_attribute, self_copies
};
static const char *const case_names[] = {
    "handle", "request and status", "requests", "flag and attribute", "size-1 shortcuts"
};

#define NCASES ((int) (sizeof(cases) / sizeof(cases[0])))

static void run_case(int k, int *sbuf, int *rbuf, const char *memory)
{
    char where[128];
    snprintf(where, sizeof(where), "%s, %s", case_names[k], memory);
    int *block = alltoall_late(sbuf, rbuf, where);
    int n = cases[k] (block, where);
    check_data(where, rbuf, 0, n);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The receive buffer is in this frame, live while the cases run. */
static void __attribute__ ((noinline)) on_stack(int *sbuf)
{
    int rbuf[MAX_PROCS * COUNT] __attribute__ ((aligned(4096)));
    for (int k = 0; k < NCASES; k++)
        run_case(k, sbuf, rbuf, "stack");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &(int) { 0 });
    MPI_T_pvar_session_create(&pvars);
    late = size - 1;
    if (size > MAX_PROCS) {
        printf("tnbc_outputs runs on %d processes at most\n", MAX_PROCS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size_t len = (size_t) size * COUNT * sizeof(int);
    int *sbuf = malloc(len), *rbuf;
    /* page aligned: the late block (the last) is whole pages, none completed in the call */
    if (posix_memalign((void **) &rbuf, 4096, len) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);

    for (int k = 0; k < NCASES; k++)
        run_case(k, sbuf, rbuf, "heap");
    on_stack(sbuf);

    free(sbuf);
    free(rbuf);
    MPI_T_pvar_session_free(&pvars);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return 0;
}
