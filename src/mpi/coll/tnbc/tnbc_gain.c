/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Per call site: return early, or wait in the call (see tnbc_gain.h). */

#include "tnbc_gain.h"

/* Half weight to the newest early call, so that a site follows a change of the application's
 * phase within a few calls. A try at a waiting site, or the first call since the schedule
 * changed: the newest alone. */
static double smooth(const MPIR_Tnbc_gain_t * g, double seen)
{
    return (g->n_early == 0 || g->waiting) ? seen : g->seen / 2 + seen / 2;
}

/* Calls until a waiting site tries early again: as many as keep the tries' extra cost (the
 * share by which early lost) within MPIR_TNBC_GAIN_TRY_BUDGET of the site's time. Soon when
 * early was judged once only: that call may have paid what only a first call pays. */
static unsigned long try_gap(const MPIR_Tnbc_gain_t * g)
{
    if (g->n_early < 2)
        return MPIR_TNBC_GAIN_GAP_MIN;
    double extra = g->seen > 1 ? g->seen - 1 : 0;
    double gap = extra / MPIR_TNBC_GAIN_TRY_BUDGET;
    return gap < MPIR_TNBC_GAIN_GAP_MIN ? MPIR_TNBC_GAIN_GAP_MIN :
        gap > MPIR_TNBC_GAIN_GAP_MAX ? MPIR_TNBC_GAIN_GAP_MAX : (unsigned long) gap;
}

int MPIR_Tnbc_gain_choose(MPIR_Tnbc_gain_t * g)
{
    g->calls++;
    if (!g->waiting)
        return 0;
    if (g->retry_at != 0 && g->calls >= g->retry_at) {
        /* the next try is planned already, in case this one is never noted (an operation
         * that fails, a guard that is refused) */
        g->retry_at = g->calls + try_gap(g);
        return 0;
    }
    return 1;
}

void MPIR_Tnbc_gain_note_early(MPIR_Tnbc_gain_t * g, uint64_t visible_ns, uint64_t wait_ns,
                               uint64_t idle_ns)
{
    if (wait_ns && idle_ns) {
        /* all of it idle: the data came at once, nothing to judge either way */
        if (idle_ns >= wait_ns)
            return;
        wait_ns -= idle_ns;
        visible_ns = visible_ns > idle_ns ? visible_ns - idle_ns : 0;
    }
    /* at most MPIR_TNBC_GAIN_SEEN_MAX: a call whose data was there before it (a late
     * process) must not send a site waiting for thousands of calls */
    double seen = wait_ns ? (double) visible_ns / (double) wait_ns : MPIR_TNBC_GAIN_SEEN_MAX;
    g->seen = smooth(g, seen < MPIR_TNBC_GAIN_SEEN_MAX ? seen : MPIR_TNBC_GAIN_SEEN_MAX);
    g->n_early++;
    /* leaving early needs the application to see all the messages' time, coming back a
     * margin below it */
    int wait = g->waiting ? g->seen >= MPIR_TNBC_GAIN_RETURN_BELOW : g->seen >= 1.0;
    if (wait != g->waiting) {
        g->waiting = wait;
        g->switches++;
    }
    if (g->waiting)
        g->retry_at = g->calls + try_gap(g);
}

void MPIR_Tnbc_gain_forget_early(MPIR_Tnbc_gain_t * g)
{
    g->n_early = 0;
    if (g->waiting)
        g->retry_at = g->calls + 1;
}
