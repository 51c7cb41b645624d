/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The neighbour collectives of topology communicators (Cartesian, graph, distributed graph):
 * Neighbor_alltoall(v/w) and Neighbor_allgather(v) on the pairwise engine with the topology's
 * neighbour lists, in the order MPI defines (tnbc_sched.c: MPIR_Tnbc_sched_neighbor).
 * MPI_PROC_NULL neighbours move nothing; repeated neighbours match as in MPICH's own
 * algorithms. Piece sizes may differ between processes, so every call is taken and a process
 * whose pieces are all small waits for them inside the call. */

#include "mpiimpl.h"
#include "tnbc_entry.h"
#include "tnbc_pairwise.h"

/* Counts and displacements in elements, one per neighbour; sendcounts NULL: the same
 * sendcount from the start of sendbuf to every neighbour (allgather); recvcounts NULL: recvcount
 * per neighbour, one after the other. With sendtypes/recvtypes (Neighbor_alltoallw), one
 * datatype per neighbour and displacements in bytes. */
static int neighbor(MPIR_Tnbc_coll_t coll, const void *sendbuf, MPI_Aint sendcount,
                    const MPI_Aint sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype,
                    const MPI_Datatype sendtypes[], void *recvbuf, MPI_Aint recvcount,
                    const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                    MPI_Datatype recvtype, const MPI_Datatype recvtypes[],
                    MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Coll_nbrs_t nbrs = { 0 };
    MPIR_Coll_vlayout_t l = { 0 };
    MPIR_Tnbc_call_facts_t facts = {.coll = coll };

    *tnbc_handled = 0;
    MPIR_TNBC_SETTLE_ALL();
    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM || !MPIR_Topology_get(comm_ptr))
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);

    mpi_errno = MPIR_Coll_get_nbrs(comm_ptr, &nbrs);
    MPIR_ERR_CHECK(mpi_errno);
    nbrs.recv_reversed = (coll == MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL);    /* as the stock path */
    int n = MPL_MAX(nbrs.indegree, nbrs.outdegree);
    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(&l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int k = 0; k < nbrs.outdegree; k++) {
        l.sc[k] = sendcounts ? sendcounts[k] : sendcount;
        /* allgather: one piece for everyone (packed once) */
        l.sd[k] = sendcounts ? sdispls[k] : (coll == MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL ?
                                             k * sendcount : 0);
    }
    for (int k = 0; k < nbrs.indegree; k++) {
        l.rc[k] = recvcounts ? recvcounts[k] : recvcount;
        l.rd[k] = recvcounts ? rdispls[k] : k * recvcount;
    }
    MPII_Tnbc_side_t send = {.buf = sendbuf,.counts = l.sc,.displs = l.sd,.type = sendtype,
        .types = sendtypes
    };
    MPII_Tnbc_side_t recv = {.buf = recvbuf,.counts = l.rc,.displs = l.rd,.type = recvtype,
        .types = recvtypes
    };
    mpi_errno = MPII_Tnbc_pairwise_w(coll, &send, &recv, comm_ptr, &nbrs, 0, tnbc_handled);

  fn_exit:
    MPL_free(l.sc);
    MPL_free(nbrs.srcs);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Neighbor_alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                                MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    return neighbor(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL, sendbuf, sendcount, NULL, NULL, sendtype,
                    NULL, recvbuf, recvcount, NULL, NULL, recvtype, NULL, comm_ptr, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_alltoallv(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                 const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                                 MPI_Datatype recvtype, MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    return neighbor(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLV, sendbuf, 0, sendcounts, sdispls, sendtype,
                    NULL, recvbuf, 0, recvcounts, rdispls, recvtype, NULL, comm_ptr,
                    tnbc_handled);
}

int MPIR_Tnbc_Neighbor_allgather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                                 MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    return neighbor(MPIR_TNBC_COLL_NEIGHBOR_ALLGATHER, sendbuf, sendcount, NULL, NULL, sendtype,
                    NULL, recvbuf, recvcount, NULL, NULL, recvtype, NULL, comm_ptr,
                    tnbc_handled);
}

int MPIR_Tnbc_Neighbor_allgatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, const MPI_Aint recvcounts[],
                                  const MPI_Aint displs[], MPI_Datatype recvtype,
                                  MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    return neighbor(MPIR_TNBC_COLL_NEIGHBOR_ALLGATHERV, sendbuf, sendcount, NULL, NULL, sendtype,
                    NULL, recvbuf, 0, recvcounts, displs, recvtype, NULL, comm_ptr,
                    tnbc_handled);
}

int MPIR_Tnbc_Neighbor_alltoallw(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                 void *recvbuf, const MPI_Aint recvcounts[],
                                 const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                 MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    return neighbor(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLW, sendbuf, 0, sendcounts, sdispls,
                    MPI_DATATYPE_NULL, sendtypes, recvbuf, 0, recvcounts, rdispls,
                    MPI_DATATYPE_NULL, recvtypes, comm_ptr, tnbc_handled);
}
