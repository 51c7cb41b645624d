/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The protection the program gave a buffer, so that its guarded pages are opened again as they
 * were. Only private memory that is readable and writable on every page, with one execute
 * setting, is guarded; anything else (read-only, a file mapped read-only, mixed protections,
 * shared memory, which another process may write whatever our protection) is refused and the
 * caller copies or waits, as stock MPICH would. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux 6.11's binary query of /proc/<pid>/maps (uapi linux/fs.h, absent from older headers):
 * one ioctl per mapping instead of reading the whole text (measured here: 4 us with the open
 * and close, against ~100 us to read a 136-line maps file). */
#define MPII_PROCMAP_QUERY _IOWR('f', 17, struct MPII_procmap_query)
#define MPII_PROCMAP_READABLE 0x01
#define MPII_PROCMAP_WRITABLE 0x02
#define MPII_PROCMAP_EXECUTABLE 0x04
#define MPII_PROCMAP_SHARED 0x08

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

/* whether this kernel has a method; set once, by compare-and-swap from PROBE_UNTRIED */
enum { PROBE_UNTRIED = 0, PROBE_PRESENT, PROBE_ABSENT };
static _Atomic int query_state, populate_state;

static void note_absent(_Atomic int *state)
{
    int untried = PROBE_UNTRIED;
    atomic_compare_exchange_strong(state, &untried, PROBE_ABSENT);
}

/* Fold one mapping's permissions into the verdict on the range. */
static int fold(int *exec, int readable, int writable, int executable, int shared)
{
    if (!readable || !writable || shared ||
        (*exec >= 0 && executable != *exec))
        return MPII_PAGEGUARD_PROT_REFUSED;
    *exec = executable;
    return MPII_PAGEGUARD_PROT_OK;
}

static int open_maps(void)
{
    return open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
}

/* The mappings covering [lo, hi), asked one by one. */
static int prot_by_query(uintptr_t lo, uintptr_t hi, int *prot)
{
    int fd = open_maps();
    if (fd < 0)
        return MPII_PAGEGUARD_PROT_FAILED;
    int rc = MPII_PAGEGUARD_PROT_OK, exec = -1;
    for (uintptr_t at = lo; at < hi && rc == MPII_PAGEGUARD_PROT_OK;) {
        struct MPII_procmap_query q;
        memset(&q, 0, sizeof(q));
        q.size = sizeof(q);
        q.query_addr = at;
        if (ioctl(fd, MPII_PROCMAP_QUERY, &q) != 0) {
            /* ENOENT: a hole; ENOTTY/EINVAL: a kernel without the query */
            rc = (errno == ENOENT) ? MPII_PAGEGUARD_PROT_REFUSED :
                (errno == ENOTTY || errno == EINVAL) ? MPII_PAGEGUARD_PROT_UNKNOWN :
                MPII_PAGEGUARD_PROT_FAILED;
            break;
        }
        if (q.vma_end <= at)
            rc = MPII_PAGEGUARD_PROT_REFUSED;
        else
            rc = fold(&exec, !!(q.vma_flags & MPII_PROCMAP_READABLE),
                      !!(q.vma_flags & MPII_PROCMAP_WRITABLE),
                      !!(q.vma_flags & MPII_PROCMAP_EXECUTABLE),
                      !!(q.vma_flags & MPII_PROCMAP_SHARED));
        at = q.vma_end;
    }
    close(fd);
    if (rc == MPII_PAGEGUARD_PROT_OK)
        *prot = PROT_READ | PROT_WRITE | (exec > 0 ? PROT_EXEC : 0);
    return rc;
}

static uintptr_t parse_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v * 16 + (uintptr_t) d;
    }
}

/* Older kernels: the line of the maps text that covers addr ("lo-hi rwxp offset dev inode"),
 * read in pieces with raw system calls. */
int MPII_Pageguard_mapping_by_text(uintptr_t addr, uintptr_t * start, uintptr_t * end,
                                   int *prot, int *shared)
{
    char buf[2048];
    size_t have = 0;
    int rc = 0;
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    for (;;) {
        long n = syscall(SYS_read, (int) fd, buf + have, sizeof(buf) - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t) n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', have - (size_t) (line - buf)))) {
            const char *p = line;
            uintptr_t lo = parse_hex(&p);
            p++;
            uintptr_t hi = parse_hex(&p);
            p++;
            if (addr >= lo && addr < hi) {
                *start = lo;
                *end = hi;
                *prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
                    (p[2] == 'x' ? PROT_EXEC : 0);
                /* offset, device, inode: a file mapping has an inode */
                const char *q = p + 5;
                parse_hex(&q);
                q++;
                while (*q && *q != ' ')
                    q++;
                while (*q == ' ')
                    q++;
                *shared = p[3] == 's' || (*q && *q != '0');
                rc = 1;
                goto done;
            }
            if (lo > addr)
                goto done;      /* sorted: no mapping covers addr */
            line = nl + 1;
        }
        have -= (size_t) (line - buf);
        memmove(buf, line, have);
        if (have == sizeof(buf) - 1)
            break;      /* a line longer than the buffer: give up */
    }
  done:
    syscall(SYS_close, (int) fd);
    return rc;
}

