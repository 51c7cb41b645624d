/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The pipeline every entry point runs its call through. The entry points (MPIR_Tnbc_<Coll>,
 * called by the prologue maint/gen_coll.py emits in every blocking MPIR_<Coll>, see
 * maint/patches) live with their collectives (tnbc_alltoall.c, tnbc_gather.c, tnbc_bcast.c,
 * tnbc_reduce.c, tnbc_neighbor.c) and supply a form (tnbc_entry.h). Settling comes first:
 * the stock path must not fault on the guards of an earlier collective. A declined call
 * leaves the stock path to run unchanged. */

#include "mpiimpl.h"
#include "tnbc_entry.h"
#include "tnbc_access.h"
#include "tnbc_node.h"
#include "tnbc_stats.h"
#include "tnbc_util.h"
#include "tnbc_withdraw.h"
#include "mpir_pageguard.h"

/* Whether every process of an intracommunicator is on this node: the same answer on every
 * process, from the node communicator MPICH made when the communicator was committed (a node
 * is a clique where MPIR_CVAR_NUM_CLIQUES says so). */
static int comm_is_node_local(const MPIR_Comm * comm)
{
    if (comm->local_size == 1 || comm->hierarchy_kind == MPIR_COMM_HIERARCHY_KIND__NODE)
        return 1;
    return comm->hierarchy_kind == MPIR_COMM_HIERARCHY_KIND__PARENT && comm->node_comm &&
        comm->node_comm->local_size == comm->local_size;
}

/* Decide on one call from the facts every process shares, and count the decision. */
static MPIR_Tnbc_decision_t decide(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr,
                                   int schedulable)
{
    /* The prologue runs for MPICH's own calls of MPIR_<Coll> as well; only the binding of
     * the application's call marks it. */
    facts->internal = !MPIR_Tnbc_user_coll;
    MPIR_Tnbc_user_coll = 0;
    /* a trace run's buffers are released before a new collective may guard them again, and
     * what the helper finished is freed, so that its operations' lessons reach the sites;
     * freeing a communicator there may run a delete callback that makes a collective of its
     * own, so this call's caller is kept across */
    const void *caller = MPIR_Tnbc_user_caller;
    MPII_Tnbc_engine_reap();
    MPII_Tnbc_access_harvest();
    MPIR_Tnbc_user_caller = caller;
    /* Internal collectives during MPI_Init or MPI_Finalize read their results at once. */
    facts->ready = (MPL_atomic_load_int(&MPIR_Process.mpich_state) ==
                    MPICH_MPI_STATE__INITIALIZED);
    facts->is_intercomm = (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM);
    facts->spans_worlds = !facts->is_intercomm && !facts->internal && facts->ready &&
        !MPII_Tnbc_policy.job_off && MPII_Tnbc_comm_spans_worlds(comm_ptr);
    facts->node_local = !facts->is_intercomm && comm_is_node_local(comm_ptr);
#ifdef MPL_HAVE_GPU
    /* any buffer may be device memory, and we would not know which process has one */
    facts->device_buffer = MPIR_CVAR_ENABLE_GPU;
#else
    facts->device_buffer = 0;   /* built without GPU support: host memory only */
#endif

    MPIR_Tnbc_decision_t decision = MPIR_Tnbc_policy_decide(&MPII_Tnbc_policy, facts);
    if (!schedulable && decision == MPIR_TNBC_ACCEPT)
        decision = MPIR_TNBC_DECLINE_UNSUPPORTED;       /* e.g. a neighbourhood collective
                                                         * without a topology: stock says so */
    MPII_Tnbc_stats_count(facts->coll, decision);
    return decision;
}

/* A call T-NBC has no schedule for may name any buffer T-NBC holds. */
static int settle(const MPII_Tnbc_form_t * form, const void *call, MPIR_Comm * comm_ptr,
                  int schedulable)
{
    if (!MPIR_TNBC_OWNS_BUFFERS())
        return MPI_SUCCESS;
    if (!schedulable || !form->settle)
        return MPIR_Tnbc_settle_all();
    return form->settle(call, comm_ptr);
}

