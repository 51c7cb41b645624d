/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Internal interface of the T-NBC family (transparent non-blocking collectives). */

#ifndef TNBC_IMPL_H_INCLUDED
#define TNBC_IMPL_H_INCLUDED

#include "tnbc_policy.h"
#include "tnbc_sched.h"
#include "tnbc_priority.h"
#include "mpir_pageguard.h"

/* Set by MPIR_Tnbc_init from the CVARs; read by every entry point. */
extern MPIR_Tnbc_policy_t MPII_Tnbc_policy;

/* Decide on one call from the facts every process shares, and count the decision. */
MPIR_Tnbc_decision_t MPII_Tnbc_decide(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr);

/* Decide on a call of a collective without a builder: always declined.
 * *handled is set to 1 only when the call now belongs to T-NBC. */
int MPII_Tnbc_offer(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr, int *handled);

/* Peers a rank may exchange with: enough to bound a buffer on either kind of communicator. */
#define MPII_Tnbc_peers(comm_ptr_) MPL_MAX((comm_ptr_)->local_size, (comm_ptr_)->remote_size)

/* Settle the buffers of a call before anything else reads or writes them (entry points). */
#define MPII_TNBC_SETTLE(buf_, count_, datatype_)                               \
    do {                                                                        \
        if (MPIR_TNBC_OWNS_BUFFERS()) {                                         \
            mpi_errno = MPIR_Tnbc_settle_buf(buf_, count_, datatype_);          \
            MPIR_ERR_CHECK(mpi_errno);                                          \
        }                                                                       \
    } while (0)
#define MPII_TNBC_SETTLE_ALL()                                                  \
    do {                                                                        \
        if (MPIR_TNBC_OWNS_BUFFERS()) {                                         \
            mpi_errno = MPIR_Tnbc_settle_all();                                 \
            MPIR_ERR_CHECK(mpi_errno);                                          \
        }                                                                       \
    } while (0)


void MPII_Tnbc_stats_count(MPIR_Tnbc_coll_t coll, MPIR_Tnbc_decision_t decision);

/* ---- operations (tnbc_op.c): a schedule bound to buffers; knows nothing of the engine ---- */

/* Called when a completed operation is freed: learn from what its work space received. */
typedef void (*MPII_Tnbc_on_done_t) (MPIR_Tnbc_site_t * site, const MPIR_Tnbc_sched_t * sched,
                                      const char *work);

/* What an entry point hands to MPII_Tnbc_op_start. */
typedef struct {
    MPIR_Tnbc_coll_t coll;
    MPIR_Comm *comm;
    MPIR_Tnbc_sched_t sched;    /* finished; the operation takes it over */
    void *recv_user;            /* user address of receive offset 0 (contiguous layout) */
    const void *send_user;      /* user address of send offset 0 (contiguous layout) */
    void *send_packed;          /* or: an already packed send space (malloc'd, taken over) */
    int recv_packed;            /* receive into a temporary buffer (caller unpacks) */
    int small;                  /* this process's pieces are below the threshold */
    MPI_Datatype reduce_type;   /* REDUCE entries: builtin type and op */
    MPI_Op reduce_op;
    int trace;                  /* a trace run or a sample: complete in the call, then guard
                                 * the data for its first touches (tnbc_access.c) */
    int sample;                 /* the trace is a sample (online learning) */
    int no_helper;              /* no helper thread: complete in the call (launch sets it) */
    MPIR_Tnbc_site_t *site;     /* learn this site's access order from the faults (or NULL) */
    MPII_Tnbc_on_done_t on_done;        /* with site: learn from the work space too */
    const int *access_pos;      /* pairwise layout: position of source rank p's block in the
                                 * access order, here and (we assume) at every receiver, for
                                 * node arbitration (tnbc_node.c); NULL: unknown */
    MPIR_Tnbc_gain_t *gain;     /* the call site's record of what returning early cost, or
                                 * NULL (launch finds the site) */
    int wait;                   /* wait in the call: returning early does not pay here */
    int early_only;             /* access orders steer this call across processes, which pays
                                 * only when they all return early: no per-site choice */
    const int *send_urgency;    /* pairwise layout: where peer p reads our block (0 first, -1
                                 * unknown), for node arbitration; NULL: access_pos instead */
} MPII_Tnbc_start_t;

typedef struct MPII_Tnbc_op MPII_Tnbc_op_t;

int MPII_Tnbc_op_start(MPII_Tnbc_start_t * args, MPII_Tnbc_op_t ** op);
int MPII_Tnbc_op_poll(MPII_Tnbc_op_t * op, int *made_progress);
int MPII_Tnbc_op_is_done(const MPII_Tnbc_op_t * op);
int MPII_Tnbc_op_sync_done(const MPII_Tnbc_op_t * op);
int MPII_Tnbc_op_free(MPII_Tnbc_op_t * op);
/* The call that started op returns now (what it cost the caller is measured from here). */
void MPII_Tnbc_op_returned(MPII_Tnbc_op_t * op);

