/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Alltoall and Alltoallv, and the pairwise engine the gather family shares (tnbc_gather.c):
 * every pair exchanges at most one piece, in ring order (tnbc_sched.c). Contiguous buffers are
 * used in place (the receive buffer behind page guards); a derived datatype, MPI_IN_PLACE or
 * receive ranges that overlap are packed into private buffers, and a packed receive waits in
 * the call and unpacks. The wire protocol is the same in every case, so processes may choose
 * differently. */

#include "mpiimpl.h"
#include "tnbc_impl.h"

/* Lowest and highest byte the pieces of a v-layout touch, relative to the buffer. */
static void v_span(const MPI_Aint counts[], const MPI_Aint displs[], MPI_Datatype type, int n,
                   MPI_Aint * lo, MPI_Aint * hi)
{
    MPI_Aint true_lb, true_extent, extent;
    MPIR_Type_get_true_extent_impl(type, &true_lb, &true_extent);
    MPIR_Datatype_get_extent_macro(type, extent);
    *lo = 0;
    *hi = 0;
    int first = 1;
    for (int p = 0; p < n; p++) {
        if (counts[p] <= 0)
            continue;
        MPI_Aint a = displs[p] * extent + true_lb + MPL_MIN(0, (counts[p] - 1) * extent);
        MPI_Aint b = displs[p] * extent + true_lb + true_extent +
            MPL_MAX(0, (counts[p] - 1) * extent);
        if (first || a < *lo)
            *lo = a;
        if (first || b > *hi)
            *hi = b;
        first = 0;
    }
}

int MPII_Tnbc_settle_v(const void *buf, const MPI_Aint counts[], const MPI_Aint displs[],
                       MPI_Datatype type, int n)
{
    MPI_Aint lo, hi;
    if (!MPIR_Tnbc_ops_in_flight || buf == MPI_IN_PLACE)
        return MPI_SUCCESS;
    v_span(counts, displs, type, n, &lo, &hi);
    return MPII_Tnbc_settle_range((const char *) buf + lo, (size_t) (hi - lo));
}

static int same_as_previous(const MPI_Aint counts[], const MPI_Aint displs[], int p)
{
    return p > 0 && counts[p] > 0 && counts[p] == counts[p - 1] && displs[p] == displs[p - 1];
}

