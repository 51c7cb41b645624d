/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Flow control of an operation's sends: may the body the schedule would post next go now?
 * Three limits, each optional: a per-peer window of body sends in flight (the schedule's
 * body_window, so that a peer's urgent body is not queued behind the others), node arbitration
 * (tnbc_node.c) and pacing (MPIR_CVAR_TNBC_PACE_BYTES, whose window reopens when the order
 * report behind a body is matched: the body was delivered). */

#include "mpiimpl.h"
#include "coll_peers.h"
#include "tnbc_flow.h"
#include "tnbc_stats.h"
#include "tnbc_util.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_PACE_BYTES
      category    : TNBC
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Experimental. An Alltoall(v/w) that returns early and knows where its blocks are read
        keeps at most this many bytes of bodies to other nodes undelivered (at least one
        body), most urgent first, so that the links carry the blocks read first one after
        another instead of sharing the rate between all of them. Every process then tells
        every peer where it reads that peer's block, in a small message after the body
        (matched, it says the body was delivered); the senders order their blocks by it from
        the next call on. Such calls always return early (MPIR_CVAR_TNBC_RETURN adaptive
        acts as early for them). Read once, by MPI_Init; must be set (or not) for every
        process alike. 0: every body at once.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* the urgency of a body whose reader did not report: after every reported one */
#define MPII_TNBC_URGENCY_LAST (1 << 20)

/* Per entry, whether it is a body sent to another node; the bytes of all. */
static size_t mark_remote_bodies(MPII_Tnbc_flow_t * flow)
{
    const MPIR_Tnbc_sched_t *s = flow->sched;
    int mine = MPIR_Coll_node_of(flow->comm, flow->comm->rank);
    size_t bytes = 0;

    for (int i = 0; i < s->n; i++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        if (e->kind == MPIR_TNBC_SEND && MPIR_Tnbc_entry_is_body(s, e) &&
            (mine < 0 || MPIR_Coll_node_of(flow->comm, e->peer) != mine)) {
            flow->remote[i] = 1;
            bytes += e->len;
        }
    }
    return bytes;
}

/* Pacing needs to know when a body was delivered: the order report that follows it to its
 * peer tells, once matched (tnbc_sched.h), so reports go synchronously. */
static void setup_pace(MPII_Tnbc_flow_t * flow, size_t pace)
{
    int n = flow->comm->local_size;
    flow->paced_post_ns = MPL_calloc(flow->sched->n + 1, sizeof(uint64_t), MPL_MEM_COLL);
    flow->paced_body = MPL_malloc(((size_t) n + 1) * sizeof(int), MPL_MEM_COLL);
    if (!flow->paced_post_ns || !flow->paced_body)
        return; /* without memory, the bodies go at once */
    for (int p = 0; p < n; p++)
        flow->paced_body[p] = -1;
    for (int i = 0; i < flow->sched->n; i++)
        if (flow->remote[i])
            flow->paced_body[flow->sched->entries[i].peer] = i;
    flow->pace = pace;
}

/* The most urgent of the readers' positions (MPII_TNBC_URGENCY_LAST: none reported). */
static int first_urgency(const int *urgency, int n)
{
    int first = MPII_TNBC_URGENCY_LAST;
    for (int p = 0; p < n; p++)
        if (urgency[p] >= 0 && urgency[p] < first)
            first = urgency[p];
    return first;
}

/* When the call returns early and where our blocks are read is known (our position in the
 * access order, or the readers' reports), remote bodies are paced (a window of delivered bytes,
 * in the schedule's order) and take turns with the node's other processes (a process that
 * waits in the call has nothing to overlap). With reports, each body has its own urgency and
 * our position is the next one's (may_post). */
static void setup_remote(MPII_Tnbc_flow_t * flow, const MPII_Tnbc_flow_start_t * start)
{
    int n = flow->comm->local_size, arbitrate = MPII_Tnbc_node_available(), pos = start->pos;

    if (!start->early || (!arbitrate && !start->pace_bytes))
        return;
    if (start->urgency) {
        pos = first_urgency(start->urgency, n);
        if (arbitrate)
            flow->urgency = MPL_malloc(((size_t) n + 1) * sizeof(int), MPL_MEM_COLL);
        if (flow->urgency)
            memcpy(flow->urgency, start->urgency, n * sizeof(int));
    }
    if (pos < 0)
        return;
    flow->remote = MPL_calloc(flow->sched->n + 1, 1, MPL_MEM_COLL);
    if (!flow->remote)
        return; /* no memory: the bodies go at once, as without pacing */
    size_t bytes = mark_remote_bodies(flow);
    if (bytes > 0 && start->pace_bytes > 0 && flow->sched->reports)
        setup_pace(flow, start->pace_bytes);
    if ((!arbitrate || !MPII_Tnbc_node_join(&flow->turn, flow->comm, start->tag, pos, bytes)) &&
        !flow->pace) {
        MPL_free(flow->remote);
        flow->remote = NULL;
    }
}

void MPII_Tnbc_flow_init(MPII_Tnbc_flow_t * flow, const MPIR_Tnbc_sched_t * sched,
                         MPIR_Comm * comm, const MPII_Tnbc_flow_start_t * start)
{
    memset(flow, 0, sizeof(*flow));
    flow->sched = sched;
    flow->comm = comm;
    /* no memory for the counts: every body goes at once, as without a window */
    if (sched->body_window > 0 && sched->body_prio > 0)
        flow->bodies_out = MPL_calloc(comm->local_size, sizeof(int), MPL_MEM_COLL);
    setup_remote(flow, start);
}

void MPII_Tnbc_flow_abandon(MPII_Tnbc_flow_t * flow)
{
    MPII_Tnbc_node_leave(&flow->turn);
}

void MPII_Tnbc_flow_free(MPII_Tnbc_flow_t * flow)
{
    MPII_Tnbc_node_leave(&flow->turn);
    if (flow->paced_bodies)
        MPII_Tnbc_stats_paced(flow->paced_bodies, flow->paced_flight_ns, flow->paced_gaps,
                              flow->paced_gap_ns);
    MPL_free(flow->paced_post_ns);
    MPL_free(flow->paced_body);
    MPL_free(flow->urgency);
    MPL_free(flow->remote);
    MPL_free(flow->bodies_out);
}

/* A body send that the body window counts. */
static int windowed(const MPII_Tnbc_flow_t * flow, const MPIR_Tnbc_entry_t * e)
{
    return flow->bodies_out && e->kind == MPIR_TNBC_SEND &&
        MPIR_Tnbc_entry_is_body(flow->sched, e);
}

static int is_remote(const MPII_Tnbc_flow_t * flow, int i)
{
    return flow->remote && flow->remote[i];
}

/* A paced remote body waits while the window is full (a delivery reopens it), but not for a
 * receiver that has not matched anything for MPIR_CVAR_TNBC_NODE_HOLD_MAX_US (it may be late
 * into the call, or busy): then the window lapses until the next delivery. */
static int waits_for_window(MPII_Tnbc_flow_t * flow, const MPIR_Tnbc_entry_t * e)
{
    if (!flow->pace || flow->window_lapsed || flow->paced_out == 0 ||
        flow->paced_out + e->len <= flow->pace)
        return 0;
    uint64_t limit_ns = (uint64_t) MPL_MAX(MPIR_CVAR_TNBC_NODE_HOLD_MAX_US, 0) * 1000;
    flow->window_lapsed = MPII_Tnbc_now_ns() - flow->paced_progress_ns > limit_ns;
    return !flow->window_lapsed;
}

/* A remote body waits for its turn; the peers are looked at once per poll. */
static int waits_for_turn(MPII_Tnbc_flow_t * flow, const MPIR_Tnbc_entry_t * e)
{
    if (!flow->turn.active)
        return 0;
    if (flow->urgency) {
        /* our position is this body's: the peers are looked at again if it moved */
        int u = flow->urgency[e->peer];
        flow->looked &= !MPII_Tnbc_node_set_pos(&flow->turn, u >= 0 ? u :
                                                MPII_TNBC_URGENCY_LAST);
    }
    if (!flow->looked) {
        MPII_Tnbc_node_poll(&flow->turn);
        flow->looked = 1;
    }
    return !MPII_Tnbc_node_may_send(&flow->turn, e->len);
}

void MPII_Tnbc_flow_begin_poll(MPII_Tnbc_flow_t * flow)
{
    flow->looked = 0;
    flow->held = 0;
}

int MPII_Tnbc_flow_may_post(MPII_Tnbc_flow_t * flow, int i)
{
    const MPIR_Tnbc_entry_t *e = &flow->sched->entries[i];

    if (is_remote(flow, i) && (waits_for_turn(flow, e) || waits_for_window(flow, e))) {
        /* a delivery or a peer's progress reopens it, or the helper's timer lapses it */
        flow->held = 1;
        return 0;
    }
    /* a completion reopens it: a network event wakes the helper */
    return !(windowed(flow, e) && flow->bodies_out[e->peer] >= flow->sched->body_window);
}

static void note_post(MPII_Tnbc_flow_t * flow, int i)
{
    uint64_t now = MPII_Tnbc_now_ns();
    flow->paced_post_ns[i] = now;
    flow->paced_progress_ns = now;
    if (flow->last_delivery_ns) {
        /* posted after a delivery made room: how long the room stayed unused (or held) */
        flow->paced_gaps++;
        flow->paced_gap_ns += now - flow->last_delivery_ns;
    }
    flow->paced_out += flow->sched->entries[i].len;
}

void MPII_Tnbc_flow_posted(MPII_Tnbc_flow_t * flow, int i)
{
    const MPIR_Tnbc_entry_t *e = &flow->sched->entries[i];
    if (windowed(flow, e))
        flow->bodies_out[e->peer]++;
    if (is_remote(flow, i)) {
        if (flow->pace)
            note_post(flow, i);
        flow->turn.in_flight += e->len;
    }
}

static void node_sent(MPII_Tnbc_flow_t * flow, size_t len)
{
    flow->turn.in_flight -= len;
    MPII_Tnbc_node_sent(&flow->turn, len);
}

static void note_delivery(MPII_Tnbc_flow_t * flow, int i)
{
    uint64_t now = MPII_Tnbc_now_ns();
    node_sent(flow, flow->sched->entries[i].len);
    flow->window_lapsed = 0;
    flow->paced_out -= flow->sched->entries[i].len;
    flow->paced_bodies++;
    flow->paced_flight_ns += now - flow->paced_post_ns[i];
    flow->last_delivery_ns = now;
    flow->paced_progress_ns = now;
}

int MPII_Tnbc_flow_sync_send(const MPII_Tnbc_flow_t * flow, int i)
{
    const MPIR_Tnbc_entry_t *e = &flow->sched->entries[i];
    return flow->pace && e->kind == MPIR_TNBC_SEND && e->space == MPIR_TNBC_SPACE_WORK &&
        e->tag == 1 && flow->paced_body[e->peer] >= 0;
}

void MPII_Tnbc_flow_done(MPII_Tnbc_flow_t * flow, int i)
{
    const MPIR_Tnbc_entry_t *e = &flow->sched->entries[i];
    if (windowed(flow, e))
        flow->bodies_out[e->peer]--;
    if (MPII_Tnbc_flow_sync_send(flow, i))
        note_delivery(flow, flow->paced_body[e->peer]);
    if (is_remote(flow, i) && !flow->pace)
        node_sent(flow, e->len);        /* a paced body counts once delivered (note_delivery) */
}

int MPII_Tnbc_flow_held(const MPII_Tnbc_flow_t * flow)
{
    return flow->held;
}
