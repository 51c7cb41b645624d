/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Registration, the page guards' way in: our SIGSEGV handler must still be the one installed
 * (or be installed again), the registering thread needs a signal stack of its own, and objects
 * loaded since the last region need the hooks (pageguard_hooks.c), before a region
 * (pageguard_region.c) protects anything. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

int MPIR_Pageguard_register_filled(void *addr, size_t len, int nsub, const size_t * sub_off,
                                   const size_t * sub_len, const void *const *fill,
                                   MPIR_Pageguard_kind_t kind, int flags,
                                   MPIR_Pageguard_region_t ** region)
{
    *region = NULL;
    if (!atomic_load(&MPII_pageguard.on) || !MPIR_Pageguard_check_handler())
        return MPIR_PAGEGUARD_ERR_OFF;
    if (MPIR_Pageguard_hooks_refresh(0) != 0)   /* objects loaded since the last region */
        return MPIR_PAGEGUARD_ERR_HOOKS;
    MPII_Pageguard_ensure_altstack();
    return MPII_Pageguard_region_add(addr, len, nsub, sub_off, sub_len, fill, kind, flags,
                                     region);
}

int MPIR_Pageguard_register(void *addr, size_t len, int nsub, const size_t * sub_off,
                            const size_t * sub_len, MPIR_Pageguard_kind_t kind, int flags,
                            MPIR_Pageguard_region_t ** region)
{
    return MPIR_Pageguard_register_filled(addr, len, nsub, sub_off, sub_len, NULL, kind, flags,
                                          region);
}
