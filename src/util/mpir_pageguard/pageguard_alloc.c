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
 * ours (pageguard_libc.c): libc's, or a replacement allocator placed before or after libmpi. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

/* The next definitions (libc's, or a replacement allocator; pageguard_libc.c), looked up
 * before the program's threads start, or at first use by a constructor that runs before ours.
 * malloc_usable_size is used only when it comes from the same object as free. A pointer freed
 * while dlsym itself runs (it may allocate) cannot be handed to anyone safely: it is kept. */
static struct {
    void (*free) (void *);
    void *(*realloc) (void *, size_t);
    void *(*reallocarray) (void *, size_t, size_t);
    size_t(*usable_size) (void *);
    _Atomic int resolved;
} libc_alloc;
static __thread int resolving __attribute__ ((tls_model("initial-exec")));

static void resolve(void)
{
    Dl_info free_obj, size_obj;
    resolving = 1;
    libc_alloc.free = (void (*)(void *)) MPII_Pageguard_next_definition("free");
    libc_alloc.realloc = (void *(*)(void *, size_t)) MPII_Pageguard_next_definition("realloc");
    libc_alloc.reallocarray = (void *(*)(void *, size_t, size_t))
        MPII_Pageguard_next_definition("reallocarray");
    void *usable = MPII_Pageguard_next_definition("malloc_usable_size");
    if (usable && libc_alloc.free && dladdr(usable, &size_obj) &&
        dladdr((void *) libc_alloc.free, &free_obj) && size_obj.dli_fbase == free_obj.dli_fbase)
        libc_alloc.usable_size = (size_t(*)(void *)) usable;
    resolving = 0;
    atomic_store(&libc_alloc.resolved, 1);
}

__attribute__ ((constructor))
static void resolve_libc_alloc(void)
{
    resolve();
}

/* 1 when the call may go on to the next definition */
static inline int ready(void)
{
    if (atomic_load_explicit(&libc_alloc.resolved, memory_order_acquire))
        return 1;
    if (resolving)
        return 0;
    resolve();
    return 1;
}

/* The bytes a chunk really spans; 0 when unknown. Only a chunk of at least a page can hold a
 * guarded page (guards cover whole pages inside one buffer). */
static size_t chunk_span(void *ptr)
{
    if (!libc_alloc.usable_size)
        return 0;
    size_t len = libc_alloc.usable_size(ptr);
    return len >= (size_t) sysconf(_SC_PAGESIZE) ? len : 0;
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

/* The definitions the program calls; static names, so that MPIR_Pageguard_alloc_interposed can
 * compare addresses without going through libmpi's own symbol lookup. */
static void pageguard_free(void *ptr)
{
    if (!ready() || !libc_alloc.free)
        return;
    if (ptr && MPIR_Pageguard_any_region())
        settle_freed(ptr);
    libc_alloc.free(ptr);
}

static void *pageguard_realloc(void *ptr, size_t size)
{
    if (!ready() || !libc_alloc.realloc) {
        errno = ENOMEM;
        return NULL;
    }
    if (ptr && MPIR_Pageguard_any_region())
        settle_moved(ptr);
    return libc_alloc.realloc(ptr, size);
}

static void *pageguard_reallocarray(void *ptr, size_t nmemb, size_t size)
{
    if (!ready() || !libc_alloc.realloc) {
        errno = ENOMEM;
        return NULL;
    }
    if (ptr && MPIR_Pageguard_any_region())
        settle_moved(ptr);
    if (libc_alloc.reallocarray)
        return libc_alloc.reallocarray(ptr, nmemb, size);
    if (size && nmemb > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return libc_alloc.realloc(ptr, nmemb * size);
}

MPII_PAGEGUARD_EXPORT void free(void *ptr) __attribute__ ((alias("pageguard_free")));
MPII_PAGEGUARD_EXPORT void *realloc(void *ptr, size_t size)
    __attribute__ ((alias("pageguard_realloc")));
MPII_PAGEGUARD_EXPORT void *reallocarray(void *ptr, size_t nmemb, size_t size)
    __attribute__ ((alias("pageguard_reallocarray")));

int MPIR_Pageguard_alloc_interposed(void)
{
    return dlsym(RTLD_DEFAULT, "free") == (void *) pageguard_free &&
        dlsym(RTLD_DEFAULT, "realloc") == (void *) pageguard_realloc;
}
