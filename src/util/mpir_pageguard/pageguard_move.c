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
 * off unless config.move_min asks for it. Each range must be one private mapping, checked with
 * PROCMAP_QUERY (Linux 6.11) before the move: older kernels (which, moreover, could unmap the
 * target before failing on a source of two mappings) never move. */

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

/* Moves cut the buffer's mapping around each moved run: stop while the process's mappings stay
 * under a quarter of vm.max_map_count, counted again after this many moves. */
#define MPII_PAGEGUARD_MOVES_PER_COUNT 256

__thread int MPII_Pageguard_replacing __attribute__ ((tls_model("initial-exec")));

static _Atomic unsigned long moves_since_count;

static long count_lines(const char *path, long limit)
{
    char buf[4096];
    long n = 0;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (n < limit && ((got = read(fd, buf, sizeof(buf))) > 0 || (got < 0 && errno == EINTR)))
        for (ssize_t i = 0; i < got; i++)
            n += (buf[i] == '\n');
    close(fd);
    return n;
}

static int room_for_mappings(void)
{
    if (atomic_fetch_add(&moves_since_count, 1) % MPII_PAGEGUARD_MOVES_PER_COUNT)
        return 1;
    char buf[32] = { 0 };
    long max = 65530;
    int fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, buf, sizeof(buf) - 1) > 0)
            max = atol(buf);
        close(fd);
    }
    long maps = count_lines("/proc/self/maps", max);
    return maps >= 0 && maps < max / 4;
}

/* [lo, hi) lies in one private mapping with protection prot. */
static int one_private_mapping(uintptr_t lo, uintptr_t hi, int prot)
{
    uintptr_t start, end;
    int p, shared;
    return MPII_Pageguard_mapping_at(lo, &start, &end, &p, &shared) == 1 && start <= lo &&
        hi <= end && p == prot && !shared;
}

static int move(void *from, size_t len, void *to)
{
    return (void *) syscall(SYS_mremap, from, len, len,
                            MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to) == to ? 0 : -1;
}

/* The old pages of [lo, lo + len) go to the region's spare reservation (a PROT_NONE mapping the
 * size of the span, made at the first move), at the same offset. */
static char *spare_for(MPIR_Pageguard_region_t * r, uintptr_t lo)
{
    size_t span = r->npages * MPII_pageguard.pagesize;
    if (!r->spare) {
        void *m = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        r->spare = m;
    }
    return r->spare + (lo - r->gbase);
}

void MPII_Pageguard_move_done(MPIR_Pageguard_region_t * r)
{
    if (r->spare)
        munmap(r->spare, r->npages * MPII_pageguard.pagesize);
    r->spare = NULL;
}

static void unclaim(MPIR_Pageguard_region_t * r, size_t first, size_t end)
{
    for (size_t p = first; p < end; p++)
        atomic_store(&r->page_state[p], MPII_PAGE_GUARDED);
}

int MPII_Pageguard_move_run(MPIR_Pageguard_region_t * r, uintptr_t lo, uintptr_t hi)
{
    size_t ps = MPII_pageguard.pagesize, len = hi - lo;
    size_t first = (lo - r->gbase) / ps, end = (hi - r->gbase) / ps, claimed;
    char *src = r->staging + (lo - r->base);

    if (!(r->flags & MPIR_PAGEGUARD_MOVE) || r->no_moves || !MPII_pageguard.config.move_min ||
        len < MPII_pageguard.config.move_min || !MPII_pageguard.config.pages_replaced ||
        atomic_load(&MPII_pageguard.moves_off) || r->open_prot != (PROT_READ | PROT_WRITE))
        return 0;
    /* a reader now waits as for a guarded page; a free() can no longer forget these pages */
    for (claimed = first; claimed < end; claimed++) {
        unsigned char guarded = MPII_PAGE_GUARDED;
        if (!atomic_compare_exchange_strong(&r->page_state[claimed], &guarded, MPII_PAGE_MOVING))
            break;
    }
    if (claimed < end || !one_private_mapping(lo, hi, PROT_NONE) ||
        !one_private_mapping((uintptr_t) src, (uintptr_t) src + len, PROT_READ | PROT_WRITE) ||
        !room_for_mappings()) {
        unclaim(r, first, claimed);
        return 0;
    }
    /* from here on, what the network layer registered of either range is stale */
    MPII_Pageguard_replacing = 1;
    int told = MPII_pageguard.config.pages_replaced((void *) lo, len) &&
        MPII_pageguard.config.pages_replaced(src, len);
    MPII_Pageguard_replacing = 0;
    if (!told) {
        atomic_store(&MPII_pageguard.moves_off, 1);
        unclaim(r, first, end);
        return 0;
    }
    char *spare = spare_for(r, lo);
    if (!spare || move((void *) lo, len, spare) != 0) {
        r->no_moves = 1;
        unclaim(r, first, end);
        return 0;
    }
    if (move(src, len, (void *) lo) != 0) {
        /* The range must stay mapped and protected: its old pages back, or fresh ones (its old
         * bytes are all to be overwritten by the copy that follows). */
        r->no_moves = 1;
        if (move(spare, len, (void *) lo) != 0 &&
            mmap((void *) lo, len, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            != (void *) lo)
            atomic_store(&MPII_pageguard.moves_off, 1);
        unclaim(r, first, end);
        return 0;
    }
    /* staging's range is empty now: the old pages fill it, open again (else it faults in fresh
     * pages when next written, and is not kept for later regions) */
    if (move(spare, len, src) != 0 ||
        MPII_Pageguard_mprotect((uintptr_t) src, len, PROT_READ | PROT_WRITE) != 0)
        r->staging_spoiled = 1;
    for (size_t p = first; p < end; p++)
        atomic_store(&r->page_state[p], MPII_PAGE_RELEASED);
    atomic_fetch_sub(&r->unreleased, (int) (end - first));
    atomic_fetch_add(&MPII_pageguard.pages_moved, end - first);
    atomic_fetch_add(&MPII_pageguard.changes, 1);
    return 1;
}
