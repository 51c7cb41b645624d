/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Guarded regions: registration (validate, reserve mappings, protect), landing and release on
 * completion, first-touch queries, which pages of a range still wait, removal. Runs on the
 * application and progress side; the signal handler calls only its signal-safe parts
 * (forget_page, sub_pages, wake). Calls nothing of the fault side (pageguard_fault.c). */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static uintptr_t round_down(uintptr_t x, size_t ps)
{
    return x & ~(uintptr_t) (ps - 1);
}

static uintptr_t round_up(uintptr_t x, size_t ps)
{
    return (x + ps - 1) & ~(uintptr_t) (ps - 1);
}

static int valid_ranges(size_t len, int nsub, const size_t * off, const size_t * sublen)
{
    size_t prev_end = 0;
    for (int k = 0; k < nsub; k++) {
        if (off[k] > len || sublen[k] > len - off[k] || off[k] < prev_end)
            return 0;
        prev_end = off[k] + sublen[k];
    }
    return 1;
}

/* Pages of the span [gbase, ...) that sub-message k may hold protected: the whole pages it
 * touches inside the guardable span, less a first or last page that sub-messages do not cover
 * entirely (never guarded). Returns 0 when none. Async-signal-safe (used by the handler). */
int MPII_Pageguard_sub_pages(const MPIR_Pageguard_region_t * r, int k, size_t * first,
                             size_t * last)
{
    size_t ps = MPII_pageguard.pagesize;
    uintptr_t lo = r->base + r->sub_off[k], hi = lo + r->sub_len[k];
    if (lo < r->guard_lo)
        lo = r->guard_lo;
    if (hi > r->guard_hi)
        hi = r->guard_hi;
    if (lo >= hi)
        return 0;
    size_t f = (lo - r->gbase) / ps, l = (hi - 1 - r->gbase) / ps;
    if (atomic_load(&r->page_state[f]) == MPII_PAGE_UNGUARDED)
        f++;
    if (f > l)
        return 0;
    if (atomic_load(&r->page_state[l]) == MPII_PAGE_UNGUARDED) {
        if (l == f)
            return 0;
        l--;
    }
    *first = f;
    *last = l;
    return 1;
}

/* Mark the guardable pages whose every byte belongs to a sub-message. Bytes between
 * sub-messages may belong to other objects (displacements into separate allocations, absolute
 * addresses from MPI_BOTTOM): their pages must stay usable, by the program and by us. A
 * sub-message on such a page completes before the call returns (MPIR_Pageguard_sub_is_sync). */
static void mark_covered_pages(MPIR_Pageguard_region_t * r)
{
    size_t ps = MPII_pageguard.pagesize;
    int k = 0;
    while (k < r->nsub) {
        if (r->sub_len[k] == 0) {
            k++;
            continue;
        }
        /* one run of sub-messages with no byte between them */
        uintptr_t run_lo = r->base + r->sub_off[k], run_hi = run_lo + r->sub_len[k];
        for (k++; k < r->nsub; k++) {
            if (r->sub_len[k] == 0)
                continue;
            if (r->base + r->sub_off[k] != run_hi)
                break;
            run_hi += r->sub_len[k];
        }
        uintptr_t lo = round_up(run_lo, ps), hi = round_down(run_hi, ps);
        if (lo < r->guard_lo)
            lo = r->guard_lo;
        if (hi > r->guard_hi)
            hi = r->guard_hi;
        for (uintptr_t page = lo; page < hi; page += ps)
            atomic_store(&r->page_state[(page - r->gbase) / ps], MPII_PAGE_GUARDED);
    }
}

static void free_region(MPIR_Pageguard_region_t * r)
{
    MPII_Pageguard_move_done(r);
    if (r->staging_map && r->staging_spoiled) {
        if (!r->staging_lost)
            munmap(r->staging_map, r->staging_len);
    } else if (r->staging_map)
        MPII_Pageguard_staging_put(r->staging_map, r->staging_len);
    free(r->sub_off);
    free(r->sub_len);
    free(r->page_pending);
    free((void *) r->sub_done);
    free((void *) r->touch_order);
    free(r->touch_ns);
    pthread_mutex_destroy(&r->lock);
    if (r->waiter_reaped)
        return;
    free((void *) r->page_state);
    free(r);
}