/* What the engine and the statistics know of an operation. */
typedef struct {
    MPIR_Tnbc_coll_t coll;
    MPIR_Comm *comm;
    MPIR_Tnbc_outcome_t outcome;
    int nsub;                   /* schedule entries */
    size_t bytes;               /* sent + received */
    uint64_t t_start_ns;
    int error;                  /* an MPI error seen so far */
} MPII_Tnbc_op_info_t;
void MPII_Tnbc_op_info(const MPII_Tnbc_op_t * op, MPII_Tnbc_op_info_t * info);
/* The link of the engine's list of operations in flight. */
MPII_Tnbc_op_t **MPII_Tnbc_op_link(MPII_Tnbc_op_t * op);
/* The schedule of an operation the caller got back from MPII_Tnbc_launch. */
const MPIR_Tnbc_sched_t *MPII_Tnbc_op_sched(const MPII_Tnbc_op_t * op);
/* The operation held bodies back in its last poll (node arbitration or its window). */
int MPII_Tnbc_op_held(const MPII_Tnbc_op_t * op);
/* The temporary receive space of a call that waited with recv_packed (the caller unpacks). */
void *MPII_Tnbc_op_packed_recv(const MPII_Tnbc_op_t * op);

static inline uint64_t MPII_Tnbc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A datatype whose count elements are one plain byte range starting at the buffer. */
static inline int MPII_Tnbc_is_flat(MPI_Datatype type)
{
    int contig;
    MPI_Aint true_lb, true_extent, extent, size;

    MPIR_Datatype_is_contig(type, &contig);
    if (!contig)
        return 0;
    MPIR_Type_get_true_extent_impl(type, &true_lb, &true_extent);
    MPIR_Datatype_get_extent_macro(type, extent);
    MPIR_Datatype_get_size_macro(type, size);
    return true_lb == 0 && extent == size;
}

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

/* ---- node arbitration (tnbc_node.c): the processes of a node take turns on its link ---- */

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
/* The node of rank in comm, or -1 when unknown (remote peers use the node's link). */
int MPII_Tnbc_node_of(MPIR_Comm * comm, int rank);
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

/* ---- engine (tnbc_engine.c): operations in flight, the helper thread, launch ---- */

/* Start an operation and return early when it may; otherwise wait for it here. On return,
 * *op is NULL, or (recv_packed or trace) the finished operation, which the caller unpacks or
 * traces and frees. */
int MPII_Tnbc_launch(MPII_Tnbc_start_t * args, MPII_Tnbc_op_t ** op);
/* Drive progress from the calling thread (which holds the global lock) until cond(arg). */
int MPII_Tnbc_progress_until(int (*cond) (const void *), const void *arg);
/* How often the calling thread holds MPICH's global lock (0: not at all). Signal-safe. */
int MPII_Tnbc_holds_global_lock(void);
/* 1 while an operation of the communicator is in flight. */
int MPII_Tnbc_engine_uses_comm(const MPIR_Comm * comm);
/* Free the operations the helper finished (an application thread, under the global lock). */
void MPII_Tnbc_engine_reap(void);

/* Errors after the early return (tnbc_late_error.c): raise when an operation retires with one;
 * take returns the one kept for comm (MPI_SUCCESS if none); drop reports and forgets those of
 * comm (NULL: all). Under the global lock. */
void MPII_Tnbc_late_error_raise(MPIR_Comm * comm, int coll, int error);
int MPII_Tnbc_late_error_take(MPIR_Comm * comm);
void MPII_Tnbc_late_error_drop(MPIR_Comm * comm);
int MPII_Tnbc_engine_finalize(void);

/* ---- access orders (tnbc_access.c): trace runs, profiles, call sites ---- */

int MPII_Tnbc_access_init(void);
int MPII_Tnbc_access_finalize(void);
/* The site of the application's current call (NULL: no memory); counts the call. */
MPIR_Tnbc_site_t *MPII_Tnbc_access_site(MPIR_Tnbc_coll_t coll, int comm_size, int nblocks,
                                        uint64_t recv_bytes);
/* The positions of the site's blocks to post by, or NULL (unknown, priorities off, tracing). */
const int *MPII_Tnbc_access_order(const MPIR_Tnbc_site_t * site);
/* The order another process reported for the site (a Bcast child), or NULL (none, priorities
 * off, tracing). */
