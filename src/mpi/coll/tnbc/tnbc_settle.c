/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Settle: before an MPI routine lets MPICH read or write user memory, the pieces of
 * early-returned collectives that overlap it are completed here (the bindings call these
 * hooks, see maint/patches and mpir_tnbc.h), so MPICH never faults on a page guard while it
 * holds the global lock. The calling thread drives progress itself; the waits are counted (a
 * call that returned early is followed by one that must wait). */

#include "mpiimpl.h"
#include "tnbc_settle.h"
#include "tnbc_access.h"
#include "tnbc_engine.h"
#include "tnbc_late_error.h"
#include "tnbc_stats.h"
#include "tnbc_util.h"
#include "mpid_tnbc.h"
#include "mpir_pageguard.h"

#include <pthread.h>

static int settle_until(int (*cond) (const void *), const void *arg)
{
    if (cond(arg))
        return MPI_SUCCESS;
    uint64_t t0 = MPII_Tnbc_now_ns();
    int mpi_errno = MPII_Tnbc_progress_until(cond, arg);
    MPII_Tnbc_stats_settle(MPII_Tnbc_now_ns() - t0);
    return mpi_errno;
}

typedef struct {
    const void *addr;
    size_t len;
} MPII_range_t;

static int range_clear_cond(const void *arg)
{
    const MPII_range_t *r = arg;
    return MPIR_Pageguard_guarded_pages(r->addr, r->len, MPIR_PAGEGUARD_COUNT) == 0;
}

int MPIR_Tnbc_settle_range(const void *addr, size_t len)
{
    MPII_range_t r = {.addr = addr,.len = len };
    if (len == 0 || !addr)
        return MPI_SUCCESS;
    /* a trace run's or a sample's buffer: its data is there, only its touches are watched */
    MPII_Tnbc_access_release(addr, len);
    if (!MPIR_Tnbc_ops_in_flight)
        return MPI_SUCCESS;
    return settle_until(range_clear_cond, &r);
}

/* Called before the argument checks: comm_ptr is not validated yet. A handle of a freed
 * communicator points to a pooled object with no references, whose topology is gone: nothing
 * is settled, and the checks that follow report the error. */
int MPIR_Tnbc_settle_comm_array(const void *array, size_t elem_size, MPIR_Comm * comm_ptr,
                                int which)
{
    int n;

    if (!comm_ptr || !array || MPIR_Object_get_ref(comm_ptr) <= 0)
        return MPI_SUCCESS;
    if (which == MPIR_TNBC_ARRAY_GROUP) {
        n = (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM) ? comm_ptr->remote_size :
            comm_ptr->local_size;
    } else if (which == MPIR_TNBC_ARRAY_LOCAL_GROUP) {
        n = comm_ptr->local_size;
    } else {
        int indegree, outdegree, weighted;
        if (!MPIR_Topology_get(comm_ptr) ||
            MPIR_Topo_canon_nhb_count(comm_ptr, &indegree, &outdegree, &weighted))
            return MPI_SUCCESS;
        n = (which == MPIR_TNBC_ARRAY_IN_NEIGHBORS) ? indegree : outdegree;
    }
    if (n <= 0)
        return MPI_SUCCESS;
    return MPIR_Tnbc_settle_range(array, (size_t) n * elem_size);
}

int MPIR_Tnbc_settle_buf(const void *buf, MPI_Aint count, MPI_Datatype datatype)
{
    MPI_Aint true_lb, true_extent, extent;

    if (buf == MPI_IN_PLACE || count <= 0 || datatype == MPI_DATATYPE_NULL)
        return MPI_SUCCESS;
    /* an argument the routine ignores (e.g. recvtype at a non-root) need not be a valid
     * handle: do not look it up, settle everything instead */
    if (HANDLE_GET_MPI_KIND(datatype) != MPIR_DATATYPE ||
        HANDLE_GET_KIND(datatype) == HANDLE_KIND_INVALID)
        return MPIR_Tnbc_settle_all();
    MPIR_Type_get_true_extent_impl(datatype, &true_lb, &true_extent);
    MPIR_Datatype_get_extent_macro(datatype, extent);
    /* span of count elements: from the lowest to the highest byte the type map can touch */
    MPI_Aint lo = true_lb + (extent < 0 ? (count - 1) * extent : 0);
    MPI_Aint span = true_extent + (count - 1) * (extent < 0 ? -extent : extent);
    return MPIR_Tnbc_settle_range((const char *) buf + lo, (size_t) span);
}

