/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Schedule tables of the T-NBC family.
 *
 * A schedule lists what one rank does for one collective: sends, receives and local copies, in
 * bytes, against two flat spaces -- the send space (the user's send buffer or a copy of it) and
 * the receive space (the user's receive buffer, seen through its page-guard staging, or a
 * temporary buffer). Each receive space range that a receive or copy fills is one sub-message;
 * the receive sub-messages are sorted by offset and never overlap, as the page guards need.
 * An entry may wait for one earlier entry ("after"): a tree Bcast forwards a segment only once
 * it has received it. Lower priority values are posted first.
 *
 * Pure C: no MPICH includes, unit-tested with Check. */

#ifndef TNBC_SCHED_H_INCLUDED
#define TNBC_SCHED_H_INCLUDED

#include <stddef.h>

#define MPIR_TNBC_SCHED_OK           0
#define MPIR_TNBC_SCHED_ERR_NOMEM   -1
#define MPIR_TNBC_SCHED_ERR_ARG     -2
#define MPIR_TNBC_SCHED_ERR_OVERLAP -3  /* receive ranges overlap: the user layout cannot be
                                         * guarded; use a packed receive space instead */

/* Edge pieces. A receive buffer's first and last pages are usually shared with other memory and
 * cannot be guarded, so the sub-messages on them must arrive before the call returns. Every
 * piece of more than two edges therefore travels as head (first EDGE bytes), tail (last EDGE
 * bytes) and body, heads and tails first: a process returns as soon as its edges are in. The
 * split depends only on sizes both sides know, so the messages match. */
#define MPIR_TNBC_SCHED_EDGE 4096

typedef enum {
    MPIR_TNBC_SEND,
    MPIR_TNBC_RECV,
    MPIR_TNBC_COPY              /* send space -> receive space, this rank to itself */
} MPIR_Tnbc_kind_t;

typedef struct {
    MPIR_Tnbc_kind_t kind;
    int peer;                   /* rank in the communicator (SEND, RECV) */
    size_t off;                 /* SEND: source offset; RECV, COPY: destination offset */
    size_t src_off;             /* COPY: source offset in the send space */
    size_t len;
    int from_recv;              /* SEND: the source is in the receive space (forwarding) */
    int after;                  /* entry that must complete before this one starts; -1: none */
    int sub;                    /* RECV, COPY: receive sub-message; SEND: send sub-message */
    int prio;                   /* lower goes first */
} MPIR_Tnbc_entry_t;

typedef struct {
    int n, cap;
    MPIR_Tnbc_entry_t *entries;
    int *order;                 /* entry indices by (prio, index) once finished */
    /* receive sub-messages, sorted by offset, non-overlapping */
    int nrecv_sub;
    size_t *recv_sub_off, *recv_sub_len;
    size_t recv_bytes;          /* extent of the receive space */
    /* send sub-messages, in the order the builder created them (may overlap) */
    int nsend_sub;
    size_t *send_sub_off, *send_sub_len;
    size_t send_bytes;          /* extent of the send space */
} MPIR_Tnbc_sched_t;

void MPIR_Tnbc_sched_init(MPIR_Tnbc_sched_t * s);
void MPIR_Tnbc_sched_free(MPIR_Tnbc_sched_t * s);

/* Alltoall(v) in bytes. Per peer p: sbytes[p] from send offset soff[p], rbytes[p] to receive
 * offset roff[p] (relative to the spaces). The self pair becomes one COPY. Peers are visited in
 * ring order (rank+1, rank+2, ... for sends; rank-1, rank-2, ... for receives) so that each
 * step pairs every rank with a distinct partner; all edge pieces go before the bodies. Empty
 * pairs get no entry. */
int MPIR_Tnbc_sched_alltoallv(MPIR_Tnbc_sched_t * s, int rank, int size,
                              const size_t * sbytes, const size_t * soff,
                              const size_t * rbytes, const size_t * roff);

/* Binomial-tree Bcast of nbytes: a head and a tail edge, then the rest in nseg segments (at
 * least one byte each), in that order. The root's buffer is its send space; every other rank
 * receives into its receive space and forwards each segment to its children as soon as that
 * segment has arrived. */
int MPIR_Tnbc_sched_bcast(MPIR_Tnbc_sched_t * s, int rank, int size, int root, size_t nbytes,
                          int nseg);

/* Sort the receive sub-messages by offset (renumbering entries), check that they do not
 * overlap, compute order[]. Builders call it; exposed for tests. */
int MPIR_Tnbc_sched_finish(MPIR_Tnbc_sched_t * s);

/* 1 when the send sub-messages are sorted and non-overlapping (a read-only guard needs it). */
int MPIR_Tnbc_sched_send_subs_disjoint(const MPIR_Tnbc_sched_t * s);

#endif /* TNBC_SCHED_H_INCLUDED */
