/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Statistics of the T-NBC family: per collective, what was declined (and why) and how handled
 * calls completed; sub-messages, bytes, time inside the calls; faults, stall time and release
 * latency from the page guards; the helper thread's CPU time, rounds and sleeps. Printed at
 * MPI_Finalize with MPIR_CVAR_TNBC_STATS (job-wide sums from rank 0, per process with 2), and
 * the per-process totals are MPI_T performance variables (category TNBC) for tools. */

#include "mpiimpl.h"
#include "reorder_merge.h"
#include "tnbc_message.h"
#include "tnbc_stats.h"
#include "mpir_pageguard.h"

#include <inttypes.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_STATS
      category    : TNBC
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        T-NBC statistics at MPI_Finalize. 0: none. 1: rank 0 prints the job-wide table (per
        collective: handled early, waited in the call with the reason, declined with the
        reason; sub-messages, bytes, faults, stall time in the fault handler, time inside the
        calls, helper CPU time). 2: every process also prints its own table.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* Everything is a uint64_t counter so one reduction sums the job. Updated under the global
 * lock, but for the helper's counters (relaxed atomics: the helper reports without the lock;
 * read when it has stopped, or racily by the MPI_T variables). */
enum {
    MPII_ST_SUBS, MPII_ST_BYTES, MPII_ST_IN_CALL_NS, MPII_ST_COLL_COUNT
};

typedef struct {
    uint64_t decisions[MPIR_TNBC_COLL_COUNT][MPIR_TNBC_DECISION_COUNT];
    uint64_t outcomes[MPIR_TNBC_COLL_COUNT][MPIR_TNBC_OUTCOME_COUNT];
    uint64_t coll[MPIR_TNBC_COLL_COUNT][MPII_ST_COLL_COUNT];
    uint64_t ops_done, lifetime_ns, late_errors, settles, settle_ns;
    uint64_t helper_cpu_ns[MPII_TNBC_HELPER_CPU_COUNT], helper_system_ns;
    uint64_t helper_rounds, helper_sleeps, helper_sleep_ns, helper_timeouts, helper_rescues;
    uint64_t helpers, helpers_short_slice;
    uint64_t helper_lock_ns, helper_lock_long, helper_deferred, helper_deferred_ns;
    uint64_t app_sleeps, app_sleep_ns;
    uint64_t node_turns, node_holds, node_hold_ns, node_gave_up;
    uint64_t paced_bodies, paced_flight_ns, paced_gaps, paced_gap_ns;
    uint64_t rm_exchanges, rm_stock;    /* copied from reorder_merge.h's counters for the table */
    uint64_t planned_sends;
    uint64_t nb_started, nb_early, nb_packed;
    uint64_t bcast[MPII_TNBC_BCAST_COUNT];
    uint64_t faults, stale_faults, stall_ns, mprotect_calls, guard_refusals, guard_prot,
        guard_window;
    uint64_t pages_dropped;
    uint64_t staging_reused, pages_moved;
    uint64_t release_hist[MPIR_PAGEGUARD_LATENCY_BUCKETS];
    uint64_t hooked_objects, hooked_slots, hooked_foreign, hook_calls_from_self;
} MPII_Tnbc_counters_t;

static MPII_Tnbc_counters_t st;
/* a time, not a counter: kept out of the job-wide sum */
static uint64_t helper_made_ns;

/* Sums over all collectives: the header line of the table and the MPI_T variables. */
typedef struct {
    uint64_t early, waited, declined, bytes, in_call_ns;
} MPII_Tnbc_totals_t;

static MPII_Tnbc_totals_t totals_of(const MPII_Tnbc_counters_t * s)
{
    MPII_Tnbc_totals_t t = { 0 };
    for (int c = 0; c < MPIR_TNBC_COLL_COUNT; c++) {
        for (int o = 0; o < MPIR_TNBC_OUTCOME_COUNT; o++)
            *(o == MPIR_TNBC_EARLY ? &t.early : &t.waited) += s->outcomes[c][o];
        for (int d = 1; d < MPIR_TNBC_DECISION_COUNT; d++)
            t.declined += s->decisions[c][d];
        t.bytes += s->coll[c][MPII_ST_BYTES];
        t.in_call_ns += s->coll[c][MPII_ST_IN_CALL_NS];
    }
    return t;
}

void MPII_Tnbc_stats_count(MPIR_Tnbc_coll_t coll, MPIR_Tnbc_decision_t decision)
{
    st.decisions[coll][decision]++;
}

