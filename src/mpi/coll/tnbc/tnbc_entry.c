/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Entry points called by the prologue that maint/gen_coll.py emits in every blocking MPIR_<Coll>
 * (see maint/patches). Each one first settles the buffers it is given (the stock path must not
 * fault on the guards of an earlier collective), then describes its call and offers it to the
 * family. The collectives live in their own files (tnbc_alltoall.c, tnbc_gather.c,
 * tnbc_bcast.c, tnbc_reduce.c, tnbc_neighbor.c); here are the decision every one of them takes
 * and the way a call is declined (the stock path then runs unchanged). */

#include "mpiimpl.h"
#include "tnbc_entry.h"
#include "tnbc_access.h"
#include "tnbc_engine.h"
#include "tnbc_node.h"
#include "tnbc_stats.h"

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

MPIR_Tnbc_decision_t MPII_Tnbc_decide(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr)
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
    MPII_Tnbc_stats_count(facts->coll, decision);
    return decision;
}

int MPII_Tnbc_offer(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr, int *handled)
{
    /* A call with no T-NBC schedule (e.g. on an intercommunicator): declined, and counted. */
    MPIR_Tnbc_decision_t decision ATTRIBUTE((unused)) = MPII_Tnbc_decide(facts, comm_ptr);
    MPIR_Assert(decision != MPIR_TNBC_ACCEPT);
    *handled = 0;
    return MPI_SUCCESS;
}
