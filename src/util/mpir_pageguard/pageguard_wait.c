/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Wait records: what keeps a region alive while a thread waits in the fault handler for one of
 * its pages. A program's signal handler may interrupt that wait and leave it for good with
 * siglongjmp (a watchdog timer around work that reads received data): the handler's frame is
 * gone, and anything it held stays held. So a waiting thread holds no slot reference; it
 * publishes a record (region, and the time it last looked at its page), and a region that
 * retires waits for the records that name it, reaping those that are dead: the retiring
 * thread's own, and those that have not looked for a long time. Waits nest: a program's signal
 * handler that interrupts a wait may touch another pending page (our handler runs with SIGSEGV
 * open, SA_NODEFER), so each thread has a short stack of records. A thread's records whose frames
 * are gone -- left by a siglongjmp -- are dead: found so when the thread waits again (a record
 * made on the signal stack while the thread now runs on its own stack, or one no deeper than
 * the new wait's frame on the same stack) or when it enters MPI. A reaped waiter that was only
 * slow sees its record taken when it looks next and leaves without touching the region again;
 * a region that had such a record reaped keeps the memory a waiter reads (pageguard_region.c).
 * Atomics only on the waiter's side: signal-safe. */

#include "pageguard_internal.h"

#include <sched.h>
#include <signal.h>

#define MPII_PAGEGUARD_WAIT_ROWS 256    /* threads that ever waited; beyond, waits hold the slot */
#define MPII_PAGEGUARD_WAIT_DEPTH 8     /* nested waits of one thread; deeper, they hold it too */
/* a live waiter looks at least every MPII_PAGEGUARD_WAIT_LOOK_NS */
#define MPII_PAGEGUARD_WAIT_ABANDONED_NS (20 * MPII_PAGEGUARD_WAIT_LOOK_NS)

/* state: generation << 2 | kind */
enum { MPII_PAGEGUARD_WAIT_IDLE, MPII_PAGEGUARD_WAIT_WAITING, MPII_PAGEGUARD_WAIT_REAPED };
#define MPII_PAGEGUARD_WAIT_KIND(s) ((s) & 3u)

struct MPII_Pageguard_wait {
    _Atomic unsigned int state;
    MPIR_Pageguard_region_t *_Atomic region;
    _Atomic uint64_t alive_ns;
    uintptr_t frame;            /* the waiting frame, and whether on the signal stack: the */
    int on_signal_stack;        /* owner's to judge */
};

static MPII_Pageguard_wait_t waits[MPII_PAGEGUARD_WAIT_ROWS][MPII_PAGEGUARD_WAIT_DEPTH];
static _Atomic int rows_taken;
static __thread int my_row __attribute__ ((tls_model("initial-exec"))) = -1;
static __thread int my_depth __attribute__ ((tls_model("initial-exec")));

/* Take back a waiting record: 1 if this call did (the waiting count is given back). */
static int reap(MPII_Pageguard_wait_t * w, unsigned int s)
{
    if (!atomic_compare_exchange_strong(&w->state, &s, (s & ~3u) | MPII_PAGEGUARD_WAIT_REAPED))
        return 0;
    atomic_fetch_sub(&MPII_pageguard.waiting, 1);
    atomic_fetch_add(&MPII_pageguard.waits_reaped, 1);
    return 1;
}

void MPIR_Pageguard_wait_left(void)
{
    if (my_row < 0)
        return;
    for (int d = 0; d < MPII_PAGEGUARD_WAIT_DEPTH; d++) {
        unsigned int s = atomic_load(&waits[my_row][d].state);
        if (MPII_PAGEGUARD_WAIT_KIND(s) == MPII_PAGEGUARD_WAIT_WAITING)
            reap(&waits[my_row][d], s);
    }
    my_depth = 0;
}

static int on_signal_stack(void)
{
    stack_t ss;
    return sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
}

/* Is the frame of w, an earlier wait of this thread, still live under frame (signal stack or
 * not)? Stacks grow down: a wait nested in another's handler is deeper on the same stack, or
 * on the signal stack above a wait made on the thread's own. */
static int still_live(const MPII_Pageguard_wait_t * w, uintptr_t frame, int alt)
{
    if (w->on_signal_stack != alt)
        return alt;
    return frame < w->frame;
}

MPII_Pageguard_wait_t *MPII_Pageguard_wait_begin(MPIR_Pageguard_region_t * r,
                                                 unsigned int *mine)
{
    if (my_row == -1) {
        int row = atomic_fetch_add(&rows_taken, 1);
        my_row = row < MPII_PAGEGUARD_WAIT_ROWS ? row : -2;
    }
    if (my_row < 0)
        return NULL;
    uintptr_t frame = (uintptr_t) __builtin_frame_address(0);
    int alt = on_signal_stack();
    /* earlier waits of ours whose frames a siglongjmp left */
    while (my_depth > 0 && !still_live(&waits[my_row][my_depth - 1], frame, alt)) {
        MPII_Pageguard_wait_t *dead = &waits[my_row][--my_depth];
        unsigned int s = atomic_load(&dead->state);
        if (MPII_PAGEGUARD_WAIT_KIND(s) == MPII_PAGEGUARD_WAIT_WAITING)
            reap(dead, s);
    }
    if (my_depth == MPII_PAGEGUARD_WAIT_DEPTH)
        return NULL;
    MPII_Pageguard_wait_t *w = &waits[my_row][my_depth++];
    unsigned int s = atomic_load(&w->state);
    w->frame = frame;
    w->on_signal_stack = alt;
    atomic_store(&w->region, r);
    atomic_store(&w->alive_ns, MPII_Pageguard_now_ns());
    *mine = ((s >> 2) + 1) << 2 | MPII_PAGEGUARD_WAIT_WAITING;
    atomic_store(&w->state, *mine);
    return w;
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
    /* the record is over before it is given back: a wait nested in between must not take it */
    int ended = atomic_compare_exchange_strong(&w->state, &mine,
                                               (mine & ~3u) | MPII_PAGEGUARD_WAIT_IDLE);
    if (my_depth > 0 && w == &waits[my_row][my_depth - 1])
        my_depth--;
    return ended;
}

int MPII_Pageguard_wait_drain(MPIR_Pageguard_region_t * r)
{
    int slow_reaped = 0;
    for (;;) {
        int live = 0, rows = atomic_load(&rows_taken);
        for (int row = 0; row < rows && row < MPII_PAGEGUARD_WAIT_ROWS; row++) {
            for (int d = 0; d < MPII_PAGEGUARD_WAIT_DEPTH; d++) {
                MPII_Pageguard_wait_t *w = &waits[row][d];
                unsigned int s = atomic_load(&w->state);
                if (MPII_PAGEGUARD_WAIT_KIND(s) != MPII_PAGEGUARD_WAIT_WAITING ||
                    atomic_load(&w->region) != r)
                    continue;
                if (row == my_row) {
                    reap(w, s); /* we are retiring, not waiting */
                    continue;
                }
                /* the look first, then the clock: a look made meanwhile is never in the
                 * future */
                uint64_t alive = atomic_load(&w->alive_ns);
                if ((int64_t) (MPII_Pageguard_now_ns() - alive) <
                    MPII_PAGEGUARD_WAIT_ABANDONED_NS)
                    live = 1;
                else
                    slow_reaped |= reap(w, s);
            }
        }
        if (!live)
            return slow_reaped;
        sched_yield();
    }
}
