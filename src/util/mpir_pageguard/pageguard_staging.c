/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Staging memory of receive regions, kept for the next regions.
 *
 * A fresh anonymous mapping costs a page fault and a zeroed page on the first touch of every
 * page -- for every received byte of every collective. Under a hypervisor a fault is an exit:
 * in the 2-node cluster demo (1 MiB Alltoall) the network receive path faulting on new staging
 * pages was 8% of all CPU samples. So a released region's staging mapping waits here (a few
 * mappings, at most config.staging_cache bytes) and a later region of a similar size takes it
 * over. Its old contents never reach the application: only received bytes land. */

#include "mpir_pageguard.h"
#include "pageguard_internal.h"

#include <pthread.h>
#include <sys/mman.h>

void *MPII_Pageguard_staging_get(size_t len, size_t * mapped_len)
{
    int best = -1;

    pthread_mutex_lock(&MPII_pageguard.lock);
    for (int i = 0; i < MPII_PAGEGUARD_STAGING_CACHED; i++) {
        size_t have = MPII_pageguard.staging[i].len;
        /* at most twice the size asked for: a small region must not pin a big mapping */
        if (have >= len && have / 2 <= len &&
            (best < 0 || have < MPII_pageguard.staging[best].len))
            best = i;
    }
    if (best >= 0) {
        void *mem = MPII_pageguard.staging[best].mem;
        *mapped_len = MPII_pageguard.staging[best].len;
        MPII_pageguard.staging_cached -= *mapped_len;
        MPII_pageguard.staging[best].mem = NULL;
        MPII_pageguard.staging[best].len = 0;
        MPII_pageguard.staging_reused++;
        pthread_mutex_unlock(&MPII_pageguard.lock);
        return mem;
    }
    pthread_mutex_unlock(&MPII_pageguard.lock);

    void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    *mapped_len = len;
    return mem;
}

void MPII_Pageguard_staging_put(void *mem, size_t len)
{
    pthread_mutex_lock(&MPII_pageguard.lock);
    if (MPII_pageguard.staging_cached + len <= MPII_pageguard.config.staging_cache) {
        for (int i = 0; i < MPII_PAGEGUARD_STAGING_CACHED; i++) {
            if (MPII_pageguard.staging[i].mem == NULL) {
                MPII_pageguard.staging[i].mem = mem;
                MPII_pageguard.staging[i].len = len;
                MPII_pageguard.staging_cached += len;
                pthread_mutex_unlock(&MPII_pageguard.lock);
                return;
            }
        }
    }
    pthread_mutex_unlock(&MPII_pageguard.lock);
    munmap(mem, len);
}

void MPII_Pageguard_staging_drain(void)
{
    pthread_mutex_lock(&MPII_pageguard.lock);
    for (int i = 0; i < MPII_PAGEGUARD_STAGING_CACHED; i++) {
        if (MPII_pageguard.staging[i].mem)
            munmap(MPII_pageguard.staging[i].mem, MPII_pageguard.staging[i].len);
        MPII_pageguard.staging[i].mem = NULL;
        MPII_pageguard.staging[i].len = 0;
    }
    MPII_pageguard.staging_cached = 0;
    pthread_mutex_unlock(&MPII_pageguard.lock);
}
