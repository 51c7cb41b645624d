/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Allgather(v), Gather(v) and Scatter(v) on the pairwise engine (tnbc_alltoall.c): each call
 * is described as per-peer counts and displacements. Allgather sends the same piece to every
 * peer (packed once); Gather sends one piece to the root, which receives from everyone;
 * Scatter the other way round. MPI_IN_PLACE keeps the process's own piece where it is (Gather,
 * Scatter) or sends it from the receive buffer, copied first (Allgather). Arguments a process
 * does not use (recvbuf at a non-root of Gather, ...) are never looked at. */

#include "mpiimpl.h"
#include "tnbc_entry.h"
#include "tnbc_pairwise.h"

static int is_root(MPIR_Comm * comm_ptr, int root)
{
    return comm_ptr->rank == root;
}

/* ---- Allgather, Allgatherv ---- */

static int allgather_any(MPIR_Tnbc_coll_t coll, const void *sendbuf, MPI_Aint sendcount,
                         MPI_Datatype sendtype, void *recvbuf, const MPI_Aint * recvcounts,
                         const MPI_Aint * displs, MPI_Aint recvcount, MPI_Datatype recvtype,
                         MPIR_Comm * comm_ptr, int *handled)
{
    int mpi_errno = MPI_SUCCESS, n = comm_ptr->local_size, rank = comm_ptr->rank;
    int flags = (coll == MPIR_TNBC_COLL_ALLGATHER) ? MPII_TNBC_SIZE_IS_GLOBAL : 0;
    MPIR_Coll_vlayout_t l = { 0 };
    MPI_Aint rext;

    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(&l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int p = 0; p < n; p++) {
        l.rc[p] = recvcounts ? recvcounts[p] : recvcount;
        l.rd[p] = displs ? displs[p] : p * recvcount;
    }
    if (sendbuf == MPI_IN_PLACE) {
        /* our piece is already in the receive buffer: send it from a copy */
        MPIR_Datatype_get_extent_macro(recvtype, rext);
        sendbuf = (const char *) recvbuf + l.rd[rank] * rext;
        sendcount = l.rc[rank];
        sendtype = recvtype;
        flags |= MPII_TNBC_PACK_SEND;
    }
    for (int p = 0; p < n; p++)
        l.sc[p] = sendcount;
    mpi_errno = MPII_Tnbc_pairwise(coll, sendbuf, l.sc, l.sd, sendtype, recvbuf, l.rc, l.rd,
                                   recvtype, comm_ptr, NULL, flags, handled);
  fn_exit:
    MPL_free(l.sc);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Allgather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLGATHER };

    MPIR_TNBC_SETTLE_BUF(sendbuf, sendcount, sendtype);
    MPIR_TNBC_SETTLE_BUF(recvbuf, recvcount * MPII_Tnbc_peers(comm_ptr), recvtype);
    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM)
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
    return allgather_any(MPIR_TNBC_COLL_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, NULL,
                         NULL, recvcount, recvtype, comm_ptr, tnbc_handled);
  fn_fail:
    return mpi_errno;
}

int MPIR_Tnbc_Allgatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                         void *recvbuf, const MPI_Aint recvcounts[], const MPI_Aint displs[],
                         MPI_Datatype recvtype, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                         int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLGATHERV };

    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM) {
        MPIR_TNBC_SETTLE_ALL();
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
    }
    MPIR_TNBC_SETTLE_BUF(sendbuf, sendcount, sendtype);
    if (MPIR_TNBC_OWNS_BUFFERS()) {
        mpi_errno = MPII_Tnbc_settle_v(recvbuf, recvcounts, displs, recvtype,
                                       comm_ptr->local_size);
        MPIR_ERR_CHECK(mpi_errno);
    }
    return allgather_any(MPIR_TNBC_COLL_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf,
                         recvcounts, displs, 0, recvtype, comm_ptr, tnbc_handled);
  fn_fail:
    return mpi_errno;
}

/* ---- Gather, Gatherv ---- */

static int gather_any(MPIR_Tnbc_coll_t coll, const void *sendbuf, MPI_Aint sendcount,
                      MPI_Datatype sendtype, void *recvbuf, const MPI_Aint * recvcounts,
                      const MPI_Aint * displs, MPI_Aint recvcount, MPI_Datatype recvtype,
                      int root, MPIR_Comm * comm_ptr, int *handled)
{
    int mpi_errno = MPI_SUCCESS, n = comm_ptr->local_size, rank = comm_ptr->rank;
    int flags = (coll == MPIR_TNBC_COLL_GATHER) ? MPII_TNBC_SIZE_IS_GLOBAL : 0;
    MPIR_Coll_vlayout_t l = { 0 };

    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(&l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    if (is_root(comm_ptr, root)) {
        for (int p = 0; p < n; p++) {
            l.rc[p] = recvcounts ? recvcounts[p] : recvcount;
            l.rd[p] = displs ? displs[p] : p * recvcount;
        }
        if (sendbuf == MPI_IN_PLACE) {
            l.rc[root] = 0;     /* already in place */
            sendbuf = NULL;
            sendtype = recvtype;
        } else {
            l.sc[root] = sendcount;
            l.sd[root] = 0;
        }
    } else {
        l.sc[root] = sendcount;
        recvbuf = NULL;
        recvtype = sendtype;    /* ignored at non-roots: may not be a valid handle */
    }
    mpi_errno = MPII_Tnbc_pairwise(coll, sendbuf, l.sc, l.sd, sendtype, recvbuf, l.rc, l.rd,
                                   recvtype, comm_ptr, NULL, flags, handled);
  fn_exit:
    MPL_free(l.sc);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Gather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void *recvbuf,
                     MPI_Aint recvcount, MPI_Datatype recvtype, int root, MPIR_Comm * comm_ptr,
                     MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_GATHER };

    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM) {
        MPIR_TNBC_SETTLE_ALL();
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
    }
    if (!is_root(comm_ptr, root) || sendbuf != MPI_IN_PLACE)
        MPIR_TNBC_SETTLE_BUF(sendbuf, sendcount, sendtype);
    if (is_root(comm_ptr, root))
        MPIR_TNBC_SETTLE_BUF(recvbuf, recvcount * comm_ptr->local_size, recvtype);
    return gather_any(MPIR_TNBC_COLL_GATHER, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL,
                      recvcount, recvtype, root, comm_ptr, tnbc_handled);
  fn_fail:
    return mpi_errno;
}

