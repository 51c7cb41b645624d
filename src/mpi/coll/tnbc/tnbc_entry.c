/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Entry points called by the prologue that maint/gen_coll.py emits in every blocking MPIR_<Coll>
 * (see maint/patches). Each one describes its call and offers it to the family; a collective
 * whose schedule builder has not landed is declined, and the stock path runs unchanged. */

#include "mpiimpl.h"
#include "tnbc_impl.h"

int MPII_Tnbc_offer(const MPIR_Tnbc_call_facts_t * facts, int *handled)
{
    MPIR_Tnbc_call_facts_t f = *facts;

    /* Internal collectives during MPI_Init or MPI_Finalize read their results at once. */
    f.ready = (MPL_atomic_load_int(&MPIR_Process.mpich_state) == MPICH_MPI_STATE__INITIALIZED);

    MPIR_Tnbc_decision_t decision = MPIR_Tnbc_decide(&MPII_Tnbc_policy, &f);
    MPII_Tnbc_stats_count(f.coll, decision);

    /* No builder accepts yet (MPII_Tnbc_policy.supported_colls is empty). */
    MPIR_Assert(decision != MPIR_TNBC_ACCEPT);
    *handled = 0;
    return MPI_SUCCESS;
}

int MPIR_Tnbc_Bcast(void *buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                    MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_BCAST };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Gather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void *recvbuf,
                     MPI_Aint recvcount, MPI_Datatype recvtype, int root, MPIR_Comm * comm_ptr,
                     MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_GATHER };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Gatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const MPI_Aint recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                      int root, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_GATHERV };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Scatter(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void *recvbuf,
                      MPI_Aint recvcount, MPI_Datatype recvtype, int root, MPIR_Comm * comm_ptr,
                      MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_SCATTER };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Scatterv(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint displs[],
                       MPI_Datatype sendtype, void *recvbuf, MPI_Aint recvcount,
                       MPI_Datatype recvtype, int root, MPIR_Comm * comm_ptr,
                       MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_SCATTERV };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Allgather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLGATHER };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Allgatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                         void *recvbuf, const MPI_Aint recvcounts[], const MPI_Aint displs[],
                         MPI_Datatype recvtype, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                         int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLGATHERV };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                       void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                       MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLTOALL };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Alltoallv(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const MPI_Aint recvcounts[],
                        const MPI_Aint rdispls[], MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                        MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLTOALLV };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Alltoallw(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint sdispls[],
                        const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Aint recvcounts[],
                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLTOALLW };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Reduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                     int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_REDUCE };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Allreduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                        MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                        int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLREDUCE };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Reduce_scatter(const void *sendbuf, void *recvbuf, const MPI_Aint recvcounts[],
                             MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                             MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_REDUCE_SCATTER };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Reduce_scatter_block(const void *sendbuf, void *recvbuf, MPI_Aint recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                                   MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_REDUCE_SCATTER_BLOCK };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Scan(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                   MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_SCAN };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Exscan(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                     MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_EXSCAN };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_allgather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                                 MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_NEIGHBOR_ALLGATHER };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_allgatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, const MPI_Aint recvcounts[],
                                  const MPI_Aint displs[], MPI_Datatype recvtype,
                                  MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_NEIGHBOR_ALLGATHERV };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                                MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_alltoallv(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                 const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                                 MPI_Datatype recvtype, MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLV };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_alltoallw(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                 void *recvbuf, const MPI_Aint recvcounts[],
                                 const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                 MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLW };
    return MPII_Tnbc_offer(&facts, tnbc_handled);
}
