/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The pairwise engine (tnbc_alltoall.c) that Alltoall(v,w), the gather family and the
 * neighbour collectives are built on, and the layouts their entry points hand it. */

#ifndef TNBC_PAIRWISE_H_INCLUDED
#define TNBC_PAIRWISE_H_INCLUDED

#include "tnbc_policy.h"

/* Neighbour lists of a topology communicator (MPI_PROC_NULL entries move nothing). */
typedef struct {
    int indegree, outdegree;
    int *srcs, *dsts;
    int recv_reversed;          /* repeated neighbours match in reverse srcs order (sched.h) */
} MPII_Tnbc_nbrs_t;
/* The neighbour lists of a topology communicator (free with MPL_free(nbrs->srcs));
 * tnbc_neighbor.c */
int MPII_Tnbc_get_nbrs(MPIR_Comm * comm_ptr, MPII_Tnbc_nbrs_t * nbrs);

/* The pairwise engine (tnbc_alltoall.c): each peer p gets sendcounts[p] elements from
 * sendbuf + sdispls[p] * extent and sends recvcounts[p] into recvbuf + rdispls[p] * extent.
 * Alltoall(v) and the gather family are built on it (nbrs NULL: peer p is rank p), the
 * neighbour collectives too (peer p is nbrs->dsts[p] for sends, nbrs->srcs[p] for receives).
 * MPI_IN_PLACE has Alltoall(v) semantics. */
#define MPII_TNBC_SIZE_IS_GLOBAL 0x1    /* piece sizes are the same on every process */
#define MPII_TNBC_PACK_SEND      0x2    /* always copy the send side (it aliases the receive) */
int MPII_Tnbc_pairwise(MPIR_Tnbc_coll_t coll, const void *sendbuf, const MPI_Aint sendcounts[],
                       const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                       const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                       MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                       const MPII_Tnbc_nbrs_t * nbrs, int flags, int *handled);
/* One side of the pairwise engine with a datatype per peer: peer p's piece is counts[p]
 * elements of types[p] at buf + displs[p] bytes (Alltoallw); with types NULL, of type at
 * buf + displs[p] * extent(type) (v-layouts). */
typedef struct {
    const void *buf;
    const MPI_Aint *counts, *displs;
    MPI_Datatype type;
    const MPI_Datatype *types;
} MPII_Tnbc_side_t;
int MPII_Tnbc_pairwise_w(MPIR_Tnbc_coll_t coll, const MPII_Tnbc_side_t * send,
                         const MPII_Tnbc_side_t * recv, MPIR_Comm * comm_ptr,
                         const MPII_Tnbc_nbrs_t * nbrs, int flags, int *handled);
/* The reorder plan's send order for an Alltoall(v) when the algorithm CVAR names reorder or
 * reorder_merge, or NULL (tnbc_rm_comm.c) */
const int *MPII_Tnbc_rm_send_order(MPIR_Tnbc_coll_t coll, MPIR_Comm * comm,
                                   const size_t * sbytes, const size_t * rbytes, int *send_pos);
/* Per-peer send/receive counts and displacements for the pairwise engine: four arrays of n,
 * zeroed, in one allocation (free with MPL_free(l.sc)). */
typedef struct {
    MPI_Aint *sc, *sd, *rc, *rd;
} MPII_Tnbc_layout_t;

static inline int MPII_Tnbc_layout_alloc(MPII_Tnbc_layout_t * l, int n)
{
    MPI_Aint *v = MPL_calloc(4 * (size_t) n + 1, sizeof(MPI_Aint), MPL_MEM_COLL);
    if (!v)
        return MPI_ERR_NO_MEM;
    l->sc = v;
    l->sd = v + n;
    l->rc = v + 2 * n;
    l->rd = v + 3 * n;
    return MPI_SUCCESS;
}

/* An Alltoall's regular layout as a v-layout: count elements per peer, one after the other. */
static inline int MPII_Tnbc_layout_regular(MPII_Tnbc_layout_t * l, int n, MPI_Aint sendcount,
                                           MPI_Aint recvcount)
{
    if (MPII_Tnbc_layout_alloc(l, n))
        return MPI_ERR_NO_MEM;
    for (int p = 0; p < n; p++) {
        l->sc[p] = sendcount;
        l->sd[p] = p * sendcount;
        l->rc[p] = recvcount;
        l->rd[p] = p * recvcount;
    }
    return MPI_SUCCESS;
}

/* settle the span of a v-layout (no-op for MPI_IN_PLACE; tnbc_alltoall.c) */
int MPII_Tnbc_settle_v(const void *buf, const MPI_Aint counts[], const MPI_Aint displs[],
                       MPI_Datatype type, int n);

#endif /* TNBC_PAIRWISE_H_INCLUDED */
