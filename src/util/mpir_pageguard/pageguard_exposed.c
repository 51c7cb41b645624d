/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Memory that other processes reach directly: RMA windows. A NIC writes and reads registered
 * pages whatever their protection (RDMA), and MPICH carries out active-message RMA while it
 * holds its lock, where a thread cannot wait for a page. A guarded region there would have a
 * peer's put overwritten by the collective's late data, or abort. So such memory is never
 * guarded: sends copy, receives wait in the call (MPIR_PAGEGUARD_ERR_EXPOSED). */

#include "pageguard_internal.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    const void *owner;
    uintptr_t lo, hi;
} MPII_exposed_t;

static pthread_mutex_t exposed_lock = PTHREAD_MUTEX_INITIALIZER;
static MPII_exposed_t *exposed;         /* under exposed_lock */
static size_t exposed_cap;
static _Atomic size_t nexposed;         /* changed under exposed_lock; read without it first */
static _Atomic int exposed_lost;        /* a range could not be recorded: all memory counts as
                                         * exposed from then on */

void MPIR_Pageguard_expose(const void *owner, const void *addr, size_t len)
{
    uintptr_t lo = (uintptr_t) addr;
    if (!addr || len == 0 || lo + len < lo)
        return; /* nothing anyone can reach */
    pthread_mutex_lock(&exposed_lock);
    if (nexposed == exposed_cap) {
        size_t cap = exposed_cap ? 2 * exposed_cap : 16;
        MPII_exposed_t *grown = realloc(exposed, cap * sizeof(*grown));
        if (!grown) {
            if (!atomic_exchange(&exposed_lost, 1) && MPII_pageguard.config.warn)
                MPII_pageguard.config.warn("out of memory recording an RMA window: no buffer is "
                                           "page-guarded from now on (collectives wait in the "
                                           "call)");
            goto fn_exit;
        }
        exposed = grown;
        exposed_cap = cap;
    }
    exposed[nexposed] = (MPII_exposed_t) {.owner = owner,.lo = lo,.hi = lo + len };
    atomic_fetch_add(&nexposed, 1);
  fn_exit:
    pthread_mutex_unlock(&exposed_lock);
}

void MPIR_Pageguard_unexpose(const void *owner, const void *addr)
{
    pthread_mutex_lock(&exposed_lock);
    for (size_t i = 0; i < nexposed;) {
        if (exposed[i].owner == owner && (!addr || exposed[i].lo == (uintptr_t) addr)) {
            size_t last = atomic_fetch_sub(&nexposed, 1) - 1;
            exposed[i] = exposed[last];
            if (addr)
                break;
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&exposed_lock);
}

int MPII_Pageguard_is_exposed(uintptr_t lo, uintptr_t hi)
{
    if (atomic_load(&exposed_lost))
        return 1;
    if (atomic_load(&nexposed) == 0)
        return 0;
    int found = 0;
    pthread_mutex_lock(&exposed_lock);
    for (size_t i = 0; i < nexposed && !found; i++)
        found = exposed[i].lo < hi && lo < exposed[i].hi;
    pthread_mutex_unlock(&exposed_lock);
    return found;
}
