/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Whether returning early pays at a call site, judged from what the application paid.
 *
 * Returning early pays when the application works while the data moves. When it reads the
 * data at once, or the exchange is node-local and over before the guards are even set, the
 * guards, the staging and the faults cost more than they hide, and the call is cheaper waiting
 * for the same schedule. Both costs are measured as the application sees them:
 *     early: time in the call + time blocked afterwards on its data (faults, MPI calls that
 *            settle it);
 *     wait:  time in the call.
 * A site's first call returns early, its second waits, and from then on the cheaper way is
 * kept; the other way is tried again now and then, the more rarely the more a try costs.
 * Waiting is local: the messages are the same, so processes need not agree.
 *
 * Pure C: no MPICH includes, unit-tested with Check. */

#ifndef TNBC_GAIN_H_INCLUDED
#define TNBC_GAIN_H_INCLUDED

#include <stdint.h>

/* Calls between tries of the way not in use: enough that the tries cost at most this share
 * of the site's time, at least and at most these many. */
#define MPIR_TNBC_GAIN_TRY_BUDGET 0.01
#define MPIR_TNBC_GAIN_GAP_MIN    4
#define MPIR_TNBC_GAIN_GAP_MAX    4096

typedef struct {
    uint64_t early_ns;          /* smoothed cost of an early call, as the application saw it */
    uint64_t wait_ns;           /* smoothed time of a call that waited */
    unsigned long n_early, n_wait;      /* measurements of each */
    int waiting;                /* the choice: wait in the call */
    unsigned long calls;        /* choices made */
    unsigned long retry_at;     /* call at which the way not in use is tried (0: not planned) */
    unsigned long switches;
} MPIR_Tnbc_gain_t;

/* The way of the next call: 1 to wait in the call, 0 to return early. */
int MPIR_Tnbc_gain_choose(MPIR_Tnbc_gain_t * g);

/* An early call cost visible_ns: in the call, and blocked on its data after it. */
void MPIR_Tnbc_gain_note_early(MPIR_Tnbc_gain_t * g, uint64_t visible_ns);

/* A call that waited took call_ns. */
void MPIR_Tnbc_gain_note_wait(MPIR_Tnbc_gain_t * g, uint64_t call_ns);

#endif /* TNBC_GAIN_H_INCLUDED */
