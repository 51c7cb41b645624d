/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Landing by moving pages: the whole pages of a complete sub-message move from staging into the
 * buffer instead of being copied through /proc/self/mem, which copies twice in the kernel (a
 * bounce page, then the target) and looks up every page. Every byte of a guarded page belongs
 * to a sub-message (pageguard_region.c), and these pages to this one only, so the buffer's old
 * contents do not matter: the pages are swapped, in three moves (mremap with MREMAP_FIXED and
 * MREMAP_DONTUNMAP, so that no range is ever left unmapped for another thread's mmap to take):
 *     buffer -> spare     the old pages out; the buffer's range stays mapped, protected, empty
 *     staging -> buffer   the received pages in, open (they carry staging's protection)
 *     spare -> staging    the old pages become staging's, which the network fills next time
 *                         without a page fault and a zeroed page per page (measured: leaving
 *                         staging empty cost as much as the copy it saved)
 *
 * Safe only where nothing else holds the old pages: a registration cache is told through
 * config.pages_replaced, but a pin or attribute that another library or the program put on the
 * buffer (ibv_reg_mr, cudaHostRegister, mlock, madvise, NUMA policy) does not follow; hence
 * off unless config.move_min asks for it. Each range must be one private anonymous mapping,
 * checked before the move (PROCMAP_QUERY from Linux 6.11, else the maps text). The
 * kernel may unmap a move's target and then fail (out of memory, commit limits): such a hole
 * is filled again at once (MAP_FIXED_NOREPLACE, never over another thread's new mapping), a
 * reader meanwhile waits (the handler takes a SEGV_MAPERR on a landing page for ours), and a
 * hole that could not be filled is never unmapped later. Pages of the moving thread's own stack
 * (it could fault on them itself) and of the main thread's growing stack never move. Only raw
 * system calls: no memory hooks (UCX's) or wrappers see the moves, which the network layer
 * is told of through config.pages_replaced instead. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* mremap's flags */
#endif
#include "pageguard_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4      /* Linux 5.7 */
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000    /* Linux 4.17 */
#endif

/* Moves cut the mappings around each moved run: no moves while the process has more than a
 * quarter of vm.max_map_count mappings, counted again after this many moves. */
#define MPII_PAGEGUARD_MOVES_PER_COUNT 256

__thread int MPII_Pageguard_replacing __attribute__ ((tls_model("initial-exec")));

static _Atomic unsigned long moves_since_count;
static _Atomic int too_many_maps;

static long count_newlines(const char *path, long limit)
{
    char buf[1024];
    long n = 0, got;
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (n < limit && ((got = syscall(SYS_read, (int) fd, buf, sizeof(buf))) > 0 ||
                         (got < 0 && errno == EINTR)))
        for (long i = 0; i < got; i++)
            n += (buf[i] == '\n');
    syscall(SYS_close, (int) fd);
    return n;
}

static int room_for_mappings(void)
{
    if (atomic_fetch_add(&moves_since_count, 1) % MPII_PAGEGUARD_MOVES_PER_COUNT == 0) {
        char buf[32] = { 0 };
        long max = 65530;
        long fd = syscall(SYS_openat, AT_FDCWD, "/proc/sys/vm/max_map_count",
                          O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (syscall(SYS_read, (int) fd, buf, sizeof(buf) - 1) > 0)
                max = atol(buf);
            syscall(SYS_close, (int) fd);
        }
        long maps = count_newlines("/proc/self/maps", max);
        atomic_store(&too_many_maps, maps < 0 || maps >= max / 4);
    }
    return !atomic_load(&too_many_maps);
}

/* [lo, hi) lies in one private anonymous mapping with protection prot, not the main thread's
 * stack (its growing mapping must stay whole). */
static int one_plain_mapping(uintptr_t lo, uintptr_t hi, int prot)
{
    uintptr_t start, end;
    int p, shared;
    return MPII_Pageguard_mapping_at(lo, &start, &end, &p, &shared) == 1 && start <= lo &&
        hi <= end && p == prot && !shared &&
        !(MPII_pageguard.main_stack >= start && MPII_pageguard.main_stack < end);
}

static int move(void *from, size_t len, void *to)
{
    return (void *) syscall(SYS_mremap, from, len, len,
                            MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to) == to ? 0 : -1;
}

static void *map_anon(void *at, size_t len, int prot, int flags)
{
    return (void *) syscall(SYS_mmap, at, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
}

/* After a failed move [at, at + len) may be a hole: map it again, unless another thread
 * already has. 0 when the range is mapped by us. */
static int fill_hole(void *at, size_t len, int prot)
{
    void *m = map_anon(at, len, prot, MAP_FIXED_NOREPLACE);
    if (m == at)
        return 0;
    if (m != MAP_FAILED)
        syscall(SYS_munmap, m, len);    /* an old kernel ignored the flag */
    uintptr_t start, end;
    int p, shared;
    /* still ours (the move failed before it unmapped anything) */
    return MPII_Pageguard_mapping_at((uintptr_t) at, &start, &end, &p, &shared) == 1 &&
        start <= (uintptr_t) at && (uintptr_t) at + len <= end ? 0 : -1;
}

/* The old pages of [lo, lo + len) go to the region's spare reservation (a PROT_NONE mapping the
 * size of the span, made at the first move), at the same offset. */
static char *spare_for(MPIR_Pageguard_region_t * r, uintptr_t lo)
{
    size_t span = r->npages * MPII_pageguard.pagesize;
    if (!r->spare) {
        void *m = map_anon(NULL, span, PROT_NONE, MAP_NORESERVE);
        if (m == MAP_FAILED)
            return NULL;
        r->spare = m;
    }
    return r->spare + (lo - r->gbase);
}

void MPII_Pageguard_move_done(MPIR_Pageguard_region_t * r)
{
    if (r->spare && !r->spare_lost)
        syscall(SYS_munmap, r->spare, r->npages * MPII_pageguard.pagesize);
    r->spare = NULL;
}

/* A move failed: every range must be mapped as before (the buffer's protected); what cannot be
 * is given up for good (no more moves, never unmapped by us). */
static void recover(MPIR_Pageguard_region_t * r, uintptr_t lo, char *spare, char *src,
                    size_t len)
{
    r->no_moves = 1;
    if (fill_hole((void *) lo, len, PROT_NONE) != 0) {
        /* the buffer's pages are gone and another mapping took their place */
        atomic_store(&MPII_pageguard.moves_off, 1);
        if (MPII_pageguard.config.on_abort)
            MPII_pageguard.config.on_abort((void *) lo);
        abort();
    }
    if (spare && fill_hole(spare, len, PROT_NONE) != 0)
        r->spare_lost = 1;
    if (fill_hole(src, len, PROT_READ | PROT_WRITE) != 0)
        r->staging_lost = 1;
}

int MPII_Pageguard_move_run(MPIR_Pageguard_region_t * r, uintptr_t lo, uintptr_t hi)
{
    size_t ps = MPII_pageguard.pagesize, len = hi - lo;
    size_t first = (lo - r->gbase) / ps, end = (hi - r->gbase) / ps;
    char *src = r->staging + (lo - r->base);

    if (!(r->flags & MPIR_PAGEGUARD_MOVE) || r->no_moves || !MPII_pageguard.config.move_min ||
        len < MPII_pageguard.config.move_min || !MPII_pageguard.config.pages_replaced ||
        atomic_load(&MPII_pageguard.moves_off) || r->open_prot != (PROT_READ | PROT_WRITE) ||
        MPII_Pageguard_on_own_stack(lo, hi))
        return 0;
    for (size_t p = first; p < end; p++)
        if (atomic_load(&r->page_state[p]) != MPII_PAGE_LANDING)
            return 0;
    char *spare = NULL;
    if (!one_plain_mapping(lo, hi, PROT_NONE) ||
        !one_plain_mapping((uintptr_t) src, (uintptr_t) src + len, PROT_READ | PROT_WRITE) ||
        !room_for_mappings() || !(spare = spare_for(r, lo)))
        return 0;
    /* from here on, what the network layer registered of either range is stale */
    MPII_Pageguard_replacing = 1;
    int told = MPII_pageguard.config.pages_replaced((void *) lo, len) &&
        MPII_pageguard.config.pages_replaced(src, len);
    MPII_Pageguard_replacing = 0;
    if (!told) {
        atomic_store(&MPII_pageguard.moves_off, 1);
        return 0;
    }
    if (move((void *) lo, len, spare) != 0) {
        recover(r, lo, spare, src, len);
        return 0;
    }
    if (move(src, len, (void *) lo) != 0) {
        /* the old pages back if they can go; the copy that follows overwrites every byte */
        if (move(spare, len, (void *) lo) != 0)
            recover(r, lo, spare, src, len);
        else
            recover(r, lo, NULL, src, len);
        return 0;
    }
    /* staging's range is empty now: the old pages fill it, open again (else it faults in fresh
     * pages when next written, and is not kept for later regions) */
    if (move(spare, len, src) != 0 ||
        MPII_Pageguard_mprotect((uintptr_t) src, len, PROT_READ | PROT_WRITE) != 0) {
        r->staging_spoiled = 1;
        if (fill_hole(spare, len, PROT_NONE) != 0)
            r->spare_lost = 1;
        if (fill_hole(src, len, PROT_READ | PROT_WRITE) != 0)
            r->staging_lost = 1;
    }
    for (size_t p = first; p < end; p++)
        atomic_store(&r->page_state[p], MPII_PAGE_RELEASED);
    atomic_fetch_sub(&r->unreleased, (int) (end - first));
    atomic_fetch_add(&MPII_pageguard.pages_moved, end - first);
    atomic_fetch_add(&MPII_pageguard.changes, 1);
    return 1;
}