const int *MPII_Tnbc_access_peer_order(const MPIR_Tnbc_site_t * site, int peer);
int MPII_Tnbc_access_tracing(void);
/* Is this call of the site a sample (recorded like a trace run)? order_used: the order steers
 * this collective. */
int MPII_Tnbc_access_sampling(MPIR_Tnbc_site_t * site, int order_used);
/* Trace run: guard the completed receive buffer of a call and keep it for its first touches
 * (the schedule's blocks: MPIR_Tnbc_sched_recv_sub_blocks). */
void MPII_Tnbc_access_trace(MPIR_Tnbc_site_t * site, void *recv_user,
                            const MPIR_Tnbc_sched_t * sched);
/* Record and release the trace regions kept so far (before a new collective guards). */
void MPII_Tnbc_access_harvest(void);
/* The same for those that overlap [addr, addr + len) (an MPI routine is about to use it). */
void MPII_Tnbc_access_release(const void *addr, size_t len);

/* ---- settle (tnbc_settle.c): MPI calls wait here for pending pieces of their buffers ---- */

/* settle the span of a v-layout (no-op for MPI_IN_PLACE; tnbc_alltoall.c) */
int MPII_Tnbc_settle_v(const void *buf, const MPI_Aint counts[], const MPI_Aint displs[],
                       MPI_Datatype type, int n);

/* ---- statistics (tnbc_stats.c) ---- */
void MPII_Tnbc_stats_outcome(MPIR_Tnbc_coll_t coll, MPIR_Tnbc_outcome_t outcome,
                             int nsub, size_t bytes, uint64_t in_call_ns);
void MPII_Tnbc_stats_op_done(uint64_t lifetime_ns, int error);
void MPII_Tnbc_stats_settle(uint64_t wait_ns);  /* an MPI call waited for T-NBC data */
/* Time application threads have been blocked on T-NBC data after calls returned early (page
 * faults and settling MPI calls), since MPI_Init; read under the global lock. */
uint64_t MPII_Tnbc_stats_blocked_ns(void);
/* The helper's CPU time by what its rounds did (tnbc_engine.c) */
typedef enum {
    MPII_TNBC_HELPER_CPU_IDLE,  /* completed nothing while the application ran */
    MPII_TNBC_HELPER_CPU_DATA,  /* completed sub-messages while the application ran */
    MPII_TNBC_HELPER_CPU_APP_WAITED,    /* an application thread waited for T-NBC meanwhile */
    MPII_TNBC_HELPER_CPU_COUNT
} MPII_Tnbc_helper_cpu_t;
/* The helper thread reports these without the global lock (relaxed atomics). */
void MPII_Tnbc_stats_helper_cpu(MPII_Tnbc_helper_cpu_t kind, uint64_t cpu_ns);
void MPII_Tnbc_stats_helper_round(int rescued);  /* rescued: news found after a timed-out sleep */
void MPII_Tnbc_stats_helper_sleep(uint64_t ns, int timed_out);
void MPII_Tnbc_stats_helper_system(uint64_t system_ns);
void MPII_Tnbc_stats_app_sleep(uint64_t ns);    /* an MPI call slept while it waited for T-NBC */
int MPII_Tnbc_stats_reduce_and_print(void);
/* an operation's turn ended: how long it held its bodies back, and whether it gave up */
void MPII_Tnbc_stats_node_turn(uint64_t held_ns, int held, int gave_up);
/* paced remote bodies of one operation: their time from post to delivery, and for those
 * posted when a delivery reopened the window, the time from that delivery */
void MPII_Tnbc_stats_paced(uint64_t bodies, uint64_t flight_ns, uint64_t gaps, uint64_t gap_ns);
/* what the reorder + merge algorithms did with a call (tnbc_rm_*.c) */
typedef enum {
    MPII_TNBC_RM_EXCHANGE,      /* ran the exchange */
    MPII_TNBC_RM_STOCK,         /* handed it to stock (in place, a repeated neighbour) */
    MPII_TNBC_RM_PLANNED_SENDS, /* a T-NBC schedule sent in the plan's order */
    MPII_TNBC_RM_COUNT
} MPII_Tnbc_rm_event_t;
void MPII_Tnbc_stats_rm(MPII_Tnbc_rm_event_t event);
typedef enum {
    MPII_TNBC_BCAST_OWN_ORDER,  /* a Bcast posted its receives in its access order */
    MPII_TNBC_BCAST_CHILD_ORDER,        /* and sent to a child in the order that child reported */
    MPII_TNBC_BCAST_COUNT
} MPII_Tnbc_bcast_event_t;
void MPII_Tnbc_stats_bcast(MPII_Tnbc_bcast_event_t event);
void MPII_Tnbc_pvars_register(void);

#endif /* TNBC_IMPL_H_INCLUDED */