/* Launch a built call: a blocking one returns early or waits; a nonblocking one returns its
 * request. A nonblocking call that unpacks does so after its caller has returned: what the
 * unpack reads is held (the form's copy) until then. *held: the launch owns what describe
 * and build allocated. */
static int launch_call(const MPII_Tnbc_form_t * form, MPII_Tnbc_start_t * args,
                       MPII_Tnbc_launch_t * launch, MPIR_Request ** request, int *held)
{
    int mpi_errno = MPI_SUCCESS;

    if (!request)
        return MPII_Tnbc_run(args, launch);
    if (args->buf.recv_packed) {
        MPIR_Assert(form->hold && form->release);
        void *ctx = form->hold(launch->unpack_ctx);
        MPIR_ERR_CHKANDJUMP(!ctx, mpi_errno, MPI_ERR_OTHER, "**nomem");
        launch->unpack_ctx = ctx;
        launch->release = form->release;
        *held = 1;
    }
    mpi_errno = MPII_Tnbc_start_nonblocking(args, launch, request);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPII_Tnbc_enter(const MPII_Tnbc_form_t * form, void *call, MPIR_Tnbc_coll_t coll,
                    MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, MPIR_Request ** request,
                    int *handled)
{
    int mpi_errno = MPI_SUCCESS, described = 0, held = 0;
    MPII_Tnbc_start_t args = {.coll = coll,.comm = comm_ptr,
        .errflag = errflag ? *errflag : MPIR_ERR_NONE
    };
    MPIR_Tnbc_call_facts_t facts = {.coll = coll };
    MPII_Tnbc_launch_t launch = { 0 };

    *handled = 0;
    /* this thread is not in the fault handler: a wait of its own left by a longjmp is over */
    MPIR_Pageguard_wait_left();
    MPII_Tnbc_policy_check_late();
    int schedulable = (comm_ptr->comm_kind != MPIR_COMM_KIND__INTERCOMM &&
                       (!form->needs_topology || MPIR_Topology_get(comm_ptr)));
    mpi_errno = settle(form, call, comm_ptr, schedulable);
    MPIR_ERR_CHECK(mpi_errno);
    if (schedulable) {
        described = 1;
        mpi_errno = form->describe(call, &args, &facts);
        /* without the facts this process cannot know whether the others took the call; an
         * error of the caller's arguments has a class of its own, and MPICH's path reports it */
        if (mpi_errno && MPIR_ERR_GET_CLASS(mpi_errno) == MPI_ERR_OTHER)
            MPII_Tnbc_give_up(comm_ptr, coll, mpi_errno);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (decide(&facts, comm_ptr, schedulable) != MPIR_TNBC_ACCEPT)
        goto fn_exit;
    *handled = 1;
    MPIR_ERR_CHKANDJUMP(MPII_Tnbc_fault_injected(MPII_TNBC_FAULT_BEFORE_SCHEDULE), mpi_errno,
                        MPI_ERR_OTHER, "**nomem");
    mpi_errno = form->build(call, &args, &launch);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = launch_call(form, &args, &launch, request, &held);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    if (described && !held && form->finish)
        form->finish(call);
    MPL_free(args.buf.send_packed);
    MPIR_Tnbc_sched_free(&args.sched);
    return mpi_errno;
  fn_fail:
    if (*handled && !args.started) {
        /* the peers took the call as well and expect our messages */
        int err = MPII_Tnbc_withdraw(comm_ptr, coll, &args.sched, mpi_errno);
        MPIR_ERR_ADD(mpi_errno, err);
    }
    /* as MPICH's algorithms record a failed message: whoever runs next with this errflag (the
     * stock path after a decline, or the caller's next stage) tells the peers */
    if (errflag)
        *errflag = MPII_Tnbc_errflag_of(mpi_errno);
    if (!*handled)
        MPIR_Tnbc_user_coll = 0;        /* a failed call is no mark for the next one */
    goto fn_exit;
}
