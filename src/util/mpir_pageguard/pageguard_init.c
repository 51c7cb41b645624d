/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Module lifecycle: page size, the /proc/self/mem landing probe, the mapping budget, the
 * SIGSEGV handler, statistics. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <dlfcn.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long read_long_file(const char *path, long dflt)
{
    long value = dflt;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &value) != 1)
            value = dflt;
        fclose(f);
    }
    return value;
}

static size_t count_maps(void)
{
    size_t n = 0;
    int c;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    while ((c = getc(f)) != EOF)
        n += (c == '\n');
    fclose(f);
    return n;
}

/* Can we write into a PROT_NONE private page through /proc/self/mem? Kernels built or booted
 * with proc_mem.force_override=never say no; RECV regions are then refused. */
static int open_landing_fd(size_t pagesize)
{
    int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char *probe = mmap(NULL, pagesize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED) {
        close(fd);
        return -1;
    }
    char byte = 42;
    ssize_t n = pwrite(fd, &byte, 1, (off_t) (uintptr_t) probe);
    int ok = (n == 1);
    if (ok) {
        mprotect(probe, pagesize, PROT_READ);
        ok = (probe[0] == 42);
    }
    munmap(probe, pagesize);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}

int MPIR_Pageguard_init(const MPIR_Pageguard_config_t * config)
{
    if (atomic_load(&MPII_pageguard.on))
        return MPIR_PAGEGUARD_OK;

    MPII_pageguard.pagesize = (size_t) sysconf(_SC_PAGESIZE);
    /* glibc's record of where the main thread's stack begins: that mapping never moves */
    void **stack_end = (void **) dlsym(RTLD_DEFAULT, "__libc_stack_end");
    MPII_pageguard.main_stack = stack_end ? (uintptr_t) * stack_end : 0;
    atomic_store(&MPII_pageguard.moves_off, 0);
    if (config)
        MPII_pageguard.config = *config;
    else
        memset(&MPII_pageguard.config, 0, sizeof(MPII_pageguard.config));

    /* Leave at least half of the free mapping slots to the application and its libraries. */
    long max_maps = read_long_file("/proc/sys/vm/max_map_count", 65530);
    size_t used = count_maps();
    size_t spare = (size_t) max_maps > used ? (size_t) max_maps - used : 0;
    MPII_pageguard.map_budget = MPII_pageguard.config.map_budget ?
        MPII_pageguard.config.map_budget : spare / 2;
    MPII_pageguard.maps_in_use = 0;

    MPII_pageguard.mem_fd = open_landing_fd(MPII_pageguard.pagesize);
    struct stat st;
    if (MPII_pageguard.mem_fd >= 0 && fstat(MPII_pageguard.mem_fd, &st) == 0) {
        MPII_pageguard.mem_pid = getpid();
        MPII_pageguard.mem_dev = st.st_dev;
        MPII_pageguard.mem_ino = st.st_ino;
    }

    int rc = MPII_Pageguard_install_handler();
    if (rc != MPIR_PAGEGUARD_OK) {
        if (MPII_pageguard.mem_fd >= 0)
            close(MPII_pageguard.mem_fd);
        MPII_pageguard.mem_fd = -1;
        return rc;
    }
    atomic_store(&MPII_pageguard.on, 1);
    MPII_Pageguard_defer_start();
    return MPIR_PAGEGUARD_OK;
}

int MPIR_Pageguard_finalize(void)
{
    if (!atomic_load(&MPII_pageguard.on))
        return MPIR_PAGEGUARD_OK;
    atomic_store(&MPII_pageguard.on, 0);
    for (int i = 0; i < MPII_PAGEGUARD_MAX_REGIONS; i++) {
        if (atomic_load(&MPII_pageguard.slots[i].state) == MPII_SLOT_ACTIVE)
            MPIR_Pageguard_unregister(MPII_pageguard.slots[i].region);
    }
    MPII_Pageguard_defer_stop();
    MPII_Pageguard_uninstall_handler();
    MPII_Pageguard_staging_drain();
    if (MPII_pageguard.mem_fd >= 0)
        close(MPII_pageguard.mem_fd);
    MPII_pageguard.mem_fd = -1;
    return MPIR_PAGEGUARD_OK;
}

