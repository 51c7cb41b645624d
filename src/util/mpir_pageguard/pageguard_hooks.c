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

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

_Static_assert(MPII_LIBC_COUNT <= MPII_PAGEGUARD_PATCH_MAX, "too many hooks for one walk");

static MPII_Pageguard_patch_t patches[MPII_LIBC_COUNT];
static int patch_id[MPII_LIBC_COUNT];   /* the function (MPII_LIBC_*) of each patch */

static struct {
    pthread_mutex_t lock;
    int npatches;
    int (*device_owns) (const char *path);
    atomic_ullong generation;   /* of the loaded objects when last patched */
    MPII_Pageguard_patch_counts_t counts;
    atomic_int installed;
    atomic_int incomplete;      /* an object loaded later has a call we must see and miss */
    char why[256];
} hooked = {.lock = PTHREAD_MUTEX_INITIALIZER };

/* Without the hooks of these, T-NBC keeps guarded send buffers out of the allocator's heap
 * instead (tnbc_init.c); every other function not marked optional must reach its hook. */
static int is_alloc(int id)
{
    return id == MPII_LIBC_FREE || id == MPII_LIBC_REALLOC || id == MPII_LIBC_REALLOCARRAY;
}

static int is_needed(int id)
{
    return !is_alloc(id) && !MPII_Pageguard_libc.optional[id];
}

/* the first object in which another interposer holds a slot of function id, or NULL */
static const char *foreign_object_of(int id)
{
    for (int i = 0; i < hooked.npatches; i++) {
        if (patch_id[i] == id)
            return hooked.counts.foreign_object[i];
    }
    return NULL;
}

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

/* 0, or -1 with hooked.why when a signal or I/O call of some object cannot reach its hook */
static int patch_all(MPII_Pageguard_patch_mode_t mode)
{
    MPII_Pageguard_patch_counts_t counts;
    atomic_store(&hooked.generation, MPII_Pageguard_patch_generation());
    int rc = MPII_Pageguard_patch_objects(patches, hooked.npatches, mode, skip_object, NULL,
                                          &counts);
    hooked.counts = counts;
    if (mode == MPII_PAGEGUARD_PATCH_REMOVE)
        return 0;
    if (rc != 0 || counts.failed) {
        snprintf(hooked.why, sizeof(hooked.why), "%s", rc == -2 ?
                 "this processor's relocations are not supported (x86-64 and AArch64 are)" :
                 rc != 0 ? "the list of loaded objects could not be made" :
                 "some objects' GOT slots could not be made writable");
        return -1;
    }
    for (int i = 0; counts.foreign && i < hooked.npatches; i++) {
        const char *object = counts.foreign_object[i];
        if (object && is_needed(patch_id[i])) {
            snprintf(hooked.why, sizeof(hooked.why), "the GOT slot of %s() in %s was rewritten "
                     "by another interposer", patches[i].name, object[0] ? object : "the program");
            return -1;
        }
    }
    return 0;
}

int MPIR_Pageguard_hooks_install(int (*device_owns) (const char *path), const char **why)
{
    int rc = 0;
    pthread_mutex_lock(&hooked.lock);
    if (atomic_load(&hooked.installed))
        goto fn_exit;
    MPII_Pageguard_libc_resolve();
    hooked.npatches = 0;
    for (int i = 0; i < MPII_LIBC_COUNT; i++) {
        const char *name = MPII_Pageguard_libc.name[i];
        if (MPII_Pageguard_libc.program_defines[i] && is_needed(i)) {
            snprintf(hooked.why, sizeof(hooked.why), "the program defines %s() itself", name);
            *why = hooked.why;
            rc = -1;
            goto fn_exit;
        }
        /* a function the C library lacks cannot be called by anybody; a program's own function
         * of an optional name may not even have its signature */
        if (!MPII_Pageguard_libc.callee[i] ||
            (MPII_Pageguard_libc.program_defines[i] && !is_alloc(i)))
            continue;
        patch_id[hooked.npatches] = i;
        patches[hooked.npatches++] = (MPII_Pageguard_patch_t) {
        .name = name,.hook = MPII_Pageguard_hooks[i],
                .bound = MPII_Pageguard_libc.bound[i],.callee = MPII_Pageguard_libc.callee[i]};
    }
    hooked.device_owns = device_owns;
    if (patch_all(MPII_PAGEGUARD_PATCH_INSTALL) != 0) {
        patch_all(MPII_PAGEGUARD_PATCH_REMOVE);
        *why = hooked.why;
        rc = -1;
        goto fn_exit;
    }
    /* the slots point into libmpi until MPI_Finalize writes them back: a dlclose of libmpi
     * before that must not unmap the hooks */
    Dl_info self;
    if (dladdr((void *) skip_object, &self) && self.dli_fname)
        dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    atomic_store(&hooked.installed, 1);

  fn_exit:
    pthread_mutex_unlock(&hooked.lock);
    return rc;
}

int MPIR_Pageguard_hooks_refresh(int force)
{
    if (!atomic_load_explicit(&hooked.installed, memory_order_acquire))
        return 0;
    if (force || MPII_Pageguard_patch_generation() != atomic_load(&hooked.generation)) {
        pthread_mutex_lock(&hooked.lock);
        if (atomic_load(&hooked.installed) && patch_all(MPII_PAGEGUARD_PATCH_INSTALL) != 0)
            atomic_store(&hooked.incomplete, 1);
        pthread_mutex_unlock(&hooked.lock);
    }
    return atomic_load(&hooked.incomplete) ? -1 : 0;
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
    const MPII_Pageguard_libc_t *libc = &MPII_Pageguard_libc;
    return atomic_load(&hooked.installed) && libc->usable_size &&
        libc->callee[MPII_LIBC_FREE] && !libc->program_defines[MPII_LIBC_FREE] &&
        libc->callee[MPII_LIBC_REALLOC] && !libc->program_defines[MPII_LIBC_REALLOC] &&
        !foreign_object_of(MPII_LIBC_FREE) && !foreign_object_of(MPII_LIBC_REALLOC) &&
        !foreign_object_of(MPII_LIBC_REALLOCARRAY);
}

void *MPIR_Pageguard_hook(const char *name)
{
    if (!MPII_Pageguard_libc.callee[MPII_LIBC_FREE])
        MPII_Pageguard_libc_resolve();
    for (int i = 0; i < MPII_LIBC_COUNT; i++) {
        if (strcmp(MPII_Pageguard_libc.name[i], name) == 0)
            return MPII_Pageguard_libc.callee[i] ? MPII_Pageguard_hooks[i] : NULL;
    }
    return NULL;
}
