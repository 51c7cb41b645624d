/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The entry points of the reorder + merge family: MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM,
 * MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM and MPIR_CVAR_NEIGHBOR_ALLTOALLV_INTRA_ALGORITHM =
 * reorder | merge | reorder_merge (maint/patches/0015). Each form becomes the same exchange with
 * one count and displacement per rank (rm_exchange.c): an Alltoall's are uniform, a
 * neighbourhood's are zero for ranks that are not neighbours. */

#include "mpiimpl.h"
#include "coll_peers.h"
#include "rm_impl.h"

/* A tuning file may choose the algorithm without its restriction: in place goes stock. */
static int alltoallv(const void *sendbuf, const MPI_Aint * sendcounts, const MPI_Aint * sdispls,
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Aint * recvcounts,
                     const MPI_Aint * rdispls, MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                     MPIR_Errflag_t * errflag, int reorder, int merge)
{
    if (sendbuf == MPI_IN_PLACE) {
        MPII_Rm_count(MPII_RM_STOCK);
        return MPIR_Alltoallv_intra_pairwise_sendrecv_replace(sendbuf, sendcounts, sdispls,
                                                              sendtype, recvbuf, recvcounts,
                                                              rdispls, recvtype, comm_ptr,
                                                              errflag);
    }
    return MPII_Rm_exchange(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                            rdispls, recvtype, comm_ptr, errflag, reorder, merge);
}

static int alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                    void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                    MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int reorder, int merge)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Coll_vlayout_t d;

    if (sendbuf == MPI_IN_PLACE) {
        MPII_Rm_count(MPII_RM_STOCK);
        return MPIR_Alltoall_intra_pairwise_sendrecv_replace(sendbuf, sendcount, sendtype,
                                                             recvbuf, recvcount, recvtype,
                                                             comm_ptr, errflag);
    }
    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_regular(&d, comm_ptr->local_size, sendcount,
                                                 recvcount), mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    mpi_errno = MPII_Rm_exchange(sendbuf, d.sc, d.sd, sendtype, recvbuf, d.rc, d.rd,
                                 recvtype, comm_ptr, errflag, reorder, merge);
    MPL_free(d.sc);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Whether no process lists a neighbour twice (MPI_PROC_NULL aside), agreed once per
 * communicator: a repeated neighbour has no place in one count per rank, and every process must
 * take the same path. */
