/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The pairwise engine (tnbc_alltoall.c) that Alltoall(v,w), the gather family and the
 * neighbour collectives are built on (the per-peer layouts they hand it: coll_peers.h). */

#ifndef TNBC_PAIRWISE_H_INCLUDED
#define TNBC_PAIRWISE_H_INCLUDED

#include "tnbc_policy.h"
#include "coll_peers.h"

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
                       const MPIR_Coll_nbrs_t * nbrs, int flags, int *handled);
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
                         const MPIR_Coll_nbrs_t * nbrs, int flags, int *handled);
/* settle the span of a v-layout (no-op for MPI_IN_PLACE; tnbc_alltoall.c) */
int MPII_Tnbc_settle_v(const void *buf, const MPI_Aint counts[], const MPI_Aint displs[],
                       MPI_Datatype type, int n);

#endif /* TNBC_PAIRWISE_H_INCLUDED */