/* Apply prot to every maximal run of pages in state `state`. Returns 0 or -1 (errno set); on
 * failure *done_runs tells how many runs were changed. */
static int protect_runs(MPIR_Pageguard_region_t * r, unsigned char state, int prot,
                        size_t * done_runs)
{
    size_t ps = MPII_pageguard.pagesize;
    *done_runs = 0;
    for (size_t p = 0; p < r->npages;) {
        if (atomic_load(&r->page_state[p]) != state) {
            p++;
            continue;
        }
        size_t q = p;
        while (q < r->npages && atomic_load(&r->page_state[q]) == state)
            q++;
        if (MPII_Pageguard_mprotect(r->gbase + p * ps, (q - p) * ps, prot) != 0)
            return -1;
        (*done_runs)++;
        p = q;
    }
    return 0;
}

/* Can the kernel write into this (now protected) page on our behalf? It cannot for shared
 * mappings: read one byte through /proc/self/mem and write it back. */
static int landing_works(uintptr_t page)
{
    char byte;
    int fd = MPII_Pageguard_landing_fd();
    return pread(fd, &byte, 1, (off_t) page) == 1 && pwrite(fd, &byte, 1, (off_t) page) == 1;
}

static void count_refusal(int rc)
{
    pthread_mutex_lock(&MPII_pageguard.lock);
    if (rc == MPIR_PAGEGUARD_ERR_BUDGET)
        MPII_pageguard.refused_budget++;
    else if (rc == MPIR_PAGEGUARD_ERR_NOMEM)
        MPII_pageguard.refused_nomem++;
    else if (rc == MPIR_PAGEGUARD_ERR_LANDING)
        MPII_pageguard.refused_landing++;
    else if (rc == MPIR_PAGEGUARD_ERR_PROT)
        MPII_pageguard.refused_prot++;
    else if (rc == MPIR_PAGEGUARD_ERR_EXPOSED)
        MPII_pageguard.refused_exposed++;
    else
        MPII_pageguard.refused_other++;
    pthread_mutex_unlock(&MPII_pageguard.lock);
}

/* The pages of all taken slots lie in [span_lo, span_hi): a lookup outside finds nothing.
 * Under lock; grown before a slot becomes active, shrunk after one is given back. */
static void extend_span(uintptr_t lo, uintptr_t hi)
{
    uintptr_t old_lo = atomic_load(&MPII_pageguard.span_lo);
    uintptr_t old_hi = atomic_load(&MPII_pageguard.span_hi);
    if (old_hi > 0) {   /* not empty */
        lo = lo < old_lo ? lo : old_lo;
        hi = hi > old_hi ? hi : old_hi;
    }
    atomic_store(&MPII_pageguard.span_lo, lo);
    atomic_store(&MPII_pageguard.span_hi, hi);
}

static void shrink_span(void)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    size_t ps = MPII_pageguard.pagesize;
    for (int i = 0; i < MPII_PAGEGUARD_MAX_REGIONS; i++) {
        const MPIR_Pageguard_region_t *r = MPII_pageguard.slots[i].region;
        if (!r)
            continue;
        lo = r->gbase < lo ? r->gbase : lo;
        hi = r->gbase + r->npages * ps > hi ? r->gbase + r->npages * ps : hi;
    }
    if (hi == 0)
        lo = 0;
    atomic_store(&MPII_pageguard.span_lo, lo);
    atomic_store(&MPII_pageguard.span_hi, hi);
}

/* The threads waiting in the handler for a page of region look again. */
void MPII_Pageguard_wake(MPIR_Pageguard_region_t * region)
{
    atomic_fetch_add(&MPII_pageguard.changes, 1);
    /* seq_cst order: a waiter that announced itself after our load of waiters sees the page
     * released before it sleeps. */
    atomic_fetch_add(&region->seq, 1);
    if (atomic_load(&region->waiters) > 0)
        syscall(SYS_futex, (unsigned int *) &region->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
                NULL, 0);
}

/* Hide the region from the handler, wait until no handler looks at it, give back its slot and
 * its share of the mapping budget. */