int MPIR_Pageguard_is_on(void)
{
    return atomic_load(&MPII_pageguard.on);
}

const char *MPIR_Pageguard_strerror(int rc)
{
    switch (rc) {
        case MPIR_PAGEGUARD_OK:
            return "success";
        case MPIR_PAGEGUARD_ERR_ARG:
            return "invalid region or sub-message ranges";
        case MPIR_PAGEGUARD_ERR_OFF:
            return "page guards are off";
        case MPIR_PAGEGUARD_ERR_BUDGET:
            return "mapping budget exhausted (vm.max_map_count)";
        case MPIR_PAGEGUARD_ERR_NOMEM:
            return "out of memory or mappings (mprotect/mmap failed)";
        case MPIR_PAGEGUARD_ERR_LANDING:
            return "buffer cannot be written through /proc/self/mem";
        case MPIR_PAGEGUARD_ERR_SLOTS:
            return "too many guarded regions at once";
        case MPIR_PAGEGUARD_ERR_NOTHING:
            return "no whole page to guard";
        case MPIR_PAGEGUARD_ERR_PROT:
            return "buffer is not private read-write memory (read-only, a file mapped "
                "read-only, shared, mixed)";
        case MPIR_PAGEGUARD_ERR_EXPOSED:
            return "buffer is in an RMA window";
        case MPIR_PAGEGUARD_ERR_HOOKS:
            return "a library loaded since MPI_Init calls a C library function past its hook";
        default:
            return "unknown page-guard error";
    }
}

void MPIR_Pageguard_get_stats(MPIR_Pageguard_stats_t * stats)
{
    pthread_mutex_lock(&MPII_pageguard.lock);
    stats->regions = MPII_pageguard.regions;
    stats->refused_budget = MPII_pageguard.refused_budget;
    stats->refused_nomem = MPII_pageguard.refused_nomem;
    stats->refused_landing = MPII_pageguard.refused_landing;
    stats->refused_prot = MPII_pageguard.refused_prot;
    stats->refused_exposed = MPII_pageguard.refused_exposed;
    stats->refused_other = MPII_pageguard.refused_other;
    stats->map_budget = MPII_pageguard.map_budget;
    stats->maps_in_use = MPII_pageguard.maps_in_use;
    stats->staging_reused = MPII_pageguard.staging_reused;
    stats->staging_cached = MPII_pageguard.staging_cached;
    pthread_mutex_unlock(&MPII_pageguard.lock);
    stats->faults = atomic_load(&MPII_pageguard.faults);
    stats->foreign_faults = atomic_load(&MPII_pageguard.foreign_faults);
    stats->stale_faults = atomic_load(&MPII_pageguard.stale_faults);
    stats->waits_reaped = atomic_load(&MPII_pageguard.waits_reaped);
    stats->pages_moved = atomic_load(&MPII_pageguard.pages_moved);
    stats->replaced = atomic_load(&MPII_pageguard.replaced);
    stats->stall_ns = atomic_load(&MPII_pageguard.stall_ns);
    stats->mprotect_calls = atomic_load(&MPII_pageguard.mprotect_calls);
    stats->forgotten = atomic_load(&MPII_pageguard.forgotten);
    for (int b = 0; b < MPIR_PAGEGUARD_LATENCY_BUCKETS; b++)
        stats->release_hist[b] = atomic_load(&MPII_pageguard.release_hist[b]);
    stats->release_max_ns = atomic_load(&MPII_pageguard.release_max_ns);
}

uint64_t MPIR_Pageguard_stall_ns(void)
{
    return atomic_load(&MPII_pageguard.stall_ns);
}
