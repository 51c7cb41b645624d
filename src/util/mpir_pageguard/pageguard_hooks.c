/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Process-wide interposition, opt-in: while T-NBC is on for the job, the C library functions
 * of pageguard_libc.h are redirected to the page guards' hooks in every loaded object except
 * libmpi itself and the device's libraries, by rewriting the objects' GOT slots
 * (pageguard_patch.c). libmpi defines none of those names, so whatever order the program, the
 * C library and libmpi were loaded in (mpicc, cc with libmpi behind another library, dlopen,
 * Python), the program's calls reach the hooks, and our own calls never do. Objects loaded
 * later are patched at the next registration; removal writes every slot back. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"
#include "pageguard_patch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static MPII_Pageguard_patch_t patches[MPII_LIBC_COUNT];
static void *const hooks[MPII_LIBC_COUNT] = {
#define MPII_PAGEGUARD_LIBC_HOOK(id_, name_, hook_) (void *) MPII_Pageguard_hook_##hook_,
    MPII_PAGEGUARD_LIBC_FUNCS(MPII_PAGEGUARD_LIBC_HOOK)
#undef MPII_PAGEGUARD_LIBC_HOOK
};

static struct {
    pthread_mutex_t lock;
    int npatches;
    int (*device_owns) (const char *path);
    unsigned long long generation;      /* of the loaded objects when last patched */
    MPII_Pageguard_patch_counts_t counts;
    atomic_int installed;
} hooked = {.lock = PTHREAD_MUTEX_INITIALIZER };

static int skip_object(const char *path, uintptr_t lo, uintptr_t hi, void *arg)
{
    (void) arg;
    uintptr_t self = (uintptr_t) skip_object;
    if (self >= lo && self < hi) {
        MPII_Pageguard_self_lo = lo;
        MPII_Pageguard_self_size = hi - lo;
        return 1;
    }
    return hooked.device_owns && path[0] && hooked.device_owns(path);
}

static void patch_all(MPII_Pageguard_patch_mode_t mode)
{
    MPII_Pageguard_patch_counts_t counts;
    hooked.generation = MPII_Pageguard_patch_generation();
    MPII_Pageguard_patch_objects(patches, hooked.npatches, mode, skip_object, NULL, &counts);
    hooked.counts = counts;
}

int MPIR_Pageguard_hooks_install(int (*device_owns) (const char *path), const char **why)
{
    int rc = 0;
    pthread_mutex_lock(&hooked.lock);
    if (atomic_load(&hooked.installed))
        goto fn_exit;
#if !defined(__x86_64__) && !defined(__aarch64__)
    *why = "this processor's relocations are not supported (x86-64 and AArch64 are)";
    rc = -1;
    goto fn_exit;
#endif
    MPII_Pageguard_libc_resolve();
    hooked.npatches = 0;
    for (int i = 0; i < MPII_LIBC_COUNT; i++) {
        /* a function the C library lacks cannot be called by anybody */
        if (!MPII_Pageguard_libc.callee[i])
            continue;
        patches[hooked.npatches++] = (MPII_Pageguard_patch_t) {
        .name = MPII_Pageguard_libc.name[i],.hook = hooks[i],
                .bound = MPII_Pageguard_libc.bound[i],.callee = MPII_Pageguard_libc.callee[i]};
    }
    hooked.device_owns = device_owns;
    patch_all(MPII_PAGEGUARD_PATCH_INSTALL);
    if (hooked.counts.failed) {
        patch_all(MPII_PAGEGUARD_PATCH_REMOVE);
        *why = "some objects' GOT slots could not be made writable";
        rc = -1;
        goto fn_exit;
    }
    atomic_store(&hooked.installed, 1);

  fn_exit:
    pthread_mutex_unlock(&hooked.lock);
    return rc;
}

void MPIR_Pageguard_hooks_refresh(void)
{
    if (!atomic_load_explicit(&hooked.installed, memory_order_acquire) ||
        MPII_Pageguard_patch_generation() == hooked.generation)
        return;
    pthread_mutex_lock(&hooked.lock);
    if (atomic_load(&hooked.installed))
        patch_all(MPII_PAGEGUARD_PATCH_INSTALL);
    pthread_mutex_unlock(&hooked.lock);
}

void MPIR_Pageguard_hooks_remove(void)
{
    pthread_mutex_lock(&hooked.lock);
    if (atomic_load(&hooked.installed)) {
        patch_all(MPII_PAGEGUARD_PATCH_REMOVE);
        atomic_store(&hooked.installed, 0);
    }
    pthread_mutex_unlock(&hooked.lock);
}

int MPIR_Pageguard_hooks_installed(void)
{
    return atomic_load(&hooked.installed);
}

void MPIR_Pageguard_hooks_get_stats(MPIR_Pageguard_hooks_stats_t * stats)
{
    pthread_mutex_lock(&hooked.lock);
    stats->objects = hooked.counts.objects;
    stats->slots = hooked.counts.slots;
    stats->foreign = hooked.counts.foreign;
    pthread_mutex_unlock(&hooked.lock);
    stats->calls_from_self = atomic_load(&MPII_Pageguard_self_calls);
}

int MPIR_Pageguard_alloc_interposed(void)
{
    return atomic_load(&hooked.installed) && MPII_Pageguard_libc.callee[MPII_LIBC_FREE] &&
        MPII_Pageguard_libc.callee[MPII_LIBC_REALLOC];
}

void *MPIR_Pageguard_hook(const char *name)
{
    if (!MPII_Pageguard_libc.callee[MPII_LIBC_FREE])
        MPII_Pageguard_libc_resolve();
    for (int i = 0; i < MPII_LIBC_COUNT; i++) {
        if (strcmp(MPII_Pageguard_libc.name[i], name) == 0)
            return MPII_Pageguard_libc.callee[i] ? hooks[i] : NULL;
    }
    return NULL;
}
