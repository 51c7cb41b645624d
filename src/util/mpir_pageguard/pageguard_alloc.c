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
 * Defined here, they come before libc's in the process's symbol order (the application links
 * libmpi before libc); MPIR_Pageguard_alloc_interposed says whether they do. With no region
 * registered each costs one atomic load. The functions called are the next definitions after
 * ours: libc's, or a replacement allocator linked after libmpi. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>

#define MPII_PAGEGUARD_EXPORT __attribute__ ((visibility("default")))

/* glibc's own entry points: used only while dlsym runs (it may allocate) */
extern void __libc_free(void *ptr);
extern void *__libc_realloc(void *ptr, size_t size);

static struct {
    void (*free) (void *);
    void *(*realloc) (void *, size_t);
    void *(*reallocarray) (void *, size_t, size_t);
    size_t(*usable_size) (void *);
    _Atomic int resolved;
} next;

static void resolve(void)
{
    next.free = (void (*)(void *)) dlsym(RTLD_NEXT, "free");
    next.realloc = (void *(*)(void *, size_t)) dlsym(RTLD_NEXT, "realloc");
    next.reallocarray = (void *(*)(void *, size_t, size_t)) dlsym(RTLD_NEXT, "reallocarray");
    next.usable_size = (size_t(*)(void *)) dlsym(RTLD_NEXT, "malloc_usable_size");
    atomic_store(&next.resolved, 1);
}

/* Before any thread of the program runs: no race on the pointers afterwards. */
__attribute__ ((constructor))
static void MPII_Pageguard_alloc_resolve(void)
{
    resolve();
}

static inline int any_guards(void)
{
    return atomic_load_explicit(&MPII_pageguard.live_regions, memory_order_relaxed) > 0;
}

/* The bytes a chunk really spans; 0 when unknown. Only a chunk of at least a page can hold a
 * guarded page (guards cover whole pages inside one buffer). */
static size_t chunk_span(void *ptr)
{
    if (!atomic_load(&next.resolved) || !next.usable_size)
        return 0;
    size_t len = next.usable_size(ptr);
    return len >= MPII_pageguard.pagesize ? len : 0;
}

MPII_PAGEGUARD_EXPORT void free(void *ptr)
{
    if (ptr && any_guards()) {
        size_t len = chunk_span(ptr);
        if (len) {
            MPIR_Pageguard_forget_recv(ptr, len);
            MPIR_Pageguard_guarded_pages(ptr, len, MPIR_PAGEGUARD_TOUCH_WRITE);
        }
    }
    if (atomic_load(&next.resolved) && next.free)
        next.free(ptr);
    else
        __libc_free(ptr);
}

static void settle_moved(void *ptr)
{
    if (ptr && any_guards()) {
        size_t len = chunk_span(ptr);
        if (len)
            MPIR_Pageguard_guarded_pages(ptr, len, MPIR_PAGEGUARD_TOUCH_WRITE);
    }
}

MPII_PAGEGUARD_EXPORT void *realloc(void *ptr, size_t size)
{
    settle_moved(ptr);
    if (atomic_load(&next.resolved) && next.realloc)
        return next.realloc(ptr, size);
    return __libc_realloc(ptr, size);
}

MPII_PAGEGUARD_EXPORT void *reallocarray(void *ptr, size_t nmemb, size_t size)
{
    if (atomic_load(&next.resolved) && next.reallocarray) {
        settle_moved(ptr);
        return next.reallocarray(ptr, nmemb, size);
    }
    if (size && nmemb > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(ptr, nmemb * size);
}

int MPIR_Pageguard_alloc_interposed(void)
{
    return dlsym(RTLD_DEFAULT, "free") == (void *) free &&
        dlsym(RTLD_DEFAULT, "realloc") == (void *) realloc;
}
