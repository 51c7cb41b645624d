/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Flow control of an operation's sends (tnbc_flow.c): whether an entry that the schedule
 * would post next may go now. The schedule decides the order; flow control decides when a
 * body goes: a per-peer window of body sends in flight, node arbitration (the node's
 * processes take turns on its link, most urgent first) and pacing (a window of remote body
 * bytes not yet delivered). The executor (tnbc_op.c) asks before it posts an entry and tells
 * it what it posted and what completed; a new policy of when bodies go changes only this
 * module. */

#ifndef TNBC_FLOW_H_INCLUDED
#define TNBC_FLOW_H_INCLUDED

#include "tnbc_node.h"
#include "tnbc_sched.h"

typedef struct {
    const MPIR_Tnbc_sched_t *sched;
    MPIR_Comm *comm;
    MPII_Tnbc_turn_t turn;      /* node arbitration of the remote bodies */
    unsigned char *remote;      /* per entry: a remote body (paced, takes turns), or NULL */
    int *urgency;               /* per peer: where it reads our block (-1 unknown), or NULL */
    int *bodies_out;            /* per peer: body sends in flight (with a body window) */
    size_t pace;                /* remote bodies in flight, bytes at most (at least one), or 0:
                                 * any (not paced) */
    size_t paced_out;           /* remote body bytes posted and not yet delivered */
    uint64_t *paced_post_ns;    /* per entry: when a paced body was posted (statistics) */
    int *paced_body;            /* per peer: its paced body (entry), or -1 */
    uint64_t last_delivery_ns;  /* when a paced body was last delivered */
    uint64_t paced_progress_ns; /* when a paced body was last posted or delivered */
    int window_lapsed;          /* no delivery for too long: open until the next one */
    uint64_t paced_bodies, paced_flight_ns, paced_gaps, paced_gap_ns;
    int looked;                 /* the node's peers were looked at in this poll */
    int held;                   /* this poll held a remote body back */
} MPII_Tnbc_flow_t;

/* What an operation knows when it starts: whether the call returns early, our position in the
 * access order (-1 unknown), where each peer reads our block (NULL: unknown) and the pace. A
 * flow that finds no memory lets every body go at once, as without flow control. */
typedef struct {
    int early;
    int tag;                    /* names the operation across the node */
    int pos;
    const int *urgency;
    size_t pace_bytes;          /* MPIR_CVAR_TNBC_PACE_BYTES as the job agreed it, or 0 */
} MPII_Tnbc_flow_start_t;

void MPII_Tnbc_flow_init(MPII_Tnbc_flow_t * flow, const MPIR_Tnbc_sched_t * sched,
                         MPIR_Comm * comm, const MPII_Tnbc_flow_start_t * start);
void MPII_Tnbc_flow_free(MPII_Tnbc_flow_t * flow);
/* No body will be posted any more (an error): give up our turn. */
void MPII_Tnbc_flow_abandon(MPII_Tnbc_flow_t * flow);

/* Once per poll, before the entries are looked at. */
void MPII_Tnbc_flow_begin_poll(MPII_Tnbc_flow_t * flow);
/* May entry i (its dependencies done) be posted now? 0: not yet (flow_held says whether it
 * was held back for the node or the pace; otherwise a completion reopens its window). */
int MPII_Tnbc_flow_may_post(MPII_Tnbc_flow_t * flow, int i);
void MPII_Tnbc_flow_posted(MPII_Tnbc_flow_t * flow, int i);
void MPII_Tnbc_flow_done(MPII_Tnbc_flow_t * flow, int i);
/* Entry i must be sent synchronously: its completion tells that a paced body was delivered. */
int MPII_Tnbc_flow_sync_send(const MPII_Tnbc_flow_t * flow, int i);
/* The last poll held a remote body back (the helper keeps a timer running). */
int MPII_Tnbc_flow_held(const MPII_Tnbc_flow_t * flow);

#endif /* TNBC_FLOW_H_INCLUDED */
