/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The SIGSEGV side: our handler, chaining to the previous one, detecting replacement, and the
 * futex the handler waits on. Everything reached from the handler is async-signal-safe: atomics,
 * clock_gettime, futex, mprotect, sigaction; no allocation and no lock. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Set while this thread runs the previous handler: if that handler chains back to us (it saved
 * ours as its own previous), we must not call it again. initial-exec: no allocation on access. */
static __thread int chaining __attribute__ ((tls_model("initial-exec")));

/* An access error that matches no active region may still be ours: the page can have been
 * released, and its region removed, between the fault and this handler. Such a fault does not
 * repeat, so a fault is passed on only when it repeats at the same address. */
static __thread uintptr_t unmatched_addr __attribute__ ((tls_model("initial-exec")));

static void handler(int sig, siginfo_t * info, void *uctx);

static void futex_wait(_Atomic unsigned int *word, unsigned int expected)
{
    /* Bounded, so a missed wake-up can only cost a little time. */
    struct timespec timeout = { 0, 50 * 1000 * 1000 };
    syscall(SYS_futex, (unsigned int *) word, FUTEX_WAIT_PRIVATE, expected, &timeout, NULL, 0);
}

void MPII_Pageguard_wake(MPIR_Pageguard_region_t * region)
{
    /* seq_cst order: a waiter that announced itself after our load of waiters sees the page
     * released before it sleeps. */
    atomic_fetch_add(&region->seq, 1);
    if (atomic_load(&region->waiters) > 0)
        syscall(SYS_futex, (unsigned int *) &region->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
                NULL, 0);
}

static int is_ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == handler;
}

static int install(struct sigaction *previous)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, previous) != 0)
        return MPIR_PAGEGUARD_ERR_OFF;
    /* Some libraries wrap sigaction and silently keep their own handler: check. */
    struct sigaction now;
    if (sigaction(SIGSEGV, NULL, &now) != 0 || !is_ours(&now))
        return MPIR_PAGEGUARD_ERR_OFF;
    return MPIR_PAGEGUARD_OK;
}

int MPII_Pageguard_install_handler(void)
{
    return install(&MPII_pageguard.previous);
}

void MPII_Pageguard_uninstall_handler(void)
{
    struct sigaction now;
    if (sigaction(SIGSEGV, NULL, &now) == 0 && is_ours(&now))
        sigaction(SIGSEGV, &MPII_pageguard.previous, NULL);
}

int MPIR_Pageguard_check_handler(void)
{
    struct sigaction now;
    if (!atomic_load(&MPII_pageguard.on))
        return 0;
    if (sigaction(SIGSEGV, NULL, &now) == 0 && is_ours(&now))
        return 1;
    atomic_fetch_add(&MPII_pageguard.replaced, 1);
    if (MPII_pageguard.config.on_replaced == MPIR_PAGEGUARD_SWITCH_OFF) {
        atomic_store(&MPII_pageguard.on, 0);
        return 0;
    }
    /* Chain to the newcomer from now on, and take the signal back. */
    if (install(&MPII_pageguard.previous) != MPIR_PAGEGUARD_OK) {
        atomic_store(&MPII_pageguard.on, 0);
        return 0;
    }
    return 1;
}

/* Not our fault: behave as if we were never installed. */
static void chain(int sig, siginfo_t * info, void *uctx)
{
    const struct sigaction *prev = &MPII_pageguard.previous;
    atomic_fetch_add(&MPII_pageguard.foreign_faults, 1);

    if (!chaining) {
        if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
            chaining = 1;
            prev->sa_sigaction(sig, info, uctx);
            chaining = 0;
            return;
        }
        if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler != SIG_DFL &&
            prev->sa_handler != SIG_IGN) {
            chaining = 1;
            prev->sa_handler(sig);
            chaining = 0;
            return;
        }
    }
    /* SIG_DFL (and SIG_IGN, which the kernel does not honour for a real fault): restore the
     * default action so that the faulting instruction, run again, kills the process with a core
     * dump as usual. A SIGSEGV sent by kill() does not repeat by itself: send it again. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (info->si_code <= 0)
        raise(sig);
}

/* Index of the sub-message holding byte offset off, or -1 (a hole between sub-messages). */
static int find_sub(const MPIR_Pageguard_region_t * r, size_t off)
{
    int lo = 0, hi = r->nsub - 1, found = -1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (r->sub_off[mid] <= off) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (found >= 0 && off < r->sub_off[found] + r->sub_len[found])
        return found;
    return -1;
}

