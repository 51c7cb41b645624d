/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Output arguments inside a receive block still in flight (the last rank enters the Alltoall
 * late): a new handle, a request, a status, a flag and an attribute value that MPICH stores
 * while it holds its lock, request handles it reads from there (MPI_Wait, MPI_Waitall), and
 * the size-1 shortcuts of the collective bindings (MPI_COMM_SELF) that copy from or into the
 * block. One argument per round is in the block, so each is the first to touch it; the binding
 * must wait for the late data (no fault: it settles before MPICH runs), then the store wins
 * over it and the rest of the block is the late rank's data. Run on a heap buffer and on a
 * buffer in a live frame of the caller's stack. */

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
#define OUT 8                   /* where a case stores its output in the block (8-byte aligned) */
#define NULL_REQUESTS 2         /* the late rank sends MPI_REQUEST_NULL in ints [0, 2) */

static int rank, size, late, errs;
static MPI_T_pvar_session pvars;

/* What rank from sends to rank to at i */
static int want(int from, int to, int i)
{
    return (from == late && i < NULL_REQUESTS) ? (int) MPI_REQUEST_NULL : tnbc_value(from, to, i);
}

/* The late rank's block, in flight on the other ranks where T-NBC returned early. */
static int *alltoall_late(int *sbuf, int *rbuf, const char *what)
{
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++)
            sbuf[p * COUNT + i] = want(rank, p, i);
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
            if (rbuf[p * COUNT + i] != want(p, rank, i) && bad++ < 3)
                printf("rank %d %s: from %d [%d] = %d, want %d\n", rank, what, p, i,
                       rbuf[p * COUNT + i], want(p, rank, i));
        }
    errs += bad != 0;
}

static void fail(const char *where, const char *what)
{
    errs++;
    printf("rank %d %s: %s\n", rank, where, what);
}

/* Each case touches block (the late rank's, in flight) through one argument of one MPI call,
 * checks the call's result and returns how many ints from OUT it stored (the late rank runs
 * it on data that has arrived). */

static int new_type(int *block, const char *where)
{
    MPI_Datatype *t = (MPI_Datatype *) & block[OUT];
    int tsize;
    MPI_Type_contiguous(4, MPI_INT, t);
    MPI_Type_size(*t, &tsize);
    if (tsize != 4 * (int) sizeof(int))
        fail(where, "the new type has the wrong size");
    MPI_Type_free(t);
    return 1;
}

/* the MPI_PROC_NULL shortcut of the binding stores it */
static int new_request(int *block, const char *where)
{
    MPI_Request *req = (MPI_Request *) & block[OUT];
    int x;
    MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, req);
    MPI_Wait(req, MPI_STATUS_IGNORE);
    if (*req != MPI_REQUEST_NULL)
        fail(where, "the request was not freed");
    return 1;
}

static int wait_status(int *block, const char *where)
{
    MPI_Request req;
    MPI_Status *st = (MPI_Status *) & block[OUT];
    int x, count = -1;
    MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, st);
    MPI_Get_count(st, MPI_INT, &count);
    if (count != 0)
        fail(where, "wrong status");
    return (int) ((sizeof(MPI_Status) + sizeof(int) - 1) / sizeof(int));
}

/* request handles the late rank sent (MPI_Wait reads and writes them) */
static int late_request(int *block, const char *where)
{
    MPI_Status st;
    MPI_Wait((MPI_Request *) block, &st);
    return 0;
}

static int late_requests(int *block, const char *where)
{
    MPI_Waitall(NULL_REQUESTS, (MPI_Request *) block, MPI_STATUSES_IGNORE);
    return 0;
}

static int attribute_value(int *block, const char *where)
{
    int **value = (int **) &block[OUT], flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, value, &flag);
    if (!flag || **value < 32767)
        fail(where, "no MPI_TAG_UB");
    return (int) sizeof(void *) / (int) sizeof(int);
}

static int attribute_flag(int *block, const char *where)
{
    int *value, *flag = &block[OUT];
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, flag);
    if (!*flag)
        fail(where, "no MPI_TAG_UB");
    return 1;
}

