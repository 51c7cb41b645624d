/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Wait records: what keeps a region alive while a thread waits in the fault handler for one of
 * its pages. A program's signal handler may interrupt that wait and leave it for good with
 * siglongjmp (a watchdog timer around work that reads received data): the handler's frame is
 * gone, and anything it held stays held. So a waiting thread holds no slot reference; it
 * publishes a record (region, and the time it last looked at its page), and a region that
 * retires waits for the records that name it -- except those of the retiring thread itself,
 * which cannot be waiting, and those that have not looked for a long time, which are reaped.
 * A reaped waiter that was only slow sees its record taken when it looks next and leaves
 * without touching the region again; a region that had a record reaped keeps the memory a
 * waiter reads (pageguard_region.c). Atomics only on the waiter's side: signal-safe. */

#include "pageguard_internal.h"

#include <sched.h>

#define MPII_WAIT_ROWS 256      /* threads that ever waited; beyond, waits hold the slot */
#define MPII_WAITS_PER_ROW 4    /* nested waits of one thread (a signal handler's read) */
#define MPII_WAIT_ABANDONED_NS (1000ull * 1000 * 1000)  /* a live waiter looks every 50 ms */

/* state: generation << 2 | kind */
enum { MPII_WAIT_IDLE = 0, MPII_WAIT_WAITING = 1, MPII_WAIT_REAPED = 2 };
#define MPII_WAIT_KIND(s) ((s) & 3)

struct MPII_Pageguard_wait {
    _Atomic unsigned int state;
    MPIR_Pageguard_region_t *_Atomic region;
    _Atomic uint64_t alive_ns;
};

static MPII_Pageguard_wait_t waits[MPII_WAIT_ROWS][MPII_WAITS_PER_ROW];
static _Atomic int rows_taken;
static __thread int my_row __attribute__ ((tls_model("initial-exec"))) = -1;

MPII_Pageguard_wait_t *MPII_Pageguard_wait_begin(MPIR_Pageguard_region_t * r,
                                                 unsigned int *mine)
{
    if (my_row == -1) {
        int row = atomic_fetch_add(&rows_taken, 1);
        my_row = row < MPII_WAIT_ROWS ? row : -2;
    }
    if (my_row < 0)
        return NULL;
    for (int i = 0; i < MPII_WAITS_PER_ROW; i++) {
        MPII_Pageguard_wait_t *w = &waits[my_row][i];
        unsigned int s = atomic_load(&w->state);
        if (MPII_WAIT_KIND(s) == MPII_WAIT_WAITING)
            continue;   /* an outer wait of ours, or one left by a longjmp and not yet reaped */
        atomic_store(&w->region, r);
        atomic_store(&w->alive_ns, MPII_Pageguard_now_ns());
        *mine = ((s >> 2) + 1) << 2 | MPII_WAIT_WAITING;
        atomic_store(&w->state, *mine);
        return w;
    }
    return NULL;
}

int MPII_Pageguard_wait_goes_on(MPII_Pageguard_wait_t * w, unsigned int mine)
{
    if (atomic_load(&w->state) != mine)
        return 0;
    atomic_store(&w->alive_ns, MPII_Pageguard_now_ns());
    return 1;
}

int MPII_Pageguard_wait_end(MPII_Pageguard_wait_t * w, unsigned int mine)
{
    return atomic_compare_exchange_strong(&w->state, &mine, (mine & ~3u) | MPII_WAIT_IDLE);
}

int MPII_Pageguard_wait_drain(MPIR_Pageguard_region_t * r)
{
    int reaped = 0;
    for (;;) {
        int live = 0, rows = atomic_load(&rows_taken);
        uint64_t now = MPII_Pageguard_now_ns();
        for (int row = 0; row < rows && row < MPII_WAIT_ROWS; row++) {
            for (int i = 0; i < MPII_WAITS_PER_ROW; i++) {
                MPII_Pageguard_wait_t *w = &waits[row][i];
                unsigned int s = atomic_load(&w->state);
                if (MPII_WAIT_KIND(s) != MPII_WAIT_WAITING || atomic_load(&w->region) != r)
                    continue;
                if (row != my_row && now - atomic_load(&w->alive_ns) < MPII_WAIT_ABANDONED_NS) {
                    live = 1;
                    continue;
                }
                if (atomic_compare_exchange_strong(&w->state, &s,
                                                   (s & ~3u) | MPII_WAIT_REAPED)) {
                    atomic_fetch_sub(&MPII_pageguard.waiting, 1);
                    atomic_fetch_add(&MPII_pageguard.waits_reaped, 1);
                    reaped = 1;
                }
            }
        }
        if (!live)
            return reaped;
        sched_yield();
    }
}