int MPII_Pageguard_mapping_at(uintptr_t addr, uintptr_t * start, uintptr_t * end, int *prot,
                              int *shared)
{
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct MPII_procmap_query q = { 0 };
    q.size = sizeof(q);
    q.query_addr = addr;
    long rc = syscall(SYS_ioctl, (int) fd, MPII_PROCMAP_QUERY, &q);
    int err = rc != 0 ? errno : 0;
    syscall(SYS_close, (int) fd);
    if (err == ENOTTY || err == EINVAL)
        return MPII_Pageguard_mapping_by_text(addr, start, end, prot, shared);
    if (rc != 0)
        return err == ENOENT ? 0 : -1;
    if (addr < q.vma_start || addr >= q.vma_end)
        return 0;
    *start = q.vma_start;
    *end = q.vma_end;
    *prot = ((q.vma_flags & MPII_PROCMAP_READABLE) ? PROT_READ : 0) |
        ((q.vma_flags & MPII_PROCMAP_WRITABLE) ? PROT_WRITE : 0) |
        ((q.vma_flags & MPII_PROCMAP_EXECUTABLE) ? PROT_EXEC : 0);
    /* a file's private mapping is not plain memory: counted as shared */
    *shared = (q.vma_flags & MPII_PROCMAP_SHARED) || q.inode != 0;
    return 1;
}

int MPII_Pageguard_mapping_allows(uintptr_t addr, int access)
{
    uintptr_t start, end;
    int prot, shared;
    int rc = MPII_Pageguard_mapping_at(addr, &start, &end, &prot, &shared);
    return rc == 1 ? (prot & access) == access : rc;
}

/* Older kernels: read the maps text ("lo-hi rwxp ..." per line, sorted by address). */
static int prot_by_text(uintptr_t lo, uintptr_t hi, int *prot)
{
    int fd = open_maps();
    if (fd < 0)
        return MPII_PAGEGUARD_PROT_FAILED;
    char buf[4096];
    size_t have = 0;
    int rc = MPII_PAGEGUARD_PROT_REFUSED, exec = -1;
    uintptr_t covered = lo;     /* [lo, covered) seen, without holes */
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t) n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            char *end;
            uintptr_t start = strtoul(line, &end, 16), stop = strtoul(end + 1, &end, 16);
            const char *perm = end + 1;
            line = nl + 1;
            if (stop <= covered || start >= hi)
                continue;
            if (start > covered || fold(&exec, perm[0] == 'r', perm[1] == 'w', perm[2] == 'x',
                                        perm[3] == 's') != MPII_PAGEGUARD_PROT_OK)
                goto done;      /* a hole, or a mapping we refuse */
            covered = stop;
            if (covered >= hi) {
                rc = MPII_PAGEGUARD_PROT_OK;
                goto done;
            }
        }
        have = strlen(line);
        memmove(buf, line, have);
        if (have == sizeof(buf) - 1)
            have = 0;   /* no line is this long: skip it */
    }
  done:
    close(fd);
    if (rc == MPII_PAGEGUARD_PROT_OK)
        *prot = PROT_READ | PROT_WRITE | (exec > 0 ? PROT_EXEC : 0);
    return rc;
}

/* Receive buffers on older kernels (5.14+), instead of the ~100 us of the text: asking the
 * kernel to make the pages ready for writing fails unless every page may be written. What it
 * does besides (allocate and dirty the pages) is what receiving into them does anyway. It
 * cannot see PROT_EXEC, which is then not restored, nor a shared mapping, which the landing
 * check refuses after it. */
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
        return -1;
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
        case MPII_PAGEGUARD_BY_TEXT:
            return prot_by_text(lo, hi, prot);
        case MPII_PAGEGUARD_BY_POPULATE:
            return populate_works() == 1 ? prot_by_populate(lo, hi, prot) :
                MPII_PAGEGUARD_PROT_UNKNOWN;
        default:
            return MPII_PAGEGUARD_PROT_UNKNOWN;
    }
}

int MPII_Pageguard_open_prot(uintptr_t lo, uintptr_t hi, MPIR_Pageguard_kind_t kind, int *prot)
{
    if (atomic_load(&query_state) != PROBE_ABSENT) {
        int rc = prot_by_query(lo, hi, prot);
        if (rc != MPII_PAGEGUARD_PROT_UNKNOWN) {
            if (rc != MPII_PAGEGUARD_PROT_FAILED)
                atomic_store(&query_state, PROBE_PRESENT);
            return rc;
        }
        if (atomic_load(&query_state) == PROBE_PRESENT)
            return MPII_PAGEGUARD_PROT_FAILED;  /* it worked before: do not guess now */
        note_absent(&query_state);
    }
    if (kind == MPIR_PAGEGUARD_RECV) {
        if (atomic_load(&populate_state) == PROBE_UNTRIED) {
            int works = populate_works();
            if (works < 0)
                return MPII_PAGEGUARD_PROT_FAILED;
            if (works)
                atomic_store(&populate_state, PROBE_PRESENT);
            else
                note_absent(&populate_state);
        }
        if (atomic_load(&populate_state) == PROBE_PRESENT)
            return prot_by_populate(lo, hi, prot);
    }
    return prot_by_text(lo, hi, prot);
}
