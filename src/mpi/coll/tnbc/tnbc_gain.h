/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Whether returning early pays at a call site, judged from what the application paid.
 *
 * Returning early pays when the application works while the data moves. When it reads the
 * data at once, or the exchange is node-local and over before the guards are even set, the
 * guards, the staging and the faults cost more than they hide, and the call is cheaper waiting
 * for the same schedule.
 *
 * Each early call is judged against itself: what the application saw of it (time in the call
 * and blocked on its data afterwards: faults, MPI calls that settle it) against what waiting
 * for the same messages would have cost (the operation's time to completion, less what only
 * an early call spends before the first message goes: guarding and copying). Two calls of a
 * site can differ several times over (a peer late, a parent still forwarding), the two costs
 * of one call cannot: so a site's ratio is steady where comparing early calls with other calls
 * that waited is not. The time before any data came is left out of both: a process that runs
 * ahead of its peers pays it whichever way it returns, and counted in, it would bring every
 * ratio near 1 and hide what returning early gained after it.
 *
 * Early is kept while the application sees less than the messages take; a site that stopped
 * returning early tries again now and then, the more rarely the more a try costs, and at once
 * when the schedule changed (a newly learnt access order). Waiting is local: the messages are
 * the same, so processes need not agree.
 *
 * Pure C: no MPICH includes, unit-tested with Check. */

#ifndef TNBC_GAIN_H_INCLUDED
#define TNBC_GAIN_H_INCLUDED

#include <stdint.h>

/* Calls between tries of early at a waiting site: enough that the tries cost at most this
 * share of the site's time, at least and at most these many. */
#define MPIR_TNBC_GAIN_TRY_BUDGET 0.01
#define MPIR_TNBC_GAIN_GAP_MIN    4
#define MPIR_TNBC_GAIN_GAP_MAX    4096

/* A waiting site returns early again when a try showed the application less than this share
 * of the messages' time (a margin, so that noise does not flip it). */
#define MPIR_TNBC_GAIN_RETURN_BELOW 0.95

/* One call counts as at most this many times the messages' time. */
#define MPIR_TNBC_GAIN_SEEN_MAX 2.0

typedef struct {
    double seen;                /* smoothed share of the messages' time that early calls showed
                                 * the application (1: as much as waiting) */
    unsigned long n_early;      /* early calls judged since the schedule last changed */
    int waiting;                /* the choice: wait in the call */
    unsigned long calls;        /* choices made */
    unsigned long retry_at;     /* call at which a waiting site tries early (0: not planned) */
    unsigned long switches;
} MPIR_Tnbc_gain_t;

/* The way of the next call: 1 to wait in the call, 0 to return early. */
int MPIR_Tnbc_gain_choose(MPIR_Tnbc_gain_t * g);

/* An early call: the application saw visible_ns of it (in the call, and blocked on its data
 * after it); waiting for its messages would have taken wait_ns, of which idle_ns passed before
 * any data came (a peer still busy, a parent still receiving). */
void MPIR_Tnbc_gain_note_early(MPIR_Tnbc_gain_t * g, uint64_t visible_ns, uint64_t wait_ns,
                               uint64_t idle_ns);

/* What early calls cost was measured with a schedule that no longer holds: the next call
 * returns early and measures it again. */
void MPIR_Tnbc_gain_forget_early(MPIR_Tnbc_gain_t * g);

#endif /* TNBC_GAIN_H_INCLUDED */