static void retire_slot(MPIR_Pageguard_region_t * r)
{
    if (atomic_exchange(&MPII_pageguard.slots[r->slot].state, MPII_SLOT_DYING) ==
        MPII_SLOT_ACTIVE)
        atomic_fetch_sub(&MPII_pageguard.live_regions, 1);
    while (atomic_load(&MPII_pageguard.slots[r->slot].users) > 0)
        sched_yield();
    r->waiter_reaped |= MPII_Pageguard_wait_drain(r);

    atomic_fetch_add(&MPII_pageguard.changes, 1);
    pthread_mutex_lock(&MPII_pageguard.lock);
    MPII_pageguard.maps_in_use -= r->maps_reserved;
    r->maps_reserved = 0;
    MPII_pageguard.slots[r->slot].region = NULL;
    atomic_store(&MPII_pageguard.slots[r->slot].state, MPII_SLOT_FREE);
    shrink_span();
    r->slot = -1;
    pthread_mutex_unlock(&MPII_pageguard.lock);
}

/* Sub-messages given in fill[] are complete at registration: they count for no page, and a
 * page that only they cover is not protected. */
static void count_pending(MPIR_Pageguard_region_t * r, const void *const *fill)
{
    for (int k = 0; k < r->nsub; k++) {
        size_t first, last;
        if (r->sub_len[k] == 0 || (fill && fill[k]) || (r->flags & MPIR_PAGEGUARD_TRACE)) {
            atomic_store(&r->sub_done[k], 1);
            continue;
        }
        if (MPII_Pageguard_sub_pages(r, k, &first, &last))
            for (size_t p = first; p <= last; p++)
                r->page_pending[p]++;
    }
    if (!fill)
        return;
    for (size_t p = 0; p < r->npages; p++)
        if (r->page_pending[p] == 0)
            atomic_store(&r->page_state[p], MPII_PAGE_UNGUARDED);
}

/* A receive region that is no trace run: its data arrive in staging and land through the
 * landing descriptor (or by moving pages). */
static int lands_from_staging(MPIR_Pageguard_kind_t kind, int flags)
{
    return kind == MPIR_PAGEGUARD_RECV && !(flags & MPIR_PAGEGUARD_TRACE);
}

/* What a registration may be given: one region of whole pages at least, of a kind we serve
 * (PROT_OK: the pages' protection may change). */
static int check_request(void *addr, size_t len, int nsub, const size_t * sub_off,
                         const size_t * sub_len, const void *const *fill,
                         MPIR_Pageguard_kind_t kind, int flags, int *open_prot)
{
    size_t ps = MPII_pageguard.pagesize;
    if (!addr || len == 0 || nsub <= 0 || !sub_off || !sub_len ||
        (uintptr_t) addr + len < (uintptr_t) addr || !valid_ranges(len, nsub, sub_off, sub_len)
        || (kind != MPIR_PAGEGUARD_RECV && kind != MPIR_PAGEGUARD_SEND) ||
        (fill && (kind != MPIR_PAGEGUARD_RECV || (flags & MPIR_PAGEGUARD_TRACE))))
        return MPIR_PAGEGUARD_ERR_ARG;

    uintptr_t guard_lo = round_up((uintptr_t) addr, ps);
    uintptr_t guard_hi = round_down((uintptr_t) addr + len, ps);
    if (guard_lo >= guard_hi)
        return MPIR_PAGEGUARD_ERR_NOTHING;
    if (lands_from_staging(kind, flags) && MPII_pageguard.mem_fd < 0)
        return MPIR_PAGEGUARD_ERR_LANDING;
    if (MPII_Pageguard_is_exposed(guard_lo, guard_hi))
        return MPIR_PAGEGUARD_ERR_EXPOSED;
    int prot_rc = MPII_Pageguard_open_prot(guard_lo, guard_hi, kind, open_prot);
    if (prot_rc != MPII_PAGEGUARD_PROT_OK)
        return (prot_rc == MPII_PAGEGUARD_PROT_REFUSED) ? MPIR_PAGEGUARD_ERR_PROT :
            MPIR_PAGEGUARD_ERR_NOMEM;
    return MPIR_PAGEGUARD_OK;
}

