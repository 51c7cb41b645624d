/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Micro-benchmark of the page-guard mechanism (a benchmark, not a test): `make bench-pageguard`.
 *
 *   mprotect     cost of one protect + unprotect pair, per call and per page
 *   fault        round trip of a fault on a guarded page: SIGSEGV -> our handler -> page opened
 *                -> instruction runs again (trace mode, data already in place)
 *   landing      making a completed sub-message visible without exposing a partial page:
 *                  procmem  pwrite to /proc/self/mem into the protected pages + mprotect RW
 *                           (the module's method)
 *                  mremap   move staging pages over the user pages (zero copy)
 *                  memcpy   plain copy into accessible pages: the floor, not safe
 *
 * Each figure is the median of REPS runs, in microseconds. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REPS 41

static size_t ps;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(double), cmp_double);
    return v[n / 2];
}

static char *map_touched(size_t len)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, 1, len);
    return p;
}

static void bench_mprotect(void)
{
    const size_t pages[] = { 1, 4, 16, 64, 256, 1024, 4096 };
    printf("\nmprotect (PROT_NONE then PROT_READ|PROT_WRITE, populated private pages)\n");
    printf("%8s %10s %14s %14s\n", "pages", "KiB", "us per pair", "us per page");
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        size_t len = pages[i] * ps;
        char *buf = map_touched(len);
        double t[REPS];
        for (int r = 0; r < REPS; r++) {
            double t0 = now_us();
            mprotect(buf, len, PROT_NONE);
            mprotect(buf, len, PROT_READ | PROT_WRITE);
            t[r] = now_us() - t0;
        }
        double m = median(t, REPS);
        printf("%8zu %10zu %14.2f %14.3f\n", pages[i], len / 1024, m, m / pages[i]);
        munmap(buf, len);
    }
}

/* The floor: a bare handler that only opens the faulting page. */
static void bare_handler(int sig, siginfo_t * info, void *uctx)
{
    (void) sig;
    (void) uctx;
    uintptr_t page = (uintptr_t) info->si_addr & ~(uintptr_t) (ps - 1);
    mprotect((void *) page, ps, PROT_READ | PROT_WRITE);
}

static double fault_floor(int npages)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = bare_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, &old);
    char *buf = map_touched(npages * ps);
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        mprotect(buf, npages * ps, PROT_NONE);
        double t0 = now_us();
        for (int k = 0; k < npages; k++)
            (void) ((volatile char *) buf)[k * ps];
        t[r] = (now_us() - t0) / npages;
    }
    sigaction(SIGSEGV, &old, NULL);
    munmap(buf, npages * ps);
    return median(t, REPS);
}

static void bench_fault(void)
{
    const int npages = 1024;
    char *buf = map_touched(npages * ps);
    size_t *off = malloc(npages * sizeof(size_t)), *len = malloc(npages * sizeof(size_t));
    for (int k = 0; k < npages; k++) {
        off[k] = k * ps;
        len[k] = ps;
    }
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        MPIR_Pageguard_region_t *reg;
        if (MPIR_Pageguard_register(buf, npages * ps, npages, off, len, MPIR_PAGEGUARD_RECV,
                                    MPIR_PAGEGUARD_TRACE, &reg) != MPIR_PAGEGUARD_OK) {
            printf("register failed\n");
            exit(1);
        }
        double t0 = now_us();
        for (int k = 0; k < npages; k++)
            (void) ((volatile char *) buf)[k * ps];
        t[r] = (now_us() - t0) / npages;
        MPIR_Pageguard_unregister(reg);
    }
    double ours = median(t, REPS);
    double floor_us = fault_floor(npages);
    printf("\nfault round trip (touch of a guarded page -> handler -> page opened -> resume),\n"
           "median of %d x %d faults, each on its own page\n", REPS, npages);
    printf("%12.2f us  page-guard handler (lookup, first-touch record, mprotect, release)\n",
           ours);
    printf("%12.2f us  floor: a bare handler that only calls mprotect\n", floor_us);
    free(off);
    free(len);
    munmap(buf, npages * ps);
}

static void bench_landing(void)
{
    const size_t pages[] = { 1, 4, 16, 64, 256, 1024, 4096 };
    int fd = open("/proc/self/mem", O_RDWR);
    printf("\nlanding a completed sub-message (us; 'per MiB' scales the row to 1 MiB)\n");
    printf("%8s %10s %12s %12s %12s %12s %12s\n", "pages", "KiB", "procmem", "per MiB",
           "mremap", "per MiB", "memcpy");
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        size_t len = pages[i] * ps;
        char *user = map_touched(len);
        char *src = map_touched(len);
        double tp[REPS], tm[REPS], tc[REPS];
        for (int r = 0; r < REPS; r++) {
            mprotect(user, len, PROT_NONE);
            double t0 = now_us();
            if (pwrite(fd, src, len, (off_t) (uintptr_t) user) != (ssize_t) len) {
                perror("pwrite /proc/self/mem");
                exit(1);
            }
            mprotect(user, len, PROT_READ | PROT_WRITE);
            tp[r] = now_us() - t0;

            /* staging filled as a receive would; its page tables move onto the user range */
            char *staging = map_touched(len);
            mprotect(user, len, PROT_NONE);
            t0 = now_us();
            if (mremap(staging, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, user) != user) {
                perror("mremap");
                exit(1);
            }
            tm[r] = now_us() - t0;

            t0 = now_us();
            memcpy(user, src, len);
            tc[r] = now_us() - t0;
        }
        double p = median(tp, REPS), m = median(tm, REPS), c = median(tc, REPS);
        double scale = (1024.0 * 1024.0) / len;
        printf("%8zu %10zu %12.2f %12.1f %12.2f %12.1f %12.2f\n", pages[i], len / 1024, p,
               p * scale, m, m * scale, c);
        munmap(user, len);
        munmap(src, len);
    }
    close(fd);
}

int main(void)
{
    ps = (size_t) sysconf(_SC_PAGESIZE);
    if (MPIR_Pageguard_init(NULL) != MPIR_PAGEGUARD_OK) {
        printf("page guards unavailable\n");
        return 1;
    }
    printf("page-guard micro-benchmark: page %zu bytes, median of %d runs\n", ps, REPS);
    bench_mprotect();
    bench_fault();
    bench_landing();
    MPIR_Pageguard_finalize();
    return 0;
}
