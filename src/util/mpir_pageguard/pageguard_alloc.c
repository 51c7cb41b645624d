/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The allocator's entry points that give a buffer back or move it, for buffers whose pages are
 * still guarded. The program may free or reallocate such a buffer at any time after the call
 * that guarded it returned:
 *  - free(): receive pages still waiting for data are forgotten (nobody wants that data, and
 *    the allocator may hand the memory to code that writes it while holding a lock the progress
 *    side needs); send pages are waited for (they are read until their data has left).
 *  - realloc(), reallocarray(): the contents go with the buffer, so every guarded page is waited
 *    for first (a large chunk moves by mremap, which would drop its pages otherwise).
 * Hooks installed by pageguard_hooks.c; with no region registered each costs one atomic load
 * before the process's definition (libc's, or a replacement allocator's). */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"


/* The bytes a chunk really spans; 0 when unknown. Only a chunk of at least a page can hold a
 * guarded page (guards cover whole pages inside one buffer). */
static size_t chunk_span(void *ptr)
{
    if (!MPII_Pageguard_libc.usable_size)
        return 0;
    size_t len = MPII_Pageguard_libc.usable_size(ptr);
    return len >= MPII_Pageguard_libc.pagesize ? len : 0;
}

static void settle_freed(void *ptr)
{
    size_t len = chunk_span(ptr);
    if (len) {
        MPIR_Pageguard_forget_recv(ptr, len);
        MPIR_Pageguard_guarded_pages(ptr, len, MPIR_PAGEGUARD_TOUCH_WRITE);
    }
}

static void settle_moved(void *ptr)
{
    size_t len = chunk_span(ptr);
    if (len)
        MPIR_Pageguard_guarded_pages(ptr, len, MPIR_PAGEGUARD_TOUCH_WRITE);
}

typedef void (*free_fn) (void *);
typedef void *(*realloc_fn) (void *, size_t);
typedef void *(*reallocarray_fn) (void *, size_t, size_t);

void MPII_Pageguard_hook_free(void *ptr)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    if (ptr && MPIR_Pageguard_any_region())
        settle_freed(ptr);
    MPII_LIBC(FREE, free_fn) (ptr);
}

void *MPII_Pageguard_hook_realloc(void *ptr, size_t size)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    if (ptr && MPIR_Pageguard_any_region())
        settle_moved(ptr);
    return MPII_LIBC(REALLOC, realloc_fn) (ptr, size);
}

void *MPII_Pageguard_hook_reallocarray(void *ptr, size_t nmemb, size_t size)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    if (ptr && MPIR_Pageguard_any_region())
        settle_moved(ptr);
    return MPII_LIBC(REALLOCARRAY, reallocarray_fn) (ptr, nmemb, size);
}