static void record_first_touch(MPIR_Pageguard_region_t * r, int k)
{
    int untouched = 0;
    if (atomic_load(&r->touch_order[k]) == 0 &&
        atomic_compare_exchange_strong(&r->touch_order[k], &untouched, -1)) {
        r->touch_ns[k] = MPII_Pageguard_now_ns();
        atomic_store(&r->touch_order[k], atomic_fetch_add(&r->touch_counter, 1) + 1);
    }
}

/* Trace mode: the data is in place; open the pages of the touched sub-message (or just the
 * touched page, for a hole). */
static void release_touched(MPIR_Pageguard_region_t * r, int k, size_t page)
{
    size_t ps = MPII_pageguard.pagesize;
    size_t first = page, last = page;
    if (k >= 0 && !MPII_Pageguard_pages_of(r, r->base + r->sub_off[k],
                                           r->base + r->sub_off[k] + r->sub_len[k], &first,
                                           &last)) {
        first = last = page;
    }
    MPII_Pageguard_mprotect(r->gbase + first * ps, (last - first + 1) * ps,
                            PROT_READ | PROT_WRITE);
    for (size_t p = first; p <= last; p++) {
        unsigned char guarded = MPII_PAGE_GUARDED;
        if (atomic_compare_exchange_strong(&r->page_state[p], &guarded, MPII_PAGE_RELEASED))
            atomic_fetch_sub(&r->unreleased, 1);
    }
    MPII_Pageguard_wake(r);
}

int MPIR_Pageguard_latency_bucket(uint64_t ns)
{
    int b = 0;
    if (ns == 0)
        return 0;
    /* 4 buckets per power of two: the two bits below the leading one pick the quarter */
    int lead = 63 - __builtin_clzll(ns);
    int quarter = lead >= 2 ? (int) ((ns >> (lead - 2)) & 3) : (int) ((ns << (2 - lead)) & 3);
    b = 4 * lead + quarter;
    return b < MPIR_PAGEGUARD_LATENCY_BUCKETS ? b : MPIR_PAGEGUARD_LATENCY_BUCKETS - 1;
}

double MPIR_Pageguard_latency_of_bucket(int b)
{
    return (double) (1ull << (b / 4)) * (1.0 + (b % 4 + 0.5) / 4.0);
}

/* A wait that began at t0 ended by a release at t1: the part of it that came after both the
 * reader and the data were there is the release latency. */
static void record_release_latency(uint64_t t0, uint64_t t1)
{
    uint64_t event = atomic_load(&MPII_pageguard.data_event_ns);
    uint64_t from = event > t0 ? event : t0;
    uint64_t ns = t1 > from ? t1 - from : 0;
    atomic_fetch_add(&MPII_pageguard.release_hist[MPIR_Pageguard_latency_bucket(ns)], 1);
    uint64_t max = atomic_load(&MPII_pageguard.release_max_ns);
    while (ns > max && !atomic_compare_exchange_weak(&MPII_pageguard.release_max_ns, &max, ns));
}

void MPIR_Pageguard_note_data_event(uint64_t time_ns)
{
    atomic_store_explicit(&MPII_pageguard.data_event_ns, time_ns, memory_order_relaxed);
}

static void on_our_page(MPIR_Pageguard_region_t * r, uintptr_t addr, size_t page)
{
    atomic_fetch_add(&MPII_pageguard.faults, 1);
    int k = find_sub(r, addr - r->base);
    if (k >= 0)
        record_first_touch(r, k);

    if (r->flags & MPIR_PAGEGUARD_TRACE) {
        release_touched(r, k, page);
        return;
    }
    if (MPII_pageguard.config.before_wait &&
        MPII_pageguard.config.before_wait((void *) addr) == MPIR_PAGEGUARD_FORGET) {
        /* no completion can run meanwhile: the caller holds the lock they need */
        if (MPII_Pageguard_forget_page(r, page))
            MPII_Pageguard_wake(r);
        return;
    }
    uint64_t t0 = MPII_Pageguard_now_ns();
    atomic_fetch_add(&MPII_pageguard.waiting, 1);
    atomic_fetch_add(&r->waiters, 1);
    if (MPII_pageguard.config.on_wait)
        MPII_pageguard.config.on_wait();
    while (atomic_load(&r->page_state[page]) == MPII_PAGE_GUARDED) {
        unsigned int seq = atomic_load(&r->seq);
        if (atomic_load(&r->page_state[page]) != MPII_PAGE_GUARDED)
            break;
        futex_wait(&r->seq, seq);
    }
    atomic_fetch_sub(&r->waiters, 1);
    atomic_fetch_sub(&MPII_pageguard.waiting, 1);
    uint64_t t1 = MPII_Pageguard_now_ns();
    atomic_fetch_add(&MPII_pageguard.stall_ns, t1 - t0);
    if (atomic_load(&r->page_state[page]) == MPII_PAGE_RELEASED)
        record_release_latency(t0, t1);
}