void MPII_Tnbc_stats_outcome(MPIR_Tnbc_coll_t coll, MPIR_Tnbc_outcome_t outcome, int nsub,
                             size_t bytes, uint64_t in_call_ns)
{
    st.outcomes[coll][outcome]++;
    st.coll[coll][MPII_ST_SUBS] += nsub;
    st.coll[coll][MPII_ST_BYTES] += bytes;
    st.coll[coll][MPII_ST_IN_CALL_NS] += in_call_ns;
}

void MPII_Tnbc_stats_op_done(uint64_t lifetime_ns, int error)
{
    st.ops_done++;
    st.lifetime_ns += lifetime_ns;
    st.late_errors += (error != 0);
}

uint64_t MPII_Tnbc_stats_blocked_ns(void)
{
    return st.settle_ns + MPIR_Pageguard_stall_ns();
}

void MPII_Tnbc_stats_settle(uint64_t wait_ns)
{
    st.settles++;
    st.settle_ns += wait_ns;
}

#define MPII_ADD(counter_, value_) __atomic_add_fetch(&(counter_), (value_), __ATOMIC_RELAXED)

void MPII_Tnbc_stats_helper_cpu(MPII_Tnbc_helper_cpu_t kind, uint64_t cpu_ns)
{
    MPII_ADD(st.helper_cpu_ns[kind], cpu_ns);
}

void MPII_Tnbc_stats_helper_round(int rescued)
{
    MPII_ADD(st.helper_rounds, 1);
    MPII_ADD(st.helper_rescues, rescued != 0);
}

void MPII_Tnbc_stats_helper_sleep(uint64_t ns, int timed_out)
{
    MPII_ADD(st.helper_sleeps, 1);
    MPII_ADD(st.helper_sleep_ns, ns);
    MPII_ADD(st.helper_timeouts, timed_out != 0);
}

void MPII_Tnbc_stats_app_sleep(uint64_t ns)
{
    MPII_ADD(st.app_sleeps, 1);
    MPII_ADD(st.app_sleep_ns, ns);
}

void MPII_Tnbc_stats_nonblocking(int early, int unpacked)
{
    MPII_ADD(st.nb_started, 1);
    MPII_ADD(st.nb_early, early != 0);
    MPII_ADD(st.nb_packed, unpacked != 0);
}

void MPII_Tnbc_stats_planned_sends(void)
{
    MPII_ADD(st.planned_sends, 1);
}

void MPII_Tnbc_stats_bcast(MPII_Tnbc_bcast_event_t event)
{
    MPII_ADD(st.bcast[event], 1);
}

void MPII_Tnbc_stats_node_turn(uint64_t held_ns, int held, int gave_up)
{
    MPII_ADD(st.node_turns, 1);
    MPII_ADD(st.node_holds, held != 0);
    MPII_ADD(st.node_hold_ns, held_ns);
    MPII_ADD(st.node_gave_up, gave_up != 0);
}

void MPII_Tnbc_stats_paced(uint64_t bodies, uint64_t flight_ns, uint64_t gaps, uint64_t gap_ns)
{
    MPII_ADD(st.paced_bodies, bodies);
    MPII_ADD(st.paced_flight_ns, flight_ns);
    MPII_ADD(st.paced_gaps, gaps);
    MPII_ADD(st.paced_gap_ns, gap_ns);
}

void MPII_Tnbc_stats_helper_slice(int short_slice)
{
    MPII_ADD(st.helpers, 1);
    MPII_ADD(st.helpers_short_slice, short_slice != 0);
}

/* waits for the lock counted apart: longer than an application thread's MPI call usually
 * holds it (a descheduled or throttled holder, or a long call) */
#define MPII_TNBC_LONG_LOCK_WAIT_NS 1000000

void MPII_Tnbc_stats_helper_lock(uint64_t wait_ns)
{
    MPII_ADD(st.helper_lock_ns, wait_ns);
    MPII_ADD(st.helper_lock_long, wait_ns >= MPII_TNBC_LONG_LOCK_WAIT_NS);
}

void MPII_Tnbc_stats_helper_deferred(uint64_t ns)
{
    MPII_ADD(st.helper_deferred, 1);
    MPII_ADD(st.helper_deferred_ns, ns);
}

void MPII_Tnbc_stats_helper_made(uint64_t time_ns)
{
    __atomic_store_n(&helper_made_ns, time_ns, __ATOMIC_RELAXED);
}

