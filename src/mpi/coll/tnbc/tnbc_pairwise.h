/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The pairwise engine (tnbc_alltoall.c) that Alltoall(v,w), the gather family and the
 * neighbour collectives are built on (the per-peer layouts they hand it: coll_peers.h). */

#ifndef TNBC_PAIRWISE_H_INCLUDED
#define TNBC_PAIRWISE_H_INCLUDED

#include "tnbc_entry.h"
#include "coll_peers.h"

/* One side of the pairwise engine: peer p's piece is counts[p] elements of types[p] at
 * buf + displs[p] bytes (Alltoallw); with types NULL, of type at buf + displs[p] * extent(type)
 * (v-layouts). */
typedef struct {
    const void *buf;
    const MPI_Aint *counts, *displs;
    MPI_Datatype type;
    const MPI_Datatype *types;
} MPII_Tnbc_side_t;

/* One pairwise call's pieces: per peer, bytes and offset in the send and receive spaces. */
typedef struct {
    int ns, nr;
    size_t *sbytes, *soff, *rbytes, *roff;
    int *send_pos_space;        /* room for an order of the sends */
} MPII_Tnbc_pieces_t;

/* One call of the pairwise engine: each send peer p gets send piece p, each receive peer p
 * gives receive piece p. Alltoall(v,w) and the gather family (peer p is rank p) and the
 * neighbour collectives (peer p is nbrs.dsts[p] for sends, nbrs.srcs[p] for receives) are
 * built on it. MPI_IN_PLACE (send.buf) has Alltoall(v) semantics. A form whose call starts
 * with this struct fills the sides (and layout, nbrs) in its describe, then calls
 * MPII_Tnbc_pairwise_describe, and uses MPII_Tnbc_pairwise_build and _finish as its own. */
#define MPII_TNBC_SIZE_IS_GLOBAL 0x1    /* piece sizes are the same on every process */
#define MPII_TNBC_PACK_SEND      0x2    /* always copy the send side (it aliases the receive) */
typedef struct {
    MPII_Tnbc_side_t send, recv;
    int flags;
    MPIR_Coll_vlayout_t layout; /* counts a form made for the sides */
    MPIR_Coll_nbrs_t nbrs;      /* with by_nbrs */
    int by_nbrs;
    /* found by describe */
    int in_place;
    MPII_Tnbc_pieces_t pc;
} MPII_Tnbc_pairwise_t;
int MPII_Tnbc_pairwise_describe(void *call, MPII_Tnbc_start_t * args,
                                MPIR_Tnbc_call_facts_t * facts);
int MPII_Tnbc_pairwise_build(void *call, MPII_Tnbc_start_t * args, MPII_Tnbc_launch_t * launch);
/* frees what describe found and the layout and neighbour lists */
void MPII_Tnbc_pairwise_finish(void *call);
/* a form's hold and release (tnbc_entry.h) */
void *MPII_Tnbc_pairwise_hold(const void *unpack_ctx);
void MPII_Tnbc_pairwise_release(void *held);

/* settle the span of a v-layout (no-op for MPI_IN_PLACE; tnbc_alltoall.c); a form's settle step,
 * so only while T-NBC holds buffers */
int MPII_Tnbc_settle_v(const void *buf, const MPI_Aint counts[], const MPI_Aint displs[],
                       MPI_Datatype type, int n);

#endif /* TNBC_PAIRWISE_H_INCLUDED */