static int nbrs_simple(MPIR_Comm * comm_ptr, MPII_Rm_comm_t * st, const MPIR_Coll_nbrs_t * nbrs,
                       int *simple)
{
    int mpi_errno = MPI_SUCCESS, repeated = 0;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    char *seen = NULL;

    if (st->nbrs_simple >= 0) {
        *simple = st->nbrs_simple;
        return MPI_SUCCESS;
    }
    seen = MPL_calloc(2 * (size_t) comm_ptr->local_size, 1, MPL_MEM_COLL);
    repeated = !seen;           /* cannot tell: take the stock path everywhere */
    for (int k = 0; seen && k < nbrs->indegree; k++)
        if (nbrs->srcs[k] != MPI_PROC_NULL)
            repeated |= seen[nbrs->srcs[k]]++;
    for (int k = 0; seen && k < nbrs->outdegree; k++)
        if (nbrs->dsts[k] != MPI_PROC_NULL)
            repeated |= seen[comm_ptr->local_size + nbrs->dsts[k]]++;
    MPL_free(seen);
    mpi_errno = MPIR_Allreduce_impl(MPI_IN_PLACE, &repeated, 1, MPI_INT, MPI_MAX, comm_ptr,
                                    &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    st->nbrs_simple = *simple = !repeated;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int neighbor_alltoallv(const void *sendbuf, const MPI_Aint * sendcounts,
                              const MPI_Aint * sdispls, MPI_Datatype sendtype, void *recvbuf,
                              const MPI_Aint * recvcounts, const MPI_Aint * rdispls,
                              MPI_Datatype recvtype, MPIR_Comm * comm_ptr, int reorder,
                              int merge)
{
    int mpi_errno = MPI_SUCCESS, simple = 0;
    MPIR_Coll_nbrs_t nbrs = { 0 };
    MPII_Rm_comm_t *st;
    MPIR_Coll_vlayout_t d = { 0 };
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;

    mpi_errno = MPIR_Coll_get_nbrs(comm_ptr, &nbrs);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPII_Rm_comm_get(comm_ptr, &st);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = nbrs_simple(comm_ptr, st, &nbrs, &simple);
    MPIR_ERR_CHECK(mpi_errno);
    if (!simple) {
        MPII_Rm_count(MPII_RM_STOCK);
        mpi_errno = MPIR_Neighbor_alltoallv_allcomm_nb(sendbuf, sendcounts, sdispls, sendtype,
                                                       recvbuf, recvcounts, rdispls, recvtype,
                                                       comm_ptr);
        goto fn_exit;
    }
    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(&d, comm_ptr->local_size), mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    for (int k = 0; k < nbrs.outdegree; k++) {
        if (nbrs.dsts[k] != MPI_PROC_NULL) {
            d.sc[nbrs.dsts[k]] = sendcounts[k];
            d.sd[nbrs.dsts[k]] = sdispls[k];
        }
    }
    for (int k = 0; k < nbrs.indegree; k++) {
        if (nbrs.srcs[k] != MPI_PROC_NULL) {
            d.rc[nbrs.srcs[k]] = recvcounts[k];
            d.rd[nbrs.srcs[k]] = rdispls[k];
        }
    }
    mpi_errno = MPII_Rm_exchange(sendbuf, d.sc, d.sd, sendtype, recvbuf, d.rc, d.rd,
                                 recvtype, comm_ptr, &errflag, reorder, merge);
  fn_exit:
    MPL_free(d.sc);
    MPL_free(nbrs.srcs);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Alltoallv_intra_reorder(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                 const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                                 MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                                 MPIR_Errflag_t * errflag)
{
    return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                     recvtype, comm_ptr, errflag, 1, 0);
}

int MPIR_Alltoallv_intra_merge(const void *sendbuf, const MPI_Aint sendcounts[],
                               const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                               const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                               MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                               MPIR_Errflag_t * errflag)
{
    return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                     recvtype, comm_ptr, errflag, 0, 1);
}

int MPIR_Alltoallv_intra_reorder_merge(const void *sendbuf, const MPI_Aint sendcounts[],
                                       const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                       void *recvbuf, const MPI_Aint recvcounts[],
                                       const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                       MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                     recvtype, comm_ptr, errflag, 1, 1);
}

int MPIR_Alltoall_intra_reorder(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                                MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm_ptr,
                    errflag, 1, 0);
}

int MPIR_Alltoall_intra_merge(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                              MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm_ptr,
                    errflag, 0, 1);
}

int MPIR_Alltoall_intra_reorder_merge(const void *sendbuf, MPI_Aint sendcount,
                                      MPI_Datatype sendtype, void *recvbuf, MPI_Aint recvcount,
                                      MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                                      MPIR_Errflag_t * errflag)
{
    return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm_ptr,
                    errflag, 1, 1);
}

int MPIR_Neighbor_alltoallv_intra_reorder(const void *sendbuf, const MPI_Aint sendcounts[],
                                          const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                          void *recvbuf, const MPI_Aint recvcounts[],
                                          const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                          MPIR_Comm * comm_ptr)
{
    return neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm_ptr, 1, 0);
}

int MPIR_Neighbor_alltoallv_intra_merge(const void *sendbuf, const MPI_Aint sendcounts[],
                                        const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                        void *recvbuf, const MPI_Aint recvcounts[],
                                        const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                        MPIR_Comm * comm_ptr)
{
    return neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm_ptr, 0, 1);
}

int MPIR_Neighbor_alltoallv_intra_reorder_merge(const void *sendbuf,
                                                const MPI_Aint sendcounts[],
                                                const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                                void *recvbuf, const MPI_Aint recvcounts[],
                                                const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                                MPIR_Comm * comm_ptr)
{
    return neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm_ptr, 1, 1);
}