/* ROMIO's routines (patch 0016), inside ROMIO's own critical section, which is not MPICH's:
 * the settle takes MPICH's global lock as a binding does (ROMIO's lock, then MPICH's, the order
 * of every MPI call ROMIO makes). */
int MPIR_Ext_tnbc_settle_buf(const void *buf, MPI_Aint count, MPI_Datatype datatype)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_TNBC_APP_FRAMES_DECL;

    /* outside the lock: a collective another thread starts on this buffer meanwhile is an
     * erroneous program; under the lock the hook looks again */
    if (!MPIR_TNBC_OWNS_BUFFERS())
        return MPI_SUCCESS;
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    MPIR_TNBC_NOTE_APP_FRAMES();
    MPIR_TNBC_SETTLE_BUF(buf, count, datatype);
  fn_exit:
    MPIR_TNBC_RESTORE_APP_FRAMES();
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int no_ops_cond(const void *arg)
{
    return MPIR_Tnbc_ops_in_flight == 0;
}

int MPIR_Tnbc_settle_all(void)
{
    MPII_Tnbc_access_harvest();
    return settle_until(no_ops_cond, NULL);
}

static int comm_clear_cond(const void *comm)
{
    return !MPII_Tnbc_engine_uses_comm(comm);
}

int MPIR_Tnbc_settle_comm(MPIR_Comm * comm_ptr)
{
    int mpi_errno = settle_until(comm_clear_cond, comm_ptr);
    /* finished operations hold the communicator too: let it go with the application's free */
    MPII_Tnbc_engine_reap();
    MPII_Tnbc_late_error_drop(comm_ptr);
    return mpi_errno;
}

/* MPI_Start(all) and MPI_Pready*: the request was made with its buffer earlier, perhaps before
 * the collective that guards it began; the device keeps the arguments. */
int MPIR_Tnbc_settle_requests(int count, MPIR_Request * const *requests)
{
    int mpi_errno = MPI_SUCCESS;

    for (int i = 0; i < count; i++) {
        const void *buf;
        MPI_Aint n;
        MPI_Datatype datatype;
        if (!requests[i])
            continue;
        if (requests[i]->kind == MPIR_REQUEST_KIND__PREQUEST_COLL) {
            /* a call T-NBC keeps settles its exact ranges when it starts; MPICH's schedule
             * keeps its buffers out of reach */
            if (!requests[i]->u.persist_coll.tnbc)
                mpi_errno = MPIR_Tnbc_settle_all();
        } else if (MPID_Tnbc_request_buffer(requests[i], &buf, &n, &datatype))
            mpi_errno = MPIR_Tnbc_settle_buf(buf, n, datatype);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* fork() with collectives in flight: the child would inherit their guarded pages with no
 * helper to bring the data (which comes to the parent only) and wait for ever on a touch. So
 * fork() waits for everything first, and holds MPICH's lock until it returns, so that no
 * other thread starts a collective in between. A thread inside MPICH cannot wait (MPICH does
 * not fork). */
static int atfork_registered;
static MPL_TLS int fork_holds_lock;     /* the forking thread's */

static void fork_prepare(void)
{
    if (!MPII_Tnbc_engine_started() || MPII_Tnbc_holds_global_lock())
        return;
    MPIR_TNBC_NOTE_APP_FRAMES();
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    fork_holds_lock = 1;
    int mpi_errno = MPIR_Tnbc_settle_all();
    (void) mpi_errno;   /* a failed operation has opened its pages and raised its error */
}

static void fork_done(void)
{
    if (fork_holds_lock) {
        fork_holds_lock = 0;
        MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    }
}

/* signals held back while the parent held the lock are the parent's, not the child's */
static void fork_child(void)
{
    MPIR_Pageguard_drop_deferred();
    fork_done();
}

void MPII_Tnbc_settle_at_fork(void)
{
    if (!atfork_registered)
        atfork_registered = (pthread_atfork(fork_prepare, fork_done, fork_child) == 0);
}