/* the size-1 shortcuts of the bindings: from the block, then into it */
static int allreduce_from(int *block, const char *where)
{
    int v[SHORT];
    MPI_Allreduce(&block[OUT], v, SHORT, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    for (int i = 0; i < SHORT; i++)
        if (v[i] != want(late, rank, OUT + i)) {
            fail(where, "read a stale block");
            break;
        }
    return 0;
}

static void minus_i(int *v)
{
    for (int i = 0; i < SHORT; i++)
        v[i] = -i;
}

static int check_minus_i(const int *v, const char *where)
{
    for (int i = 0; i < SHORT; i++)
        if (v[i] != -i) {
            fail(where, "wrong result");
            break;
        }
    return SHORT;
}

static int allgatherv_into(int *block, const char *where)
{
    int v[SHORT], count = SHORT, displ = 0;
    minus_i(v);
    MPI_Allgatherv(v, SHORT, MPI_INT, &block[OUT], &count, &displ, MPI_INT, MPI_COMM_SELF);
    return check_minus_i(&block[OUT], where);
}

static int reduce_scatter_into(int *block, const char *where)
{
    int v[SHORT], count = SHORT;
    minus_i(v);
    MPI_Reduce_scatter(v, &block[OUT], &count, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    return check_minus_i(&block[OUT], where);
}

static int reduce_into(int *block, const char *where)
{
    int v[SHORT];
    minus_i(v);
    MPI_Reduce(v, &block[OUT], SHORT, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF);
    return check_minus_i(&block[OUT], where);
}

static int iallreduce_into(int *block, const char *where)
{
    int v[SHORT];
    MPI_Request req;
    minus_i(v);
    MPI_Iallreduce(v, &block[OUT], SHORT, MPI_INT, MPI_SUM, MPI_COMM_SELF, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    return check_minus_i(&block[OUT], where);
}

static int iallreduce_request(int *block, const char *where)
{
    int v[SHORT], r[SHORT];
    MPI_Request *req = (MPI_Request *) & block[OUT];
    minus_i(v);
    MPI_Iallreduce(v, r, SHORT, MPI_INT, MPI_SUM, MPI_COMM_SELF, req);
    MPI_Wait(req, MPI_STATUS_IGNORE);
    check_minus_i(r, where);
    return 1;
}

static const struct {
    int (*run) (int *, const char *);
    const char *name;
} cases[] = {
    {new_type, "MPI_Type_contiguous new type"},
    {new_request, "MPI_Irecv request"},
    {wait_status, "MPI_Wait status"},
    {late_request, "MPI_Wait request"},
    {late_requests, "MPI_Waitall requests, MPI_STATUSES_IGNORE"},
    {attribute_value, "MPI_Comm_get_attr value"},
    {attribute_flag, "MPI_Comm_get_attr flag"},
    {allreduce_from, "MPI_Allreduce on MPI_COMM_SELF from"},
    {allgatherv_into, "MPI_Allgatherv on MPI_COMM_SELF into"},
    {reduce_scatter_into, "MPI_Reduce_scatter on MPI_COMM_SELF into"},
    {reduce_into, "MPI_Reduce on MPI_COMM_SELF into"},
    {iallreduce_into, "MPI_Iallreduce on MPI_COMM_SELF into"},
    {iallreduce_request, "MPI_Iallreduce on MPI_COMM_SELF request"}
};

#define NCASES ((int) (sizeof(cases) / sizeof(cases[0])))

static void run_case(int k, int *sbuf, int *rbuf, const char *memory)
{
    char where[128];
    snprintf(where, sizeof(where), "%s, %s", cases[k].name, memory);
    int *block = alltoall_late(sbuf, rbuf, where);
    unsigned long long faults = tnbc_read_pvar(pvars, "tnbc_faults");
    int n = cases[k].run(block, where);
    if (tnbc_read_pvar(pvars, "tnbc_faults") != faults)
        fail(where, "faulted on the block: the binding did not settle it first");
    check_data(where, rbuf, OUT, OUT + n);
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
    int *sbuf = malloc(len), *rbuf = tnbc_page_aligned(len);

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
