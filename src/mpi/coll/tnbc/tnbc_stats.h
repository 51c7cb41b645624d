/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Statistics (tnbc_stats.c): what every part of the family counts, printed at finalize
 * (MPIR_CVAR_TNBC_STATS) and read through the pvars. */

#ifndef TNBC_STATS_H_INCLUDED
#define TNBC_STATS_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#include "tnbc_policy.h"

void MPII_Tnbc_stats_count(MPIR_Tnbc_coll_t coll, MPIR_Tnbc_decision_t decision);
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
void MPII_Tnbc_stats_helper_slice(int short_slice);     /* the helper got a short slice */
/* the helper waited wait_ns for the global lock (an application thread held it) */
void MPII_Tnbc_stats_helper_lock(uint64_t wait_ns);
/* the helper slept ns while application threads drove progress in an MPI call */
void MPII_Tnbc_stats_helper_deferred(uint64_t ns);
/* a helper round that ended at time_ns (CLOCK_MONOTONIC) made progress: the testbed's
 * calibration compares it with a sender's clock (maint/bench-calibrate) */
void MPII_Tnbc_stats_helper_made(uint64_t time_ns);
void MPII_Tnbc_stats_app_sleep(uint64_t ns);    /* an MPI call slept while it waited for T-NBC */
/* at MPI_Finalize: level is MPIR_CVAR_TNBC_STATS as MPI_Init found it (0: nothing) */
int MPII_Tnbc_stats_reduce_and_print(int level);
/* an operation's turn ended: how long it held its bodies back, and whether it gave up */
void MPII_Tnbc_stats_node_turn(uint64_t held_ns, int held, int gave_up);
/* paced remote bodies of one operation: their time from post to delivery, and for those
 * posted when a delivery reopened the window, the time from that delivery */
void MPII_Tnbc_stats_paced(uint64_t bodies, uint64_t flight_ns, uint64_t gaps, uint64_t gap_ns);
/* an Alltoall(v) schedule sent in the reorder plan's order (reorder_merge.h: MPIR_Rm_send_order) */
void MPII_Tnbc_stats_planned_sends(void);
/* A nonblocking call (or a persistent call's start) T-NBC took: its request completes early
 * (before its data is all in), or after the unpack of a temporary receive space. */
void MPII_Tnbc_stats_nonblocking(int early, int unpacked);
typedef enum {
    MPII_TNBC_BCAST_OWN_ORDER,  /* a Bcast posted its receives in its access order */
    MPII_TNBC_BCAST_CHILD_ORDER,        /* and sent to a child in the order that child reported */
    MPII_TNBC_BCAST_COUNT
} MPII_Tnbc_bcast_event_t;
void MPII_Tnbc_stats_bcast(MPII_Tnbc_bcast_event_t event);
void MPII_Tnbc_pvars_register(void);

#endif /* TNBC_STATS_H_INCLUDED */