void MPII_Tnbc_stats_helper_system(uint64_t system_ns)
{
    __atomic_store_n(&st.helper_system_ns, system_ns, __ATOMIC_RELAXED);
}

/* Median and largest release latency (ns) of a histogram; 0 when it is empty. */
static double release_median_ns(const uint64_t * hist)
{
    uint64_t n = 0, seen = 0;
    for (int b = 0; b < MPIR_PAGEGUARD_LATENCY_BUCKETS; b++)
        n += hist[b];
    for (int b = 0; b < MPIR_PAGEGUARD_LATENCY_BUCKETS && n; b++) {
        seen += hist[b];
        if (2 * seen >= n)
            return MPIR_Pageguard_latency_of_bucket(b);
    }
    return 0;
}

static void print_table(const char *who, const MPII_Tnbc_counters_t * s,
                        uint64_t release_max)
{
    MPII_Tnbc_totals_t t = totals_of(s);
    MPII_Tnbc_report("[tnbc %s] collectives: returned early %" PRIu64 ", waited in call %" PRIu64
                     ", declined %" PRIu64, who, t.early, t.waited, t.declined);
    for (int c = 0; c < MPIR_TNBC_COLL_COUNT; c++) {
        const uint64_t *v = s->coll[c];
        for (int o = 0; o < MPIR_TNBC_OUTCOME_COUNT; o++)
            if (s->outcomes[c][o])
                MPII_Tnbc_report("[tnbc %s]   %-20s %8" PRIu64 "  %s", who, MPIR_Tnbc_coll_name(c),
                                 s->outcomes[c][o], MPIR_Tnbc_outcome_name(o));
        for (int d = 1; d < MPIR_TNBC_DECISION_COUNT; d++)
            if (s->decisions[c][d])
                MPII_Tnbc_report("[tnbc %s]   %-20s %8" PRIu64 "  declined: %s", who,
                                 MPIR_Tnbc_coll_name(c), s->decisions[c][d],
                                 MPIR_Tnbc_decision_name(d));
        if (s->decisions[c][MPIR_TNBC_ACCEPT])
            MPII_Tnbc_report("[tnbc %s]   %-20s sub-messages %" PRIu64 ", %.1f MiB, %.3f ms inside "
                             "the calls", who, MPIR_Tnbc_coll_name(c), v[MPII_ST_SUBS],
                             v[MPII_ST_BYTES] / 1048576.0, v[MPII_ST_IN_CALL_NS] / 1e6);
    }
    if (s->hooked_objects)
        MPII_Tnbc_report("[tnbc %s] libc hooks: %" PRIu64 " GOT slots redirected in %" PRIu64
                         " objects, %" PRIu64 " left to another interposer; calls from libmpi "
                         "itself %" PRIu64, who, s->hooked_slots, s->hooked_objects,
                         s->hooked_foreign, s->hook_calls_from_self);
    if (s->settles)
        MPII_Tnbc_report("[tnbc %s] MPI calls that first waited for T-NBC data in their buffers: %"
                         PRIu64 ", %.3f ms", who, s->settles, s->settle_ns / 1e6);
    if (s->app_sleeps)
        MPII_Tnbc_report("[tnbc %s] waits inside MPI calls slept on the network %" PRIu64
                         " times, %.3f ms", who, s->app_sleeps, s->app_sleep_ns / 1e6);
    if (s->nb_started)
        MPII_Tnbc_report("[tnbc %s] nonblocking and persistent calls (MPI_I<coll>, MPI_Start) "
                         "T-NBC took: %" PRIu64 ", of which %" PRIu64 " could complete their "
                         "request before their data was all in (counted above as returned "
                         "early), %" PRIu64 " unpacked before it completed", who, s->nb_started,
                         s->nb_early, s->nb_packed);
    if (s->rm_exchanges || s->rm_stock || s->planned_sends)
        MPII_Tnbc_report("[tnbc %s] reorder + merge: %" PRIu64 " exchanges, %" PRIu64 " handed to "
                         "stock (in place, repeated neighbours), %" PRIu64 " T-NBC schedules sent "
                         "in the plan's order", who, s->rm_exchanges, s->rm_stock,
                         s->planned_sends);
    if (s->bcast[MPII_TNBC_BCAST_OWN_ORDER] || s->bcast[MPII_TNBC_BCAST_CHILD_ORDER])
        MPII_Tnbc_report("[tnbc %s] Bcast segments by access order: %" PRIu64 " calls received in "
                         "their own order, %" PRIu64 " sent to a child in its order", who,
                         s->bcast[MPII_TNBC_BCAST_OWN_ORDER],
                         s->bcast[MPII_TNBC_BCAST_CHILD_ORDER]);
    if (s->node_turns)
        MPII_Tnbc_report("[tnbc %s] node arbitration: %" PRIu64 " operations took turns, %" PRIu64
                         " held their bodies for a more urgent node peer (%.3f ms), %" PRIu64
                         " stopped holding for a peer that made no progress", who, s->node_turns,
                         s->node_holds, s->node_hold_ns / 1e6, s->node_gave_up);
    if (s->paced_bodies)
        MPII_Tnbc_report("[tnbc %s] paced bodies: %" PRIu64 ", %.3f ms from post to delivery on "
                         "average; %" PRIu64 " waited for a delivery, posted %.3f ms after it on "
                         "average", who, s->paced_bodies,
                         s->paced_flight_ns / 1e6 / s->paced_bodies, s->paced_gaps,
                         s->paced_gaps ? s->paced_gap_ns / 1e6 / s->paced_gaps : 0.0);
    if (s->ops_done || s->faults || s->helper_rounds) {
        double life_ms = s->lifetime_ns / 1e6, cpu_ms[MPII_TNBC_HELPER_CPU_COUNT], total = 0;
        for (int k = 0; k < MPII_TNBC_HELPER_CPU_COUNT; k++)
            total += (cpu_ms[k] = s->helper_cpu_ns[k] / 1e6);
#define MPII_SHARE(ms) (life_ms > 0 ? 100.0 * (ms) / life_ms : 0.0)
        MPII_Tnbc_report("[tnbc %s] background: %" PRIu64 " operations, %.3f ms in flight, %" PRIu64
                         " late errors; faults %" PRIu64 " (and %" PRIu64 " repeated by the kernel "
                         "on released pages), stall %.3f ms; guard refusals %" PRIu64 " (no whole "
                         "page included; copied or waited for: %" PRIu64 " buffers not private "
                         "read-write memory, %" PRIu64 " in RMA windows); pages freed before their "
                         "data came %" PRIu64 "; staging memory reused %" PRIu64 " times; pages "
                         "landed by moving %" PRIu64, who, s->ops_done, life_ms, s->late_errors,
                         s->faults, s->stale_faults, s->stall_ns / 1e6, s->guard_refusals,
                         s->guard_prot, s->guard_window, s->pages_dropped, s->staging_reused,
                         s->pages_moved);
        MPII_Tnbc_report("[tnbc %s] helper CPU %.3f ms = %.1f%% of in-flight time (%.1f%% in the "
                         "kernel); while the application ran: %.1f%% in rounds that completed "
                         "nothing, %.1f%% in rounds that completed sub-messages; while it waited "
                         "for T-NBC: %.1f%%", who, total, MPII_SHARE(total),
                         MPII_SHARE(s->helper_system_ns / 1e6),
                         MPII_SHARE(cpu_ms[MPII_TNBC_HELPER_CPU_IDLE]),
                         MPII_SHARE(cpu_ms[MPII_TNBC_HELPER_CPU_DATA]),
                         MPII_SHARE(cpu_ms[MPII_TNBC_HELPER_CPU_APP_WAITED]));
        if (MPIR_CVAR_TNBC_HELPER_SLICE_US > 0)
            MPII_Tnbc_report("[tnbc %s] helper threads %" PRIu64 ", %" PRIu64 " on a short "
                             "scheduler slice (MPIR_CVAR_TNBC_HELPER_SLICE_US)", who, s->helpers,
                             s->helpers_short_slice);
        MPII_Tnbc_report("[tnbc %s] helper rounds %" PRIu64 ", sleeps %" PRIu64 " (%.3f ms, %"
                         PRIu64 " ended by the time limit, %" PRIu64 " of them found news); "
                         "release latency median %.1f us, max %.1f us", who, s->helper_rounds,
                         s->helper_sleeps, s->helper_sleep_ns / 1e6, s->helper_timeouts,
                         s->helper_rescues, release_median_ns(s->release_hist) / 1e3,
                         release_max / 1e3);
        MPII_Tnbc_report("[tnbc %s] helper waited %.3f ms for the global lock (%" PRIu64
                         " waits of %.0f ms or more); slept %.3f ms in %" PRIu64 " sleeps while "
                         "the application drove progress", who, s->helper_lock_ns / 1e6,
                         s->helper_lock_long, MPII_TNBC_LONG_LOCK_WAIT_NS / 1e6,
                         s->helper_deferred_ns / 1e6, s->helper_deferred);
#undef MPII_SHARE
    }
}