int MPIR_Tnbc_Gatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const MPI_Aint recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                      int root, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_GATHERV };

    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM) {
        MPIR_TNBC_SETTLE_ALL();
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
    }
    if (!is_root(comm_ptr, root) || sendbuf != MPI_IN_PLACE)
        MPIR_TNBC_SETTLE_BUF(sendbuf, sendcount, sendtype);
    if (is_root(comm_ptr, root) && MPIR_TNBC_OWNS_BUFFERS()) {
        mpi_errno = MPII_Tnbc_settle_v(recvbuf, recvcounts, displs, recvtype,
                                       comm_ptr->local_size);
        MPIR_ERR_CHECK(mpi_errno);
    }
    return gather_any(MPIR_TNBC_COLL_GATHERV, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                      displs, 0, recvtype, root, comm_ptr, tnbc_handled);
  fn_fail:
    return mpi_errno;
}

/* ---- Scatter, Scatterv ---- */

static int scatter_any(MPIR_Tnbc_coll_t coll, const void *sendbuf, const MPI_Aint * sendcounts,
                       const MPI_Aint * displs, MPI_Aint sendcount, MPI_Datatype sendtype,
                       void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype, int root,
                       MPIR_Comm * comm_ptr, int *handled)
{
    int mpi_errno = MPI_SUCCESS, n = comm_ptr->local_size;
    int flags = (coll == MPIR_TNBC_COLL_SCATTER) ? MPII_TNBC_SIZE_IS_GLOBAL : 0;
    MPIR_Coll_vlayout_t l = { 0 };

    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(&l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    if (is_root(comm_ptr, root)) {
        for (int p = 0; p < n; p++) {
            l.sc[p] = sendcounts ? sendcounts[p] : sendcount;
            l.sd[p] = displs ? displs[p] : p * sendcount;
        }
        if (recvbuf == MPI_IN_PLACE) {
            l.sc[root] = 0;     /* the root keeps its piece where it is */
            recvbuf = NULL;
            recvtype = sendtype;
        } else {
            l.rc[root] = recvcount;
        }
    } else {
        l.rc[root] = recvcount;
        sendbuf = NULL;
        sendtype = recvtype;    /* ignored at non-roots: may not be a valid handle */
    }
    mpi_errno = MPII_Tnbc_pairwise(coll, sendbuf, l.sc, l.sd, sendtype, recvbuf, l.rc, l.rd,
                                   recvtype, comm_ptr, NULL, flags, handled);
  fn_exit:
    MPL_free(l.sc);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Scatter(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                      void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype, int root,
                      MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_SCATTER };

    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM) {
        MPIR_TNBC_SETTLE_ALL();
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
    }
    if (is_root(comm_ptr, root))
        MPIR_TNBC_SETTLE_BUF(sendbuf, sendcount * comm_ptr->local_size, sendtype);
    if (!is_root(comm_ptr, root) || recvbuf != MPI_IN_PLACE)
        MPIR_TNBC_SETTLE_BUF(recvbuf, recvcount, recvtype);
    return scatter_any(MPIR_TNBC_COLL_SCATTER, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf,
                       recvcount, recvtype, root, comm_ptr, tnbc_handled);
  fn_fail:
    return mpi_errno;
}

int MPIR_Tnbc_Scatterv(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint displs[],
                       MPI_Datatype sendtype, void *recvbuf, MPI_Aint recvcount,
                       MPI_Datatype recvtype, int root, MPIR_Comm * comm_ptr,
                       MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_SCATTERV };

    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM) {
        MPIR_TNBC_SETTLE_ALL();
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
    }
    if (is_root(comm_ptr, root) && MPIR_TNBC_OWNS_BUFFERS()) {
        mpi_errno = MPII_Tnbc_settle_v(sendbuf, sendcounts, displs, sendtype,
                                       comm_ptr->local_size);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (!is_root(comm_ptr, root) || recvbuf != MPI_IN_PLACE)
        MPIR_TNBC_SETTLE_BUF(recvbuf, recvcount, recvtype);
    return scatter_any(MPIR_TNBC_COLL_SCATTERV, sendbuf, sendcounts, displs, 0, sendtype,
                       recvbuf, recvcount, recvtype, root, comm_ptr, tnbc_handled);
  fn_fail:
    return mpi_errno;
}
