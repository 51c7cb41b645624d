/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Per call site: return early, or wait in the call (see tnbc_gain.h). */

#include "tnbc_gain.h"

#include <stddef.h>

/* The way in use: half weight to the newest measurement, so that a site follows a change of
 * the application's phase within a few calls and the first call's one-time costs fade. A try
 * of the other way, calls apart from the last: the newest alone. */
static uint64_t smooth(uint64_t old, unsigned long n, int in_use, uint64_t x)
{
    return (n == 0 || !in_use) ? x : old / 2 + x / 2;
}

/* Calls between tries of the way not in use: as many as keep the tries' extra cost within
 * MPIR_TNBC_GAIN_TRY_BUDGET of the site's time. A way that loses by little is tried often (a
 * site whose application changes phase turns within a few calls); one that costs several times
 * more, rarely. */
static unsigned long try_gap(const MPIR_Tnbc_gain_t * g)
{
    uint64_t in_use = g->waiting ? g->wait_ns : g->early_ns;
    uint64_t other = g->waiting ? g->early_ns : g->wait_ns;
    if (in_use == 0)
        in_use = 1;
    double extra = other > in_use ? (double) (other - in_use) / (double) in_use : 0;
    double gap = extra / MPIR_TNBC_GAIN_TRY_BUDGET;
    return gap < MPIR_TNBC_GAIN_GAP_MIN ? MPIR_TNBC_GAIN_GAP_MIN :
        gap > MPIR_TNBC_GAIN_GAP_MAX ? MPIR_TNBC_GAIN_GAP_MAX : (unsigned long) gap;
}

/* After a try of the way not in use: keep or change the way (the one in use must lose by 5%,
 * so that noise does not flip it), and plan the next try. */
static void decide(MPIR_Tnbc_gain_t * g)
{
    if (g->n_early == 0 || g->n_wait == 0)
        return;
    int wait = g->waiting ? 20 * g->early_ns >= 19 * g->wait_ns :
        20 * g->wait_ns < 19 * g->early_ns;
    if (wait != g->waiting) {
        g->waiting = wait;
        g->switches++;
    }
    g->retry_at = g->calls + try_gap(g);
}

/* A try of the other way; the next is planned already, in case this one is never noted
 * (an operation that fails, a guard that is refused). */
static int try_other(MPIR_Tnbc_gain_t * g, int wait)
{
    g->retry_at = g->calls + try_gap(g);
    return wait;
}

int MPIR_Tnbc_gain_choose(MPIR_Tnbc_gain_t * g)
{
    g->calls++;
    int due = g->retry_at != 0 && g->calls >= g->retry_at;
    if (g->waiting)
        return due ? try_other(g, 0) : 1;
    if (g->n_early == 0)
        return 0;
    return (g->n_wait == 0 || due) ? try_other(g, 1) : 0;
}

void MPIR_Tnbc_gain_note_early(MPIR_Tnbc_gain_t * g, uint64_t visible_ns)
{
    g->early_ns = smooth(g->early_ns, g->n_early, !g->waiting, visible_ns);
    g->n_early++;
    if (g->waiting)
        decide(g);
}

void MPIR_Tnbc_gain_note_wait(MPIR_Tnbc_gain_t * g, uint64_t call_ns)
{
    g->wait_ns = smooth(g->wait_ns, g->n_wait, g->waiting, call_ns);
    g->n_wait++;
    if (!g->waiting)
        decide(g);
}