static void handler(int sig, siginfo_t * info, void *uctx)
{
    int saved_errno = errno;

    /* Our protections only ever cause access errors, raised by the kernel (si_code > 0). */
    if (info->si_code == SEGV_ACCERR) {
        uintptr_t addr = (uintptr_t) info->si_addr;
        size_t ps = MPII_pageguard.pagesize;
        int released = 0;
        /* The region that guards the page, if any. A buffer reused by the next collective can
         * be in two regions at once, the older one finished (its pages released) but not yet
         * unregistered: only a guarded page is waited for. */
        for (int i = 0; i < MPII_PAGEGUARD_MAX_REGIONS; i++) {
            MPII_Pageguard_slot_t *slot = &MPII_pageguard.slots[i];
            MPIR_Pageguard_region_t *r = MPII_Pageguard_slot_enter(slot);
            if (!r)
                continue;
            if (addr >= r->gbase && addr < r->gbase + r->npages * ps) {
                size_t page = (addr - r->gbase) / ps;
                int state = atomic_load(&r->page_state[page]);
                if (state == MPII_PAGE_GUARDED) {
                    on_our_page(r, addr, page);
                    MPII_Pageguard_slot_leave(slot);
                    unmatched_addr = 0;
                    errno = saved_errno;
                    return;
                }
                released |= (state == MPII_PAGE_RELEASED);
            }
            MPII_Pageguard_slot_leave(slot);
        }
        if (released) {
            /* the fault raced with the page's opening: run the access again */
            unmatched_addr = 0;
            errno = saved_errno;
            return;
        }
        if (atomic_load(&MPII_pageguard.on) && unmatched_addr != addr) {
            unmatched_addr = addr;      /* run the instruction once more */
            errno = saved_errno;
            return;
        }
        unmatched_addr = 0;
    }
    chain(sig, info, uctx);
    errno = saved_errno;
}

int MPIR_Pageguard_waiting(void)
{
    return atomic_load(&MPII_pageguard.waiting);
}

size_t MPIR_Pageguard_guarded_pages(const void *addr, size_t len, MPIR_Pageguard_touch_t touch)
{
    uintptr_t lo = (uintptr_t) addr, hi = lo + len;
    size_t ps = MPII_pageguard.pagesize, found = 0;

    if (len == 0 || !atomic_load(&MPII_pageguard.on))
        return 0;
    for (int i = 0; i < MPII_PAGEGUARD_MAX_REGIONS; i++) {
        MPII_Pageguard_slot_t *slot = &MPII_pageguard.slots[i];
        MPIR_Pageguard_region_t *r = MPII_Pageguard_slot_enter(slot);
        if (!r)
            continue;
        uintptr_t rend = r->gbase + r->npages * ps;
        if (lo < rend && hi > r->gbase && atomic_load(&r->unreleased) > 0) {
            size_t first = (lo > r->gbase ? lo - r->gbase : 0) / ps;
            size_t last = ((hi < rend ? hi : rend) - r->gbase - 1) / ps;
            for (size_t p = first; p <= last; p++) {
                if (atomic_load(&r->page_state[p]) != MPII_PAGE_GUARDED)
                    continue;
                found++;
                /* the fault handler waits for the page; a no-op atomic add is a write access
                 * that cannot lose a concurrent store of another thread */
                volatile unsigned char *b = (unsigned char *) (r->gbase + p * ps);
                if (touch == MPIR_PAGEGUARD_TOUCH_WRITE)
                    __atomic_fetch_add((unsigned char *) b, 0, __ATOMIC_RELAXED);
                else if (touch == MPIR_PAGEGUARD_TOUCH_READ)
                    (void) *b;
            }
        }
        MPII_Pageguard_slot_leave(slot);
    }
    return found;
}
