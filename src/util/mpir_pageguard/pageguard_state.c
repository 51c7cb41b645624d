/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The bottom of the page guards: the module's state, and what every other part uses of the
 * system (the landing's pwrite, the clock, mprotect with its count, the landing descriptor,
 * this thread's stack). Calls nothing else of the module. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

MPII_Pageguard_global_t MPII_pageguard = {
    .mem_fd = -1,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* raw: the landing is ours, not the program's I/O (a preloaded I/O tracer must not see it) */
ssize_t MPII_Pageguard_raw_pwrite(int fd, const void *buf, size_t count, off_t off)
{
    return syscall(SYS_pwrite64, fd, buf, count, off);
}

uint64_t MPII_Pageguard_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);        /* async-signal-safe */
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

int MPII_Pageguard_mprotect(uintptr_t addr, size_t len, int prot)
{
    atomic_fetch_add(&MPII_pageguard.mprotect_calls, 1);
    return mprotect((void *) addr, len, prot);
}

/* The landing descriptor, checked before each use: the program may have closed it (closefrom,
 * close_range) and opened a file of its own under the same number, or be a child of fork(),
 * whose inherited copy writes into the parent. Then a new one is opened; the old number, if
 * the program closed it, is the program's now (a fork child closes its inherited copy). The
 * check cannot see a close and reuse between it and the write (README.tnbc). */
int MPII_Pageguard_landing_fd(void)
{
    static pthread_mutex_t reopen_lock = PTHREAD_MUTEX_INITIALIZER;
    struct stat now;
    int fd = atomic_load(&MPII_pageguard.mem_fd);
    pid_t pid = getpid();
    if (fd >= 0 && MPII_pageguard.mem_pid == pid && fstat(fd, &now) == 0 &&
        now.st_dev == MPII_pageguard.mem_dev && now.st_ino == MPII_pageguard.mem_ino)
        return fd;
    pthread_mutex_lock(&reopen_lock);
    if (atomic_load(&MPII_pageguard.mem_fd) == fd) {
        /* a fork child's inherited copy, if the child has not closed and reused the number */
        if (fd >= 0 && MPII_pageguard.mem_pid != pid && fstat(fd, &now) == 0 &&
            now.st_dev == MPII_pageguard.mem_dev && now.st_ino == MPII_pageguard.mem_ino)
            close(fd);
        int fresh = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
        if (fresh >= 0 && fstat(fresh, &now) != 0) {
            close(fresh);
            fresh = -1;
        }
        if (fresh >= 0) {
            MPII_pageguard.mem_pid = pid;
            MPII_pageguard.mem_dev = now.st_dev;
            MPII_pageguard.mem_ino = now.st_ino;
        }
        atomic_store(&MPII_pageguard.mem_fd, fresh);
    }
    fd = atomic_load(&MPII_pageguard.mem_fd);
    pthread_mutex_unlock(&reopen_lock);
    return fd;
}

/* This thread's stack, known once it registered a region (MPII_Pageguard_note_stack_bounds). */
static __thread uintptr_t stack_lo __attribute__ ((tls_model("initial-exec")));
static __thread uintptr_t stack_hi __attribute__ ((tls_model("initial-exec")));

int MPII_Pageguard_on_own_stack(uintptr_t lo, uintptr_t hi)
{
    return lo < stack_hi && hi > stack_lo;
}

void MPII_Pageguard_note_stack_bounds(void)
{
    pthread_attr_t attr;
    void *lo;
    size_t len;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &lo, &len) == 0) {
        stack_lo = (uintptr_t) lo;
        stack_hi = (uintptr_t) lo + len;
    }
    pthread_attr_destroy(&attr);
}

void MPII_Pageguard_own_stack(uintptr_t * lo, uintptr_t * hi)
{
    *lo = stack_lo;
    *hi = stack_hi;
}
