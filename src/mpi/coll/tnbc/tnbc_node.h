/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Node arbitration (tnbc_node.c): the processes of a node take turns on its link. */

#ifndef TNBC_NODE_H_INCLUDED
#define TNBC_NODE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* One operation's turn. The operation counts its remote bodies in flight; node_poll looks at
 * the peers once per poll of the operation, node_may_send then decides body by body. */
typedef struct {
    int active;                 /* our slot names this operation */
    uint64_t claim;
    size_t unsent;              /* bytes of remote bodies not completed */
    size_t window, in_flight;
    int window_applies;         /* node_poll: a less urgent peer waits, and ours progress */
    int peer;                   /* the peer we hold for, its progress and when it last moved */
    uint64_t peer_done, peer_seen_ns;
    uint64_t sent_ns;           /* when a body of ours last completed (or the turn began) */
    uint64_t holding_since_ns;  /* node_poll: a more urgent peer still sends (since), or 0 */
    uint64_t held_ns;           /* time spent holding, for the statistics */
    int held;                   /* held at least once */
    int gave_up;                /* the peer we held for stalled: send anyway */
} MPII_Tnbc_turn_t;

/* 1 when comm has processes of another world (spawn, connect/accept): the same answer on
 * every process of comm. */
int MPII_Tnbc_comm_spans_worlds(MPIR_Comm * comm);
/* Collective over COMM_WORLD's node communicator: the node's segment. */
int MPII_Tnbc_node_init(void);
void MPII_Tnbc_node_finalize(void);
int MPII_Tnbc_node_available(void);     /* arbitration applies to this process */
/* Take part in arbitration for an operation (tag) with remote_bytes of remote bodies, at
 * position pos; returns 0 when it does not apply (no segment, nothing remote, our slot busy). */
int MPII_Tnbc_node_join(MPII_Tnbc_turn_t * turn, MPIR_Comm * comm, int tag, int pos,
                        size_t remote_bytes);
void MPII_Tnbc_node_sent(MPII_Tnbc_turn_t * turn, size_t bytes);   /* bodies completed */
/* Our position is now pos: the urgency of the next body we would send, when our bodies are
 * read at different positions (the readers reported them). 1 when it changed. */
int MPII_Tnbc_node_set_pos(MPII_Tnbc_turn_t * turn, int pos);
void MPII_Tnbc_node_leave(MPII_Tnbc_turn_t * turn);
void MPII_Tnbc_node_poll(MPII_Tnbc_turn_t * turn);
/* May a remote body of len bytes be posted now? Holding for a more urgent peer is bounded by
 * MPIR_CVAR_TNBC_NODE_HOLD_MAX_US of no progress; the window applies only while a less urgent
 * peer waits and our bodies in flight keep completing within that time. */
static inline int MPII_Tnbc_node_may_send(const MPII_Tnbc_turn_t * turn, size_t len)
{
    if (turn->holding_since_ns)
        return 0;
    return !turn->window_applies || turn->in_flight == 0 || turn->in_flight + len <= turn->window;
}

#endif /* TNBC_NODE_H_INCLUDED */