/* A region not yet visible to the fault handler (NULL: no memory). */
static MPIR_Pageguard_region_t *region_new(void *addr, size_t len, int nsub,
                                           const size_t * sub_off, const size_t * sub_len,
                                           MPIR_Pageguard_kind_t kind, int flags, int open_prot)
{
    size_t ps = MPII_pageguard.pagesize;
    MPIR_Pageguard_region_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    pthread_mutex_init(&r->lock, NULL);
    r->slot = -1;
    r->base = (uintptr_t) addr;
    r->end = r->base + len;
    r->gbase = round_down(r->base, ps);
    r->npages = (round_up(r->end, ps) - r->gbase) / ps;
    r->guard_lo = round_up(r->base, ps);
    r->guard_hi = round_down(r->end, ps);
    r->kind = kind;
    r->flags = flags;
    r->open_prot = open_prot;
    r->nsub = nsub;
    r->sub_off = malloc(nsub * sizeof(size_t));
    r->sub_len = malloc(nsub * sizeof(size_t));
    r->page_state = calloc(r->npages, sizeof(*r->page_state));
    r->page_pending = calloc(r->npages, sizeof(int));
    r->sub_done = calloc(nsub, sizeof(*r->sub_done));
    r->touch_order = calloc(nsub, sizeof(*r->touch_order));
    r->touch_ns = calloc(nsub, sizeof(uint64_t));
    if (!r->sub_off || !r->sub_len || !r->page_state || !r->page_pending || !r->sub_done ||
        !r->touch_order || !r->touch_ns) {
        free_region(r);
        return NULL;
    }
    memcpy(r->sub_off, sub_off, nsub * sizeof(size_t));
    memcpy(r->sub_len, sub_len, nsub * sizeof(size_t));
    return r;
}

/* Which pages to protect and how many sub-messages each waits for; the mappings that may cost,
 * and the staging space of a region whose data land by moving pages. */
static int plan_pages(MPIR_Pageguard_region_t * r, const void *const *fill)
{
    size_t ps = MPII_pageguard.pagesize;
    mark_covered_pages(r);
    count_pending(r, fill);
    int nonempty = 0;
    for (int k = 0; k < r->nsub; k++)
        nonempty += (r->sub_len[k] > 0 && !(fill && fill[k]));
    size_t guarded = 0, runs = 0;
    for (size_t p = 0; p < r->npages; p++) {
        if (atomic_load(&r->page_state[p]) == MPII_PAGE_GUARDED) {
            guarded++;
            runs += (p == 0 || atomic_load(&r->page_state[p - 1]) != MPII_PAGE_GUARDED);
        }
    }
    if (guarded == 0)
        return MPIR_PAGEGUARD_ERR_NOTHING;
    atomic_store(&r->unreleased, (int) guarded);

    /* Each protected run splits a mapping in up to three; each later partial release can split
     * it again. Reserve that worst case against the budget. */
    size_t releases = (size_t) nonempty < guarded ? (size_t) nonempty : guarded;
    r->maps_reserved = 2 * runs + 2 * releases;

    if (lands_from_staging(r->kind, r->flags)) {
        size_t in_page = r->base % ps;
        r->staging_map = MPII_Pageguard_staging_get(round_up(in_page + (r->end - r->base), ps),
                                                    &r->staging_len);
        if (r->staging_map == NULL)
            return MPIR_PAGEGUARD_ERR_NOMEM;
        r->staging = r->staging_map + in_page;
    }
    return MPIR_PAGEGUARD_OK;
}

/* A slot and the region's mappings from the budget, both or neither. */
static int take_slot(MPIR_Pageguard_region_t * r)
{
    int rc = MPIR_PAGEGUARD_OK;
    pthread_mutex_lock(&MPII_pageguard.lock);
    if (MPII_pageguard.maps_in_use + r->maps_reserved > MPII_pageguard.map_budget) {
        rc = MPIR_PAGEGUARD_ERR_BUDGET;
        goto fn_exit;
    }
    for (int i = 0; i < MPII_PAGEGUARD_MAX_REGIONS; i++) {
        int free_state = MPII_SLOT_FREE;
        if (atomic_compare_exchange_strong(&MPII_pageguard.slots[i].state, &free_state,
                                           MPII_SLOT_BUSY)) {
            r->slot = i;
            break;
        }
    }
    if (r->slot < 0) {
        rc = MPIR_PAGEGUARD_ERR_SLOTS;
        goto fn_exit;
    }
    MPII_pageguard.maps_in_use += r->maps_reserved;
    MPII_pageguard.slots[r->slot].region = r;
    extend_span(r->gbase, r->gbase + r->npages * MPII_pageguard.pagesize);
  fn_exit:
    if (rc)
        r->maps_reserved = 0;
    pthread_mutex_unlock(&MPII_pageguard.lock);
    return rc;
}