int MPII_Tnbc_stats_reduce_and_print(int level)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    MPIR_Pageguard_stats_t pg;
    static MPII_Tnbc_counters_t sum;
    uint64_t release_max = 0;

    if (level <= 0)
        goto fn_exit;

    MPIR_Rm_stats_t rm;
    MPIR_Rm_get_stats(&rm);
    st.rm_exchanges = rm.exchanges;
    st.rm_stock = rm.stock;
    MPIR_Pageguard_get_stats(&pg);
    st.faults = pg.faults;
    st.stale_faults = pg.stale_faults;
    st.stall_ns = pg.stall_ns;
    st.mprotect_calls = pg.mprotect_calls;
    st.guard_refusals = pg.refused_budget + pg.refused_nomem + pg.refused_landing +
        pg.refused_prot + pg.refused_exposed + pg.refused_other;
    st.guard_prot = pg.refused_prot;
    st.guard_window = pg.refused_exposed;
    st.pages_dropped = pg.forgotten;
    st.staging_reused = pg.staging_reused;
    st.pages_moved = pg.pages_moved;
    memcpy(st.release_hist, pg.release_hist, sizeof(st.release_hist));
    MPIR_Pageguard_hooks_stats_t hooks;
    MPIR_Pageguard_hooks_get_stats(&hooks);
    st.hooked_objects = hooks.objects;
    st.hooked_slots = hooks.slots;
    st.hooked_foreign = hooks.foreign;
    st.hook_calls_from_self = hooks.calls_from_self;

    if (level >= 2) {
        char who[16];
        snprintf(who, sizeof(who), "%d", MPIR_Process.rank);
        print_table(who, &st, pg.release_max_ns);
    }
    /* Counted before this reduction, which T-NBC declines as an internal call. */
    MPIR_Assert(sizeof(st) % sizeof(uint64_t) == 0);
    mpi_errno = MPIR_Reduce(&st, &sum, sizeof(st) / sizeof(uint64_t), MPI_UINT64_T, MPI_SUM, 0,
                            MPIR_Process.comm_world, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIR_Reduce(&pg.release_max_ns, &release_max, 1, MPI_UINT64_T, MPI_MAX, 0,
                            MPIR_Process.comm_world, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    if (MPIR_Process.rank == 0)
        print_table("job", &sum, release_max);
    fflush(stderr);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ---- MPI_T performance variables ---- */

/* addr carries the offset of the field in MPII_Tnbc_totals_t */
static void get_total(void *addr, void *obj, int count, void *buf)
{
    MPII_Tnbc_totals_t t = totals_of(&st);
    *(unsigned long long *) buf = *(uint64_t *) ((char *) &t + (uintptr_t) addr);
}

#define MPII_TOTAL(field_) ((void *) offsetof(MPII_Tnbc_totals_t, field_))

/* addr carries the offset of a helper counter in MPII_Tnbc_counters_t */
static void get_helper(void *addr, void *obj, int count, void *buf)
{
    *(unsigned long long *) buf = __atomic_load_n((uint64_t *) ((char *) &st +
                                                               (uintptr_t) addr),
                                                  __ATOMIC_RELAXED);
}

#define MPII_COUNTER(field_) ((void *) offsetof(MPII_Tnbc_counters_t, field_))

static void get_helper_cpu(void *addr, void *obj, int count, void *buf)
{
    uint64_t sum = 0;
    for (int k = 0; k < MPII_TNBC_HELPER_CPU_COUNT; k++)
        sum += __atomic_load_n(&st.helper_cpu_ns[k], __ATOMIC_RELAXED);
    *(unsigned long long *) buf = sum;
}

static void get_made(void *addr, void *obj, int count, void *buf)
{
    *(unsigned long long *) buf = __atomic_load_n(&helper_made_ns, __ATOMIC_RELAXED);
}

/* Page-guard figures; addr carries which one */
enum { MPII_PG_FAULTS = 1, MPII_PG_STALL_NS, MPII_PG_RELEASE_MEDIAN_NS, MPII_PG_RELEASE_MAX_NS };

static void get_pageguard(void *addr, void *obj, int count, void *buf)
{
    MPIR_Pageguard_stats_t pg;
    unsigned long long v = 0;
    MPIR_Pageguard_get_stats(&pg);
    switch ((uintptr_t) addr) {
        case MPII_PG_FAULTS:
            v = pg.faults;
            break;
        case MPII_PG_STALL_NS:
            v = pg.stall_ns;
            break;
        case MPII_PG_RELEASE_MEDIAN_NS:
            v = (unsigned long long) release_median_ns(pg.release_hist);
            break;
        case MPII_PG_RELEASE_MAX_NS:
            v = pg.release_max_ns;
            break;
    }
    *(unsigned long long *) buf = v;
}

#define MPII_PG(which_) ((void *) (uintptr_t) (which_))

static void pvar(const char *name, void *addr, MPIR_T_pvar_get_value_cb * get, const char *desc)
{
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, name, addr, 1,
                              MPI_T_ENUM_NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, get, NULL,
                              "TNBC", desc);
}

void MPII_Tnbc_pvars_register(void)
{
    pvar("tnbc_returned_early", MPII_TOTAL(early), get_total,
         "blocking collectives that returned before their data had moved");
    pvar("tnbc_waited_in_call", MPII_TOTAL(waited), get_total,
         "collectives T-NBC ran but waited for inside the call");
    pvar("tnbc_declined", MPII_TOTAL(declined), get_total,
         "collectives T-NBC declined (the stock algorithm ran)");
    pvar("tnbc_bytes", MPII_TOTAL(bytes), get_total,
         "bytes sent and received by T-NBC collectives");
    pvar("tnbc_in_call_ns", MPII_TOTAL(in_call_ns), get_total,
         "nanoseconds spent inside T-NBC collective calls");
    pvar("tnbc_faults", MPII_PG(MPII_PG_FAULTS), get_pageguard, "faults on pages guarded by T-NBC");
    pvar("tnbc_stall_ns", MPII_PG(MPII_PG_STALL_NS), get_pageguard,
         "nanoseconds threads waited in the page-guard fault handler");
    pvar("tnbc_node_turns", MPII_COUNTER(node_turns), get_helper,
         "operations whose remote bodies took turns with the node's other processes");
    pvar("tnbc_node_holds", MPII_COUNTER(node_holds), get_helper,
         "operations that held their bodies back for a more urgent node peer");
    pvar("tnbc_nonblocking", MPII_COUNTER(nb_started), get_helper,
         "nonblocking and persistent collectives T-NBC took (their outcomes count with the "
         "blocking ones)");
    pvar("tnbc_rm_planned_sends", MPII_COUNTER(planned_sends), get_helper,
         "T-NBC Alltoall(v) schedules that sent in the reorder plan's order");
    pvar("tnbc_bcast_own_order", MPII_COUNTER(bcast[MPII_TNBC_BCAST_OWN_ORDER]), get_helper,
         "T-NBC Bcasts that posted their receives in this process's access order");
    pvar("tnbc_bcast_child_order", MPII_COUNTER(bcast[MPII_TNBC_BCAST_CHILD_ORDER]), get_helper,
         "T-NBC Bcasts that sent to a child in the order that child reported");
    pvar("tnbc_helper_rounds", MPII_COUNTER(helper_rounds), get_helper,
         "progress rounds of the T-NBC helper thread");
    pvar("tnbc_helper_wakeups", MPII_COUNTER(helper_sleeps), get_helper,
         "times the T-NBC helper thread slept and woke up");
    pvar("tnbc_helper_blocked_ns", MPII_COUNTER(helper_sleep_ns), get_helper,
         "nanoseconds the T-NBC helper thread slept");
    pvar("tnbc_helper_cpu_ns", st.helper_cpu_ns, get_helper_cpu,
         "CPU time of the T-NBC helper thread, in nanoseconds");
    pvar("tnbc_helper_progress_ns", &helper_made_ns, get_made,
         "CLOCK_MONOTONIC time at which the helper's last round that completed or posted "
         "something ended (0: never)");
    pvar("tnbc_helper_rescues", MPII_COUNTER(helper_rescues), get_helper,
         "helper sleeps that ended by their time limit and then found news (lost wake-ups)");
    pvar("tnbc_release_median_ns", MPII_PG(MPII_PG_RELEASE_MEDIAN_NS), get_pageguard,
         "median release latency: data signalled (or the fault, if later) to the thread running");
    pvar("tnbc_release_max_ns", MPII_PG(MPII_PG_RELEASE_MAX_NS), get_pageguard,
         "largest release latency");
}
