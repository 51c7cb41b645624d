/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Entry points called by the prologue that maint/gen_coll.py emits in every blocking MPIR_<Coll>
 * (see maint/patches). Each one first settles the buffers it is given (the stock path must not
 * fault on the guards of an earlier collective), then describes its call and offers it to the
 * family. The collectives with a schedule builder live in their own files (tnbc_alltoall.c,
 * tnbc_gather.c, tnbc_bcast.c, tnbc_reduce.c, tnbc_neighbor.c); the rest are declined here
 * and the stock path runs unchanged. */

#include "mpiimpl.h"
#include "tnbc_impl.h"

MPIR_Tnbc_decision_t MPII_Tnbc_decide(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr)
{
    /* The prologue runs for MPICH's own calls of MPIR_<Coll> as well; only the binding of
     * the application's call marks it. */
    facts->internal = !MPIR_Tnbc_user_coll;
    MPIR_Tnbc_user_coll = 0;
    /* Internal collectives during MPI_Init or MPI_Finalize read their results at once. */
    facts->ready = (MPL_atomic_load_int(&MPIR_Process.mpich_state) ==
                    MPICH_MPI_STATE__INITIALIZED);
    facts->is_intercomm = (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM);
#ifdef MPL_HAVE_GPU
    /* any buffer may be device memory, and we would not know which process has one */
    facts->device_buffer = MPIR_CVAR_ENABLE_GPU;
#else
    facts->device_buffer = 0;   /* built without GPU support: host memory only */
#endif

    MPIR_Tnbc_decision_t decision = MPIR_Tnbc_decide(&MPII_Tnbc_policy, facts);
    MPII_Tnbc_stats_count(facts->coll, decision);
    return decision;
}

int MPII_Tnbc_offer(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr, int *handled)
{
    /* No builder for these collectives yet (not in MPII_Tnbc_policy.supported_colls). */
    MPIR_Tnbc_decision_t decision ATTRIBUTE((unused)) = MPII_Tnbc_decide(facts, comm_ptr);
    MPIR_Assert(decision != MPIR_TNBC_ACCEPT);
    *handled = 0;
    return MPI_SUCCESS;
}

int MPIR_Tnbc_Alltoallw(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint sdispls[],
                        const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Aint recvcounts[],
                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLTOALLW };
    MPII_TNBC_SETTLE_ALL();
    return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
  fn_fail:
    return mpi_errno;
}

int MPIR_Tnbc_Neighbor_alltoallw(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                 void *recvbuf, const MPI_Aint recvcounts[],
                                 const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                 MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLW };
    MPII_TNBC_SETTLE_ALL();
    return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
  fn_fail:
    return mpi_errno;
}