/* Fill what arrived before, make the region visible to the handler, then protect its pages;
 * on failure every page is open again and the slot retired. */
static int arm(MPIR_Pageguard_region_t * r, const void *const *fill)
{
    int rc = MPIR_PAGEGUARD_OK;
    size_t done_runs;

    /* the buffer is ours to write until its pages are protected */
    for (int k = 0; fill && k < r->nsub; k++)
        if (fill[k] && r->sub_len[k])
            memcpy((char *) r->base + r->sub_off[k], fill[k], r->sub_len[k]);

    /* Visible to the handler before the first page is protected. */
    atomic_store(&MPII_pageguard.slots[r->slot].state, MPII_SLOT_ACTIVE);
    atomic_fetch_add(&MPII_pageguard.live_regions, 1);

    int prot = (r->kind == MPIR_PAGEGUARD_RECV) ? PROT_NONE : (r->open_prot & ~PROT_WRITE);
    if (protect_runs(r, MPII_PAGE_GUARDED, prot, &done_runs) != 0) {
        rc = (errno == ENOMEM) ? MPIR_PAGEGUARD_ERR_NOMEM : MPIR_PAGEGUARD_ERR_ARG;
        goto fn_undo;
    }
    if (lands_from_staging(r->kind, r->flags)) {
        size_t p = 0;
        while (atomic_load(&r->page_state[p]) != MPII_PAGE_GUARDED)
            p++;
        if (!landing_works(r->gbase + p * MPII_pageguard.pagesize)) {
            rc = MPIR_PAGEGUARD_ERR_LANDING;
            goto fn_undo;
        }
    }
    return MPIR_PAGEGUARD_OK;

  fn_undo:
    /* Nothing has been written yet: opening every page again restores the buffer. */
    protect_runs(r, MPII_PAGE_GUARDED, r->open_prot, &done_runs);
    retire_slot(r);
    return rc;
}

int MPII_Pageguard_region_add(void *addr, size_t len, int nsub, const size_t * sub_off,
                              const size_t * sub_len, const void *const *fill,
                              MPIR_Pageguard_kind_t kind, int flags,
                              MPIR_Pageguard_region_t ** region)
{
    int rc, open_prot;
    MPIR_Pageguard_region_t *r = NULL;

    *region = NULL;
    rc = check_request(addr, len, nsub, sub_off, sub_len, fill, kind, flags, &open_prot);
    if (rc)
        goto fn_fail;
    r = region_new(addr, len, nsub, sub_off, sub_len, kind, flags, open_prot);
    if (!r) {
        rc = MPIR_PAGEGUARD_ERR_NOMEM;
        goto fn_fail;
    }
    if ((rc = plan_pages(r, fill)) || (rc = take_slot(r)) || (rc = arm(r, fill)))
        goto fn_fail;

    pthread_mutex_lock(&MPII_pageguard.lock);
    MPII_pageguard.regions++;
    pthread_mutex_unlock(&MPII_pageguard.lock);
    *region = r;
    return MPIR_PAGEGUARD_OK;

  fn_fail:
    count_refusal(rc);
    if (r)
        free_region(r);
    return rc;
}

void *MPIR_Pageguard_staging(MPIR_Pageguard_region_t * region)
{
    return region->staging;
}

int MPIR_Pageguard_sub_is_sync(MPIR_Pageguard_region_t * r, int k)
{
    if (k < 0 || k >= r->nsub || r->sub_len[k] == 0)
        return 0;
    size_t first, last;
    uintptr_t lo = r->base + r->sub_off[k], hi = lo + r->sub_len[k];
    if (!MPII_Pageguard_sub_pages(r, k, &first, &last))
        return 1;
    return lo < r->gbase + first * MPII_pageguard.pagesize ||
        hi > r->gbase + (last + 1) * MPII_pageguard.pagesize;
}