/* Pack each peer's piece of a v-layout one after the other into a new buffer. */
static int pack_v(const void *buf, const MPI_Aint counts[], const MPI_Aint displs[],
                  MPI_Datatype type, int n, const size_t * bytes, size_t * off, char **packed)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint extent, actual;
    size_t total = 0;

    MPIR_Datatype_get_extent_macro(type, extent);
    for (int p = 0; p < n; p++) {
        /* the same piece for consecutive peers (Allgather) is packed once */
        if (same_as_previous(counts, displs, p)) {
            off[p] = off[p - 1];
            continue;
        }
        off[p] = total;
        total += bytes[p];
    }
    *packed = MPL_malloc(total + 1, MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!*packed, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int p = 0; p < n; p++) {
        if (!bytes[p] || same_as_previous(counts, displs, p))
            continue;
        mpi_errno = MPIR_Typerep_pack((const char *) buf + displs[p] * extent, counts[p], type, 0,
                                      *packed + off[p], bytes[p], &actual);
        MPIR_ERR_CHECK(mpi_errno);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int unpack_v(const char *packed, void *buf, const MPI_Aint counts[],
                    const MPI_Aint displs[], MPI_Datatype type, int n, const size_t * bytes,
                    const size_t * off)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint extent, actual;

    MPIR_Datatype_get_extent_macro(type, extent);
    for (int p = 0; p < n; p++) {
        if (!bytes[p])
            continue;
        mpi_errno = MPIR_Typerep_unpack(packed + off[p], bytes[p],
                                        (char *) buf + displs[p] * extent, counts[p], type, 0,
                                        &actual);
        MPIR_ERR_CHECK(mpi_errno);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Every rank in ring order, or the neighbour lists of a topology. */
static int build(MPIR_Tnbc_sched_t * s, int rank, const MPII_Tnbc_nbrs_t * nbrs, int ns,
                 const size_t * sbytes, const size_t * soff, int nr, const size_t * rbytes,
                 const size_t * roff)
{
    if (nbrs)
        return MPIR_Tnbc_sched_neighbor(s, ns, nbrs->dsts, sbytes, soff, nr, nbrs->srcs, rbytes,
                                        roff, nbrs->recv_reversed);
    return MPIR_Tnbc_sched_alltoallv(s, rank, ns, sbytes, soff, rbytes, roff);
}

int MPII_Tnbc_pairwise(MPIR_Tnbc_coll_t coll, const void *sendbuf, const MPI_Aint sendcounts[],
                       const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                       const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                       MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                       const MPII_Tnbc_nbrs_t * nbrs, int flags, int *handled)
{
    int mpi_errno = MPI_SUCCESS;
    int rank = comm_ptr->rank;
    int ns = nbrs ? nbrs->outdegree : comm_ptr->local_size;
    int nr = nbrs ? nbrs->indegree : comm_ptr->local_size;
    MPI_Aint ssize, rsize, sext, rext, lo, hi;
    MPII_Tnbc_start_t args = {.coll = coll,.comm = comm_ptr };
    MPII_Tnbc_op_t *op = NULL;
    size_t *sbytes, *soff, *rbytes, *roff;
    size_t largest = 0, largest_recv = 0;
    MPIR_CHKLMEM_DECL(4);

    *handled = 0;
    int in_place = (sendbuf == MPI_IN_PLACE);
    if (in_place) {
        sendbuf = recvbuf;
        sendcounts = recvcounts;
        sdispls = rdispls;
        sendtype = recvtype;
    }
    MPIR_Datatype_get_size_macro(sendtype, ssize);
    MPIR_Datatype_get_size_macro(recvtype, rsize);
    MPIR_Datatype_get_extent_macro(sendtype, sext);
    MPIR_Datatype_get_extent_macro(recvtype, rext);
    MPIR_CHKLMEM_MALLOC(sbytes, size_t *, (ns + 1) * sizeof(size_t), mpi_errno, "sbytes",
                        MPL_MEM_COLL);
    MPIR_CHKLMEM_MALLOC(soff, size_t *, (ns + 1) * sizeof(size_t), mpi_errno, "soff",
                        MPL_MEM_COLL);
    MPIR_CHKLMEM_MALLOC(rbytes, size_t *, (nr + 1) * sizeof(size_t), mpi_errno, "rbytes",
                        MPL_MEM_COLL);
    MPIR_CHKLMEM_MALLOC(roff, size_t *, (nr + 1) * sizeof(size_t), mpi_errno, "roff",
                        MPL_MEM_COLL);
    for (int p = 0; p < ns; p++) {
        sbytes[p] = sendcounts[p] > 0 ? sendcounts[p] * ssize : 0;
        largest = MPL_MAX(largest, sbytes[p]);
    }
    for (int p = 0; p < nr; p++) {
        rbytes[p] = recvcounts[p] > 0 ? recvcounts[p] * rsize : 0;
        largest = MPL_MAX(largest, rbytes[p]);
        largest_recv = MPL_MAX(largest_recv, rbytes[p]);
    }

    MPIR_Tnbc_call_facts_t facts = {.coll = coll,
        .size_is_global = !!(flags & MPII_TNBC_SIZE_IS_GLOBAL),.largest_submsg_bytes = largest
    };
    if (MPII_Tnbc_decide(&facts, comm_ptr) != MPIR_TNBC_ACCEPT)
        goto fn_exit;
    *handled = 1;
    /* a process that only sends (Gather at a non-root) judges by what it sends */
    args.small = ((largest_recv ? largest_recv : largest) < MPII_Tnbc_policy.min_bytes);

    /* Send space: the user's bytes in place when flat, else packed (MPI_IN_PLACE: always a
     * copy, as the receive buffer is overwritten). */
    if (!in_place && !(flags & MPII_TNBC_PACK_SEND) && MPII_Tnbc_is_flat(sendtype)) {
        v_span(sendcounts, sdispls, sendtype, ns, &lo, &hi);
        for (int p = 0; p < ns; p++)
            soff[p] = sbytes[p] ? (size_t) (sdispls[p] * sext - lo) : 0;
        args.send_user = (const char *) sendbuf + lo;
    } else {
        mpi_errno = pack_v(sendbuf, sendcounts, sdispls, sendtype, ns, sbytes, soff,
                           (char **) &args.send_packed);
        MPIR_ERR_CHECK(mpi_errno);
    }

    /* Receive space: the user's buffer when flat and the pieces do not overlap. */
    int recv_flat = MPII_Tnbc_is_flat(recvtype);
    if (recv_flat) {
        v_span(recvcounts, rdispls, recvtype, nr, &lo, &hi);
        for (int p = 0; p < nr; p++)
            roff[p] = rbytes[p] ? (size_t) (rdispls[p] * rext - lo) : 0;
        args.recv_user = (char *) recvbuf + lo;
    }
    int rc = MPIR_TNBC_SCHED_ERR_OVERLAP;
    if (recv_flat)
        rc = build(&args.sched, rank, nbrs, ns, sbytes, soff, nr, rbytes, roff);
    if (rc == MPIR_TNBC_SCHED_ERR_OVERLAP) {
        size_t total = 0;
        MPIR_Tnbc_sched_free(&args.sched);
        for (int p = 0; p < nr; p++) {
            roff[p] = total;
            total += rbytes[p];
        }
        args.recv_user = NULL;
        args.recv_packed = 1;
        rc = build(&args.sched, rank, nbrs, ns, sbytes, soff, nr, rbytes, roff);
    }
    /* the self pair's type signatures differ: erroneous, and only this process is involved */
    MPIR_ERR_CHKANDJUMP(rc == MPIR_TNBC_SCHED_ERR_ARG, mpi_errno, MPI_ERR_TRUNCATE, "**truncate");
    MPIR_ERR_CHKANDJUMP(rc != MPIR_TNBC_SCHED_OK, mpi_errno, MPI_ERR_OTHER, "**nomem");

    mpi_errno = MPII_Tnbc_launch(&args, &op);
    MPIR_ERR_CHECK(mpi_errno);
    if (op) {
        if (args.recv_packed)
            mpi_errno = unpack_v(op->recv_tmp, recvbuf, recvcounts, rdispls, recvtype, nr,
                                 rbytes, roff);
        MPII_Tnbc_op_free(op);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    MPL_free(args.send_packed);
    MPIR_Tnbc_sched_free(&args.sched);
    MPIR_CHKLMEM_FREEALL();
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                       void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                       MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    int n = MPII_Tnbc_peers(comm_ptr);
    MPII_Tnbc_layout_t l = { 0 };

    if (sendbuf != MPI_IN_PLACE)
        MPII_TNBC_SETTLE(sendbuf, sendcount * n, sendtype);
    MPII_TNBC_SETTLE(recvbuf, recvcount * n, recvtype);
    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM) {
        MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLTOALL };
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
    }

    /* the regular layout as a v-layout: one code path for both */
    MPIR_ERR_CHKANDJUMP(MPII_Tnbc_layout_alloc(&l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int p = 0; p < n; p++) {
        l.sc[p] = sendcount;
        l.sd[p] = p * sendcount;
        l.rc[p] = recvcount;
        l.rd[p] = p * recvcount;
    }
    mpi_errno = MPII_Tnbc_pairwise(MPIR_TNBC_COLL_ALLTOALL, sendbuf, l.sc, l.sd, sendtype,
                                   recvbuf, l.rc, l.rd, recvtype, comm_ptr, NULL,
                                   MPII_TNBC_SIZE_IS_GLOBAL, tnbc_handled);

  fn_exit:
    MPL_free(l.sc);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Alltoallv(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const MPI_Aint recvcounts[],
                        const MPI_Aint rdispls[], MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                        MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    int n = MPII_Tnbc_peers(comm_ptr);

    if (MPIR_Tnbc_ops_in_flight) {
        if (sendbuf != MPI_IN_PLACE) {
            mpi_errno = MPII_Tnbc_settle_v(sendbuf, sendcounts, sdispls, sendtype, n);
            MPIR_ERR_CHECK(mpi_errno);
        }
        mpi_errno = MPII_Tnbc_settle_v(recvbuf, recvcounts, rdispls, recvtype, n);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM) {
        MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_ALLTOALLV };
        return MPII_Tnbc_offer(&facts, comm_ptr, tnbc_handled);
    }
    mpi_errno = MPII_Tnbc_pairwise(MPIR_TNBC_COLL_ALLTOALLV, sendbuf, sendcounts, sdispls,
                                   sendtype, recvbuf, recvcounts, rdispls, recvtype, comm_ptr,
                                   NULL, 0, tnbc_handled);
  fn_fail:
    return mpi_errno;
}
