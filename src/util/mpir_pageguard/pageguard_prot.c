/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The protection the program gave a buffer, so that its guarded pages are opened again as they
 * were. Only memory that is readable and writable on every page, with one execute setting, is
 * guarded; anything else (read-only, a file mapped read-only, mixed protections) is refused and
 * the caller copies or waits, as stock MPICH would touch it. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* Linux 6.11's binary query of /proc/<pid>/maps (uapi linux/fs.h, absent from older headers):
 * one ioctl per mapping instead of reading the whole text (measured here: 0.6 us against
 * ~100 us for a 136-line maps file). */
#define MPII_PROCMAP_QUERY _IOWR('f', 17, struct MPII_procmap_query)
#define MPII_PROCMAP_READABLE 0x01
#define MPII_PROCMAP_WRITABLE 0x02
#define MPII_PROCMAP_EXECUTABLE 0x04

struct MPII_procmap_query {
    uint64_t size;              /* in: sizeof this struct */
    uint64_t query_flags;       /* in: 0 = the mapping that covers query_addr */
    uint64_t query_addr;
    uint64_t vma_start, vma_end, vma_flags;     /* out */
    uint64_t vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor;
    uint32_t vma_name_size, build_id_size;      /* in: 0 = not wanted */
    uint64_t vma_name_addr, build_id_addr;
};

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { MPII_PROT_UNKNOWN = 0, MPII_PROT_AVAILABLE, MPII_PROT_ABSENT };
static _Atomic int query_state, populate_state;

/* The mappings covering [lo, hi), asked one by one. */
static int prot_by_query(uintptr_t lo, uintptr_t hi, int *prot)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return MPII_PAGEGUARD_PROT_UNKNOWN;
    int rc = MPII_PAGEGUARD_PROT_OK, exec = -1;
    for (uintptr_t at = lo; at < hi && rc == MPII_PAGEGUARD_PROT_OK;) {
        struct MPII_procmap_query q;
        memset(&q, 0, sizeof(q));
        q.size = sizeof(q);
        q.query_addr = at;
        if (ioctl(fd, MPII_PROCMAP_QUERY, &q) != 0) {
            /* ENOENT: a hole; ENOTTY/EINVAL: a kernel without the query */
            rc = (errno == ENOENT) ? MPII_PAGEGUARD_PROT_REFUSED : MPII_PAGEGUARD_PROT_UNKNOWN;
            break;
        }
        int x = (q.vma_flags & MPII_PROCMAP_EXECUTABLE) != 0;
        if ((q.vma_flags & (MPII_PROCMAP_READABLE | MPII_PROCMAP_WRITABLE)) !=
            (MPII_PROCMAP_READABLE | MPII_PROCMAP_WRITABLE) || (exec >= 0 && x != exec) ||
            q.vma_end <= at)
            rc = MPII_PAGEGUARD_PROT_REFUSED;
        exec = x;
        at = q.vma_end;
    }
    close(fd);
    if (rc == MPII_PAGEGUARD_PROT_OK)
        *prot = PROT_READ | PROT_WRITE | (exec > 0 ? PROT_EXEC : 0);
    return rc;
}

/* Older kernels (5.14+): asking the kernel to make the pages ready for writing fails unless
 * every page may be written. It cannot see PROT_EXEC, which is then not restored (README.tnbc);
 * the pages it makes present would be written by the landing anyway. */
static int prot_by_populate(uintptr_t lo, uintptr_t hi, int *prot)
{
    if (madvise((void *) lo, hi - lo, MADV_POPULATE_WRITE) != 0)
        return MPII_PAGEGUARD_PROT_REFUSED;
    *prot = PROT_READ | PROT_WRITE;
    return MPII_PAGEGUARD_PROT_OK;
}

/* A failure of the probe cannot be told from a refusal: try it once on memory that allows it. */
static int populate_works(void)
{
    size_t ps = MPII_pageguard.pagesize;
    void *probe = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED)
        return 0;
    int ok = madvise(probe, ps, MADV_POPULATE_WRITE) == 0;
    munmap(probe, ps);
    return ok;
}

int MPII_Pageguard_prot_by(MPII_Pageguard_prot_method_t how, uintptr_t lo, uintptr_t hi,
                           int *prot)
{
    switch (how) {
        case MPII_PAGEGUARD_BY_QUERY:
            return prot_by_query(lo, hi, prot);
        case MPII_PAGEGUARD_BY_POPULATE:
            return populate_works() ? prot_by_populate(lo, hi, prot) :
                MPII_PAGEGUARD_PROT_UNKNOWN;
        default:
            return MPII_PAGEGUARD_PROT_UNKNOWN;
    }
}

int MPII_Pageguard_open_prot(uintptr_t lo, uintptr_t hi, int *prot)
{
    if (atomic_load(&query_state) != MPII_PROT_ABSENT) {
        int rc = prot_by_query(lo, hi, prot);
        if (rc != MPII_PAGEGUARD_PROT_UNKNOWN) {
            atomic_store(&query_state, MPII_PROT_AVAILABLE);
            return rc;
        }
        if (atomic_load(&query_state) == MPII_PROT_UNKNOWN)
            atomic_store(&query_state, MPII_PROT_ABSENT);
        else
            return MPII_PAGEGUARD_PROT_REFUSED; /* it worked before: do not guess now */
    }
    int populate = atomic_load(&populate_state);
    if (populate == MPII_PROT_UNKNOWN) {
        populate = populate_works() ? MPII_PROT_AVAILABLE : MPII_PROT_ABSENT;
        atomic_store(&populate_state, populate);
    }
    if (populate == MPII_PROT_AVAILABLE)
        return prot_by_populate(lo, hi, prot);
    /* kernels before 5.14: nothing cheap tells; assume ordinary memory (README.tnbc) */
    *prot = PROT_READ | PROT_WRITE;
    return MPII_PAGEGUARD_PROT_OK;
}
