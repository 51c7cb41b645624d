/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Buffers of a collective that are also RMA window memory, with the last rank late. Once rank
 * 0's Alltoall has returned, rank 1 writes into its window (told so by a message): into the
 * block rank 0 receives from the late rank, or into the block rank 0 sends to it. A peer
 * reaches window memory without regard to page protections (RDMA) or through MPICH under its
 * lock, so the put must stay and the late rank must get rank 0's data as it was in the call:
 * T-NBC never guards window memory (receives wait in the call, sends are copied). Windows from
 * MPI_Win_create, MPI_Win_allocate, MPI_Win_allocate_shared and MPI_Win_attach; a window of no
 * memory, and memory of a freed window, are guarded as usual. Needs 3 processes or more. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include "tnbc_test_pvar.h"
#include <stdio.h>
#include <stdlib.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define PUT_AT 5                /* element of the late block that rank 1 overwrites */
#define PUT_VALUE (-42)

static int rank, size, late, errs;
static MPI_T_pvar_session pvars;

static void fill(int *sbuf)
{
    tnbc_fill(sbuf, COUNT, rank, size);
}

static void alltoall_late(const int *sbuf, int *rbuf)
{
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
}

/* Rank 1 puts into rank 0's window at disp once rank 0 has returned; rank 0 comes back when
 * the put is complete at the target. */
static void put_after_return(MPI_Win win, MPI_Aint disp, int count)
{
    int token = 0;
    if (rank == 0) {
        MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        int *v = malloc(count * sizeof(int));
        for (int i = 0; i < count; i++)
            v[i] = PUT_VALUE;
        MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Put(v, count, MPI_INT, 0, disp, count, MPI_INT, win);
        MPI_Win_unlock(0, win);
        MPI_Send(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        free(v);
    }
}

static void check_recv(const char *what, const int *rbuf, int with_put)
{
    int bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++) {
            int want = (with_put && rank == 0 && p == late && i == PUT_AT) ? PUT_VALUE :
                tnbc_value(p, rank, i);
            if (rbuf[p * COUNT + i] != want && bad++ < 3)
                printf("rank %d %s: from %d [%d] = %d, want %d\n", rank, what, p, i,
                       rbuf[p * COUNT + i], want);
        }
    errs += bad != 0;
}

/* The receive buffer is window memory (win over rbuf): the call must not return early. */
static void recv_in_window(const char *what, int *sbuf, int *rbuf, MPI_Win win)
{
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    fill(sbuf);
    alltoall_late(sbuf, rbuf);
    if (tnbc_read_pvar(pvars, "tnbc_returned_early") != early) {
        errs++;
        printf("rank %d %s: returned early with its receive buffer in a window\n", rank, what);
    }
    put_after_return(win, (MPI_Aint) late * COUNT + PUT_AT, 1);
    if (rank == 0)
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    check_recv(what, rbuf, 1);
    if (rank == 0)
        MPI_Win_unlock(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &(int) { 0 });
    MPI_T_pvar_session_create(&pvars);
    late = size - 1;
    size_t len = (size_t) size * COUNT * sizeof(int);
    int *sbuf = tnbc_page_aligned(len), *rbuf = tnbc_page_aligned(len);
    MPI_Win win;

    if (size < 3) {
        printf("tnbc_rma_window needs 3 processes or more\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Win_create(rbuf, len, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    recv_in_window("Win_create", sbuf, rbuf, win);
    MPI_Win_free(&win);

    int *wbuf;
    MPI_Win_allocate(len, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wbuf, &win);
    recv_in_window("Win_allocate", sbuf, wbuf, win);
    MPI_Win_free(&win);

    /* a shared window, where all processes share a node (as in the tests) */
    MPI_Comm node;
    int node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    if (node_size == size) {
        MPI_Win_allocate_shared(len, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wbuf, &win);
        recv_in_window("Win_allocate_shared", sbuf, wbuf, win);
        MPI_Win_free(&win);
    }
    MPI_Comm_free(&node);

    /* a window of no memory over the receive buffer: nothing to keep unguarded */
    {
        unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
        MPI_Win_create(rbuf, 0, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        fill(sbuf);
        alltoall_late(sbuf, rbuf);
        errs += tnbc_missed_early(pvars, early, rank, "zero-size window");
        check_recv("zero-size window", rbuf, 0);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_free(&win);
    }

    /* a dynamic window: displacements are addresses */
    MPI_Aint base, *bases = malloc(size * sizeof(MPI_Aint));
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_attach(win, rbuf, len);
    MPI_Get_address(rbuf, &base);
    MPI_Allgather(&base, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
    {
        unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
        fill(sbuf);
        alltoall_late(sbuf, rbuf);
        if (tnbc_read_pvar(pvars, "tnbc_returned_early") != early) {
            errs++;
            printf("rank %d Win_attach: returned early with its receive buffer in a window\n",
                   rank);
        }
        put_after_return(win, bases[0] + ((MPI_Aint) late * COUNT + PUT_AT) * sizeof(int), 1);
        check_recv("Win_attach", rbuf, 1);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_detach(win, rbuf);
    MPI_Win_free(&win);
    free(bases);

    /* detached memory is guarded again: the late rank's block may come after the return */
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    fill(sbuf);
    alltoall_late(sbuf, rbuf);
    errs += tnbc_missed_early(pvars, early, rank, "after Win_free");
    check_recv("after Win_free", rbuf, 0);

    /* the send buffer is window memory: rank 1 overwrites the block rank 0 sends to the late
     * rank; the late rank must get what rank 0 had in the call */
    MPI_Win_create(sbuf, len, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    fill(sbuf);
    alltoall_late(sbuf, rbuf);
    put_after_return(win, (MPI_Aint) late * COUNT, COUNT);
    check_recv("send buffer in a window", rbuf, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);

    free(sbuf);
    free(rbuf);
    MPI_T_pvar_session_free(&pvars);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return 0;
}