static _Atomic unsigned char *state_at(const MPIR_Pageguard_region_t * r, uintptr_t addr)
{
    return &r->page_state[(addr - r->gbase) / MPII_pageguard.pagesize];
}

static int given_up(int state)
{
    return state == MPII_PAGE_FORGOTTEN || state == MPII_PAGE_FORGETTING;
}

/* the start of the page after addr's, at most limit */
static uintptr_t next_page(uintptr_t addr, uintptr_t limit)
{
    uintptr_t next = addr - addr % MPII_pageguard.pagesize + MPII_pageguard.pagesize;
    return next < limit ? next : limit;
}

/* Write bytes [at, stop) of the buffer, guarded, through the landing descriptor: the kernel
 * writes for us and the pages stay protected. */
static int copy_guarded(MPIR_Pageguard_region_t * r, int fd, uintptr_t at, uintptr_t stop)
{
    const char *src = r->staging + (at - r->base);
    while (at < stop) {
        ssize_t n = MPII_Pageguard_raw_pwrite(fd, src, stop - at, (off_t) at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        at += (uintptr_t) n;
        src += n;
    }
    return 0;
}

/* Land [at, stop), guarded pages of sub-message [lo, hi): the run of whole pages inside the
 * sub-message may move instead (*moved); the rest is copied. */
static int land_guarded(MPIR_Pageguard_region_t * r, int fd, uintptr_t lo, uintptr_t hi,
                        uintptr_t at, uintptr_t stop, int *moved)
{
    size_t ps = MPII_pageguard.pagesize;
    uintptr_t mlo = round_up(at > lo ? at : lo, ps), mhi = round_down(stop < hi ? stop : hi, ps);
    if (mhi > mlo && MPII_Pageguard_move_run(r, mlo, mhi)) {
        *moved = 1;
        return copy_guarded(r, fd, at, mlo) || copy_guarded(r, fd, mhi, stop) ? -1 : 0;
    }
    return copy_guarded(r, fd, at, stop);
}

/* Claim the pages from at's up to limit for landing, stopping at one given up: the end of the
 * claimed run (at itself when at's page was given up). A claimed page can no longer be given up
 * (a thread reusing it as stack waits instead), so nothing lands in memory the program owns
 * again. A page already open is written as it is. */
static uintptr_t claim_run(MPIR_Pageguard_region_t * r, uintptr_t at, uintptr_t limit)
{
    /* A page of this thread's own stack below its live frames would take the frames of the
     * writes that land it, and a thread that lands cannot wait for itself: nobody can read
     * such a page any more (on_our_page), so it is given up instead of claimed. */
    uintptr_t live = (uintptr_t) __builtin_frame_address(0);
    while (at < limit) {
        uintptr_t next = next_page(at, limit);
        if (next <= live && MPII_Pageguard_on_own_stack(at, next) &&
            MPII_Pageguard_forget_page(r, (at - r->gbase) / MPII_pageguard.pagesize)) {
            MPII_Pageguard_wake(r);
            break;
        }
        unsigned char state = MPII_PAGE_GUARDED;
        if (!atomic_compare_exchange_strong(state_at(r, at), &state, MPII_PAGE_LANDING) &&
            given_up(state))
            break;
        at = next;
    }
    return at;
}

/* The claimed pages that did not move are guarded again: complete opens them. */
static void unclaim_run(MPIR_Pageguard_region_t * r, uintptr_t at, uintptr_t stop)
{
    for (; at < stop; at = next_page(at, stop)) {
        unsigned char landing = MPII_PAGE_LANDING;
        atomic_compare_exchange_strong(state_at(r, at), &landing, MPII_PAGE_GUARDED);
    }
}

/* Write bytes [lo, hi) of the buffer from staging. Inside the guardable pages the kernel
 * writes for us (the pages stay protected) or the pages move; outside, the memory is
 * ordinary. */
static int land(MPIR_Pageguard_region_t * r, uintptr_t lo, uintptr_t hi, int *moved)
{
    const char *src = r->staging + (lo - r->base);
    uintptr_t glo = lo > r->guard_lo ? lo : r->guard_lo;
    uintptr_t ghi = hi < r->guard_hi ? hi : r->guard_hi;
    if (glo >= ghi) {
        memcpy((void *) lo, src, hi - lo);
        return 0;
    }
    if (lo < glo)
        memcpy((void *) lo, src, glo - lo);
    if (ghi < hi)
        memcpy((void *) ghi, src + (ghi - lo), hi - ghi);
    int fd = MPII_Pageguard_landing_fd();
    if (fd < 0)
        return -1;
    /* in runs of pages that were not given up (normally one run) */
    for (uintptr_t at = glo; at < ghi;) {
        uintptr_t stop = claim_run(r, at, ghi);
        if (stop == at) {
            at = next_page(at, ghi);
            continue;
        }
        int rc = land_guarded(r, fd, lo, hi, at, stop, moved);
        unclaim_run(r, at, stop);
        if (rc != 0)
            return -1;
        at = stop;
    }
    return 0;
}

int MPIR_Pageguard_complete(MPIR_Pageguard_region_t * r, int k)
{
    int rc = MPIR_PAGEGUARD_OK;
    size_t ps = MPII_pageguard.pagesize;

    if (k < 0 || k >= r->nsub)
        return MPIR_PAGEGUARD_ERR_ARG;
    pthread_mutex_lock(&r->lock);
    if (atomic_load(&r->sub_done[k]))
        goto fn_exit;

    uintptr_t lo = r->base + r->sub_off[k], hi = lo + r->sub_len[k];
    if (r->opened_all) {
        /* the pages are the program's again (a failed operation): never write into them */
        atomic_store(&r->sub_done[k], 1);
        goto fn_exit;
    }
    int moved = 0;
    if (r->kind == MPIR_PAGEGUARD_RECV && land(r, lo, hi, &moved) != 0) {
        rc = MPIR_PAGEGUARD_ERR_LANDING;
        goto fn_exit;
    }
    atomic_store(&r->sub_done[k], 1);

    size_t first, last;
    if (!MPII_Pageguard_sub_pages(r, k, &first, &last))
        goto fn_exit;
    for (size_t p = first; p <= last; p++)
        r->page_pending[p]--;
    /* Open each run of pages that no longer waits for anything, then tell the waiters. */
    int released = moved;
    for (size_t p = first; p <= last;) {
        if (r->page_pending[p] != 0 ||
            atomic_load(&r->page_state[p]) != MPII_PAGE_GUARDED) {
            p++;
            continue;
        }
        size_t q = p;
        while (q <= last && r->page_pending[q] == 0 &&
               atomic_load(&r->page_state[q]) == MPII_PAGE_GUARDED)
            q++;
        if (MPII_Pageguard_mprotect(r->gbase + p * ps, (q - p) * ps, r->open_prot)) {
            rc = MPIR_PAGEGUARD_ERR_NOMEM;
            break;
        }
        /* page by page: one of our own stack may have been given up meanwhile, by a fault
         * of the mprotect call itself (forget_page counts it) */
        int opened = 0;
        for (size_t i = p; i < q; i++) {
            unsigned char guarded = MPII_PAGE_GUARDED;
            opened += atomic_compare_exchange_strong(&r->page_state[i], &guarded,
                                                     MPII_PAGE_RELEASED);
        }
        atomic_fetch_sub(&r->unreleased, opened);
        released = 1;
        p = q;
    }
    if (released)
        MPII_Pageguard_wake(r);

  fn_exit:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int MPII_Pageguard_forget_page(MPIR_Pageguard_region_t * r, size_t p)
{
    unsigned char guarded = MPII_PAGE_GUARDED;
    if (!atomic_compare_exchange_strong(&r->page_state[p], &guarded, MPII_PAGE_FORGETTING))
        return 0;
    /* unmapped, it would not matter; but madvise(MADV_DONTNEED) reports the same event and
     * keeps the mapping, and malloc reusing the memory must be able to write it. Should the
     * mprotect fail, the page stays closed and its next fault is passed on: a crash the
     * program sees, never a write into memory it owns again. */
    MPII_Pageguard_mprotect(r->gbase + p * MPII_pageguard.pagesize, MPII_pageguard.pagesize,
                            r->open_prot);
    atomic_store(&r->page_state[p], MPII_PAGE_FORGOTTEN);
    atomic_fetch_sub(&r->unreleased, 1);
    atomic_fetch_add(&MPII_pageguard.forgotten, 1);
    return 1;
}

size_t MPIR_Pageguard_forget_recv(const void *addr, size_t len)
{
    uintptr_t lo = (uintptr_t) addr, hi = lo + len;
    size_t ps = MPII_pageguard.pagesize, forgotten = 0;

    /* our own page move announces itself as an unmap (pageguard_move.c) */
    if (len == 0 || !atomic_load(&MPII_pageguard.on) || MPII_Pageguard_replacing)
        return 0;
    for (int i = 0; i < MPII_PAGEGUARD_MAX_REGIONS; i++) {
        MPII_Pageguard_slot_t *slot = &MPII_pageguard.slots[i];
        MPIR_Pageguard_region_t *r = MPII_Pageguard_slot_enter(slot);
        if (!r)
            continue;
        uintptr_t rend = r->gbase + r->npages * ps;
        size_t first = (lo > r->gbase ? lo - r->gbase + ps - 1 : 0) / ps;
        size_t end = lo < rend && hi > r->gbase ? ((hi < rend ? hi : rend) - r->gbase) / ps : 0;
        if (r->kind == MPIR_PAGEGUARD_RECV && first < end) {
            /* the lock orders us with landing (complete) and unregistering, which never wait
             * for the allocator while they hold it */
            pthread_mutex_lock(&r->lock);
            int n = 0;
            for (size_t p = first; p < end; p++)
                n += MPII_Pageguard_forget_page(r, p);
            if (n) {
                MPII_Pageguard_wake(r);
                forgotten += n;
            }
            pthread_mutex_unlock(&r->lock);
        }
        MPII_Pageguard_slot_leave(slot);
    }
    return forgotten;
}

int MPIR_Pageguard_all_released(MPIR_Pageguard_region_t * r)
{
    return atomic_load(&r->unreleased) == 0;
}

void MPIR_Pageguard_first_touch(MPIR_Pageguard_region_t * r, int k, int *order,
                                uint64_t * time_ns)
{
    int o = (k >= 0 && k < r->nsub) ? atomic_load(&r->touch_order[k]) : 0;
    *order = o > 0 ? o : 0;
    *time_ns = o > 0 ? r->touch_ns[k] : 0;
}

void MPIR_Pageguard_open_all(MPIR_Pageguard_region_t * r)
{
    size_t done_runs;
    pthread_mutex_lock(&r->lock);
    r->opened_all = 1;
    if (atomic_load(&r->unreleased) > 0) {
        protect_runs(r, MPII_PAGE_GUARDED, r->open_prot, &done_runs);
        /* counted page by page: a handler may be giving one up meanwhile (forget_page) */
        int opened = 0;
        for (size_t p = 0; p < r->npages; p++) {
            unsigned char guarded = MPII_PAGE_GUARDED;
            opened += atomic_compare_exchange_strong(&r->page_state[p], &guarded,
                                                     MPII_PAGE_RELEASED);
        }
        atomic_fetch_sub(&r->unreleased, opened);
        MPII_Pageguard_wake(r);
    }
    pthread_mutex_unlock(&r->lock);
}

int MPIR_Pageguard_unregister(MPIR_Pageguard_region_t * r)
{
    if (!r)
        return MPIR_PAGEGUARD_ERR_ARG;

    /* An abandoned region: open what is still protected and wake the waiters first, so that no
     * handler keeps this slot busy. */
    MPIR_Pageguard_open_all(r);
    retire_slot(r);
    free_region(r);
    return MPIR_PAGEGUARD_OK;
}

size_t MPIR_Pageguard_guarded_pages(const void *addr, size_t len, MPIR_Pageguard_touch_t touch)
{
    uintptr_t lo = (uintptr_t) addr, hi = lo + len;
    size_t ps = MPII_pageguard.pagesize, found = 0;

    /* our own page move announces itself as an unmap (pageguard_move.c) */
    if (len == 0 || !atomic_load(&MPII_pageguard.on) || MPII_Pageguard_replacing ||
        lo >= atomic_load(&MPII_pageguard.span_hi) || hi <= atomic_load(&MPII_pageguard.span_lo))
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
                if (!MPII_Pageguard_page_waits(atomic_load(&r->page_state[p])))
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

int MPIR_Pageguard_any_region(void)
{
    return atomic_load_explicit(&MPII_pageguard.live_regions, memory_order_relaxed) > 0;
}
