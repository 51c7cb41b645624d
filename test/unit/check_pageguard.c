/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of src/util/mpir_pageguard. Check runs every test in its own process, so each
 * starts with a fresh module and SIGSEGV disposition. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_internal.h"

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static size_t ps;
static int probe_pipe[2];

/* 1 if the byte at p can be read: the kernel returns EFAULT instead of faulting. */
/* Probed with the system call itself: this program's write() is the page guards' hook, which
 * waits for a guarded page (pageguard_syscalls.c). */
static int readable(const void *p)
{
    char c;
    ssize_t n = syscall(SYS_write, probe_pipe[1], p, 1);
    if (n == 1) {
        ck_assert_int_eq(read(probe_pipe[0], &c, 1), 1);
        return 1;
    }
    ck_assert_int_eq(errno, EFAULT);
    return 0;
}

static char *map_pages(size_t npages)
{
    char *p = mmap(NULL, npages * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    memset(p, 0x11, npages * ps);
    return p;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void setup(void)
{
    ps = (size_t) sysconf(_SC_PAGESIZE);
    ck_assert_int_eq(pipe(probe_pipe), 0);
    ck_assert_int_eq(MPIR_Pageguard_init(NULL), MPIR_PAGEGUARD_OK);
}

static void teardown(void)
{
    MPIR_Pageguard_finalize();
    close(probe_pipe[0]);
    close(probe_pipe[1]);
}

/* Two fresh pages guarded as one receive sub-message. */
static MPIR_Pageguard_region_t *guard_two_pages(char *mem)
{
    size_t off = 0, len = 2 * ps;
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 2 * ps, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_OK);
    return r;
}

/* n equal sub-messages covering [0, len) */
static void split(size_t len, int n, size_t * off, size_t * sublen)
{
    for (int k = 0; k < n; k++) {
        off[k] = len * k / n;
        sublen[k] = len * (k + 1) / n - off[k];
    }
}

START_TEST(alignment_whole_and_partial_pages)
{
    char *mem = map_pages(8);
    /* buffer from the middle of page 0 to the middle of page 5: pages 1..4 are guardable */
    char *buf = mem + ps / 2;
    size_t len = 5 * ps;
    size_t off[5], sublen[5];
    split(len, 5, off, sublen);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(buf, len, 5, off, sublen, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    ck_assert(readable(mem));           /* partial first page: shared, never protected */
    ck_assert(readable(buf));
    ck_assert(readable(mem + 5 * ps + 10));     /* partial last page */
    for (int p = 1; p <= 4; p++)
        ck_assert(!readable(mem + p * ps));
    ck_assert(readable(mem + 6 * ps));  /* beyond the buffer */
    ck_assert(MPIR_Pageguard_sub_is_sync(r, 0));
    ck_assert(!MPIR_Pageguard_sub_is_sync(r, 1));
    ck_assert(!MPIR_Pageguard_sub_is_sync(r, 3));
    ck_assert(MPIR_Pageguard_sub_is_sync(r, 4));
    for (int k = 0; k < 5; k++)
        ck_assert_int_eq(MPIR_Pageguard_complete(r, k), MPIR_PAGEGUARD_OK);
    ck_assert(MPIR_Pageguard_all_released(r));
    for (int p = 0; p < 8; p++)
        ck_assert(readable(mem + p * ps));
    MPIR_Pageguard_unregister(r);
}
END_TEST

START_TEST(alignment_small_buffers)
{
    char *mem = map_pages(4);
    size_t off = 0, len = ps - 8;
    MPIR_Pageguard_region_t *r;
    /* sub-page, and two partial pages with no whole page between them */
    ck_assert_int_eq(MPIR_Pageguard_register(mem + 4, len, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_ERR_NOTHING);
    len = ps + 100;
    ck_assert_int_eq(MPIR_Pageguard_register(mem + 100, len, 1, &off, &len, MPIR_PAGEGUARD_RECV,
                                             0, &r), MPIR_PAGEGUARD_ERR_NOTHING);
    ck_assert_ptr_null(r);
    /* 1, 2 and 3 whole aligned pages */
    for (size_t n = 1; n <= 3; n++) {
        len = n * ps;
        ck_assert_int_eq(MPIR_Pageguard_register(mem, len, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0,
                                                 &r), MPIR_PAGEGUARD_OK);
        for (size_t p = 0; p < 4; p++)
            ck_assert_int_eq(readable(mem + p * ps), p >= n);
        ck_assert(!MPIR_Pageguard_sub_is_sync(r, 0));
        MPIR_Pageguard_complete(r, 0);
        MPIR_Pageguard_unregister(r);
    }
}
END_TEST

START_TEST(bad_arguments)
{
    char *mem = map_pages(4);
    MPIR_Pageguard_region_t *r;
    size_t off[2] = { 0, 100 }, len[2] = { 200, 100 };  /* overlapping */
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 2, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_ERR_ARG);
    size_t off2[2] = { 100, 0 }, len2[2] = { 10, 10 };  /* unsorted */
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 2, off2, len2, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_ERR_ARG);
    size_t off3 = 4 * ps - 10, len3 = 11;       /* past the end */
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, &off3, &len3, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_ERR_ARG);
    ck_assert_int_eq(MPIR_Pageguard_register(NULL, 4 * ps, 1, &off3, &len3, MPIR_PAGEGUARD_RECV,
                                             0, &r), MPIR_PAGEGUARD_ERR_ARG);
    for (int p = 0; p < 4; p++)
        ck_assert(readable(mem + p * ps));
    ck_assert_str_ne(MPIR_Pageguard_strerror(MPIR_PAGEGUARD_ERR_ARG), "unknown page-guard error");
}
END_TEST

/* Data lands only at completion. A page with bytes outside every sub-message (they may belong
 * to another object) is never protected: its sub-messages must complete before the return, and
 * landing them leaves the other bytes alone. */
START_TEST(landing_and_holes)
{
    char *mem = map_pages(6);
    size_t off[3] = { 0, 2 * ps + 100, 4 * ps }, len[3] = { ps, ps, 2 * ps };
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 6 * ps, 3, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    ck_assert(!readable(mem) && !readable(mem + 4 * ps) && !readable(mem + 5 * ps));
    ck_assert(readable(mem + ps));      /* page 1: only hole bytes */
    ck_assert(readable(mem + 2 * ps) && readable(mem + 3 * ps));        /* sub 1 and holes */
    ck_assert(!MPIR_Pageguard_sub_is_sync(r, 0) && !MPIR_Pageguard_sub_is_sync(r, 2));
    ck_assert(MPIR_Pageguard_sub_is_sync(r, 1));
    char *staging = MPIR_Pageguard_staging(r);
    for (int k = 0; k < 3; k++)
        memset(staging + off[k], 'a' + k, len[k]);
    MPIR_Pageguard_complete(r, 1);
    ck_assert_int_eq(mem[2 * ps + 99], 0x11);   /* hole byte kept */
    ck_assert_int_eq(mem[2 * ps + 100], 'b');
    ck_assert_int_eq(mem[3 * ps + 99], 'b');
    ck_assert_int_eq(mem[3 * ps + 100], 0x11);
    ck_assert(!readable(mem) && !readable(mem + 4 * ps));
    MPIR_Pageguard_complete(r, 0);
    ck_assert(readable(mem) && !readable(mem + 4 * ps));
    MPIR_Pageguard_complete(r, 2);
    ck_assert(MPIR_Pageguard_all_released(r));
    ck_assert_int_eq(mem[0], 'a');
    ck_assert_int_eq(mem[6 * ps - 1], 'c');
    MPIR_Pageguard_unregister(r);
}
END_TEST

/* A sub-message given at registration (a self block) is copied in before the guard and is
 * complete at once; a page only it covers stays open, a page it shares waits for the other. */
START_TEST(filled_sub_messages_land_at_registration)
{
    char *mem = map_pages(4);
    char *self = malloc(ps + 100);
    memset(self, 's', ps + 100);
    size_t off[2] = { 0, ps + 100 }, len[2] = { ps + 100, 3 * ps - 100 };
    const void *fill[2] = { self, NULL };
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register_filled(mem, 4 * ps, 2, off, len, fill,
                                                    MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    ck_assert(readable(mem) && mem[0] == 's' && mem[ps - 1] == 's');
    ck_assert(!readable(mem + ps) && !readable(mem + 3 * ps));
    char *staging = MPIR_Pageguard_staging(r);
    memset(staging + off[1], 'o', len[1]);
    ck_assert_int_eq(MPIR_Pageguard_complete(r, 0), MPIR_PAGEGUARD_OK);        /* no-op */
    ck_assert(!readable(mem + ps));
    ck_assert_int_eq(MPIR_Pageguard_complete(r, 1), MPIR_PAGEGUARD_OK);
    ck_assert(MPIR_Pageguard_all_released(r));
    ck_assert(mem[ps + 99] == 's' && mem[ps + 100] == 'o' && mem[4 * ps - 1] == 'o');
    MPIR_Pageguard_unregister(r);

    /* everything at hand: nothing to guard; a send region takes no fill */
    const void *both[2] = { self, self };
    ck_assert_int_eq(MPIR_Pageguard_register_filled(mem, 2 * ps + 200, 2, off, (size_t[]) {
                                                    ps + 100, ps + 100}, both,
                                                    MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_ERR_NOTHING);
    ck_assert_int_eq(MPIR_Pageguard_register_filled(mem, 4 * ps, 2, off, len, fill,
                                                    MPIR_PAGEGUARD_SEND, 0, &r),
                     MPIR_PAGEGUARD_ERR_ARG);
    free(self);
    munmap(mem, 4 * ps);
}
END_TEST

static int replaced_calls;
static int note_replaced(void *addr, size_t len)
{
    (void) addr;
    (void) len;
    replaced_calls++;
    return 1;
}

/* With config.move_min, the whole pages of a sub-message move from staging into the buffer
 * (announced through pages_replaced), open at once; its partial pages and pages shared with
 * another sub-message are copied; the data is the same either way, and the buffer's mapping
 * still serves the next region. */
START_TEST(whole_pages_move_into_the_buffer)
{
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = {.move_min = ps,.pages_replaced = note_replaced };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    char *mem = map_pages(10);
    char *buf = mem + 100;      /* not page aligned: staging keeps the offset in the page */
    size_t off[2] = { 0, 4 * ps + 50 }, len[2] = { 4 * ps + 50, 5 * ps - 300 };
    for (int round = 0; round < 3; round++) {
        MPIR_Pageguard_region_t *r;
        ck_assert_int_eq(MPIR_Pageguard_register(buf, 9 * ps - 250, 2, off, len,
                                                 MPIR_PAGEGUARD_RECV, MPIR_PAGEGUARD_MOVE, &r),
                         MPIR_PAGEGUARD_OK);
        char *staging = MPIR_Pageguard_staging(r);
        for (int k = 0; k < 2; k++)
            for (size_t b = 0; b < len[k]; b++)
                staging[off[k] + b] = (char) (round * 7 + k * 3 + b % 13);
        MPIR_Pageguard_stats_t before, after;
        MPIR_Pageguard_get_stats(&before);
        ck_assert_int_eq(MPIR_Pageguard_complete(r, 0), MPIR_PAGEGUARD_OK);
        ck_assert(readable(mem + ps) && readable(mem + 3 * ps));
        ck_assert(!readable(mem + 4 * ps));     /* shared with sub 1 */
        ck_assert_int_eq(MPIR_Pageguard_complete(r, 1), MPIR_PAGEGUARD_OK);
        MPIR_Pageguard_get_stats(&after);
        ck_assert(MPIR_Pageguard_all_released(r));
        for (int k = 0; k < 2; k++)
            for (size_t b = 0; b < len[k]; b++)
                ck_assert_int_eq(buf[off[k] + b], (char) (round * 7 + k * 3 + b % 13));
        ck_assert_int_eq(mem[99], 0x11);
        ck_assert_int_eq(mem[10 * ps - 1], 0x11);
        if (MPII_Pageguard_mapping_allows((uintptr_t) mem, PROT_READ) >= 0) {
            /* pages 1-3 (sub 0) and 5-7 (sub 1) moved */
            ck_assert_uint_eq(after.pages_moved - before.pages_moved, 6);
            ck_assert_int_gt(replaced_calls, 0);
        }
        MPIR_Pageguard_unregister(r);
    }
    munmap(mem, 10 * ps);
}
END_TEST

/* Both ways of asking about a mapping agree: its bounds, protection, and whether it is other
 * than private anonymous memory. */
START_TEST(mapping_queries_agree)
{
    char *mem = map_pages(3);
    ck_assert_int_eq(mprotect(mem + ps, ps, PROT_READ), 0);
    int fd = open("/proc/self/exe", O_RDONLY);
    char *file = mmap(NULL, ps, PROT_READ, MAP_PRIVATE, fd, 0);
    ck_assert_ptr_ne(file, MAP_FAILED);
    close(fd);
    uintptr_t at[3] = { (uintptr_t) mem, (uintptr_t) mem + ps + 5, (uintptr_t) file };
    for (int i = 0; i < 3; i++) {
        uintptr_t s1, e1, s2, e2;
        int p1, p2, sh1, sh2;
        ck_assert_int_eq(MPII_Pageguard_mapping_by_text(at[i], &s1, &e1, &p1, &sh1), 1);
        int rc = MPII_Pageguard_mapping_at(at[i], &s2, &e2, &p2, &sh2);
        ck_assert_int_eq(rc, 1);
        ck_assert(s1 == s2 && e1 == e2 && p1 == p2 && sh1 == sh2);
        ck_assert_int_eq(sh1, i == 2);
        ck_assert_int_eq(p1, i == 0 ? (PROT_READ | PROT_WRITE) : PROT_READ);
    }
    munmap(mem, 3 * ps);
    uintptr_t s, e;
    int p, sh;
    ck_assert_int_eq(MPII_Pageguard_mapping_by_text((uintptr_t) mem, &s, &e, &p, &sh), 0);
    munmap(file, ps);
}
END_TEST

/* Sub-messages in separate objects (a gather into blocks far apart, as ROMIO's tests do): the
 * pages between them, and pages the blocks share with other objects, stay open; only pages that
 * one run of adjacent sub-messages covers entirely are protected, and a run that covers no whole
 * page leaves nothing to guard. */
START_TEST(separate_objects_between_sub_messages)
{
    char *mem = map_pages(8);
    size_t off[3] = { 10, 3 * ps + 7, 5 * ps + 20 }, len[3] = { 3, 5, 2 * ps };
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 8 * ps, 3, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    for (int p = 0; p < 8; p++)
        ck_assert_int_eq(readable(mem + p * ps), p != 6);
    ck_assert(MPIR_Pageguard_sub_is_sync(r, 0) && MPIR_Pageguard_sub_is_sync(r, 1));
    ck_assert(MPIR_Pageguard_sub_is_sync(r, 2));        /* it touches pages 5 and 7 too */
    mem[5 * ps + 19] = 'x';     /* another object's byte, on the sub-message's first page */
    char *staging = MPIR_Pageguard_staging(r);
    memset(staging + off[2], 'c', len[2]);
    MPIR_Pageguard_complete(r, 2);
    ck_assert(readable(mem + 6 * ps) && mem[6 * ps] == 'c' && mem[5 * ps + 20] == 'c');
    ck_assert(mem[5 * ps + 19] == 'x' && mem[7 * ps + 20] == 0x11);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_complete(r, 1);
    MPIR_Pageguard_unregister(r);

    size_t soff[2] = { 100, 3 * ps }, slen[2] = { 8, 16 };
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 8 * ps, 2, soff, slen, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_ERR_NOTHING);
    munmap(mem, 8 * ps);
}
END_TEST

/* A released region's staging mapping serves the next region of a similar size (no fresh pages
 * to fault in), never one less than half its size, and its old bytes never reach the holes of
 * the new buffer. Without a cache (config.staging_cache 0) nothing is kept. */
START_TEST(staging_is_kept_for_the_next_region)
{
    MPIR_Pageguard_config_t cfg = {.staging_cache = 16 * ps };
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_region_t *r;
    char *mem = map_pages(8);
    size_t off[2] = { 0, 3 * ps }, len[2] = { 2 * ps, ps };

    MPIR_Pageguard_finalize();
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, off, &(size_t) { 4 * ps },
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    char *first = MPIR_Pageguard_staging(r);
    memset(first, 'x', 4 * ps);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_unregister(r);

    memset(mem, 0x11, 8 * ps);
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 2, off, len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_OK);
    char *second = MPIR_Pageguard_staging(r);
    ck_assert_ptr_eq(second, first);
    memset(second, 'y', 2 * ps);
    memset(second + 3 * ps, 'z', ps);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_complete(r, 1);
    ck_assert(MPIR_Pageguard_all_released(r));
    ck_assert_int_eq(mem[2 * ps - 1], 'y');
    ck_assert_int_eq(mem[2 * ps], 0x11);        /* hole: the old 'x' never lands */
    ck_assert_int_eq(mem[3 * ps - 1], 0x11);
    ck_assert_int_eq(mem[3 * ps], 'z');
    MPIR_Pageguard_unregister(r);
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.staging_reused, 1);
    ck_assert_uint_eq(st.staging_cached, 4 * ps);

    /* one page is less than half of the kept four: a fresh mapping */
    ck_assert_int_eq(MPIR_Pageguard_register(mem + 4 * ps, ps, 1, off, &(size_t) { ps },
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    ck_assert_ptr_ne(MPIR_Pageguard_staging(r), first);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_unregister(r);

    MPIR_Pageguard_finalize();
    ck_assert_int_eq(MPIR_Pageguard_init(NULL), MPIR_PAGEGUARD_OK);
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.staging_cached, 0);
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 2, off, len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_OK);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_complete(r, 1);
    MPIR_Pageguard_unregister(r);
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.staging_cached, 0);
    munmap(mem, 8 * ps);
}
END_TEST

/* Pages unmapped with data still on the way (free() of a pending buffer): forgotten, they are
 * never landed, protected or opened again, and whatever maps there next is left alone; the
 * pages around them land as usual. Forgetting does not wait. */
START_TEST(forgotten_pages_are_left_alone)
{
    char *mem = map_pages(8);
    size_t off[4], len[4];
    split(8 * ps, 4, off, len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 8 * ps, 4, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    char *staging = MPIR_Pageguard_staging(r);
    memset(staging, 'z', 8 * ps);
    /* pages 3..5 go away; a partial page at either end of the range is not theirs to forget */
    ck_assert_uint_eq(MPIR_Pageguard_forget_recv(mem + 3 * ps - 10, 3 * ps + 20), 3);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(mem + 3 * ps, 3 * ps, MPIR_PAGEGUARD_COUNT),
                      0);
    ck_assert(readable(mem + 3 * ps) && readable(mem + 6 * ps - 1));     /* madvise keeps them */
    ck_assert(!readable(mem + 2 * ps) && !readable(mem + 6 * ps));
    ck_assert_int_eq(munmap(mem + 3 * ps, 3 * ps), 0);
    char *again = mmap(mem + 3 * ps, 3 * ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                       -1, 0);
    ck_assert_ptr_eq(again, mem + 3 * ps);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(MPIR_Pageguard_complete(r, k), MPIR_PAGEGUARD_OK);
    ck_assert(MPIR_Pageguard_all_released(r));
    ck_assert_int_eq(mem[0], 'z');
    ck_assert_int_eq(mem[3 * ps - 1], 'z');
    ck_assert_int_eq(mem[6 * ps], 'z');
    ck_assert_int_eq(mem[8 * ps - 1], 'z');
    for (size_t b = 3 * ps; b < 6 * ps; b += 512)
        ck_assert_int_eq(mem[b], 0);    /* the new mapping: not landed, still read-only */
    MPIR_Pageguard_unregister(r);
    ck_assert(!readable(mem + 3 * ps) || mem[3 * ps] == 0);
    ck_assert_uint_eq(MPIR_Pageguard_forget_recv(mem, 8 * ps), 0);
    munmap(mem, 8 * ps);
}
END_TEST

/* Landing and giving a page up claim it by compare-and-swap, so the data never lands in a page
 * the program owns again: a page being landed is not given up (the thread that wanted it
 * waits), and landing skips a page being given up. */
START_TEST(landing_and_giving_up_exclude_each_other)
{
    char *mem = map_pages(4);
    size_t off[1] = { 0 }, len[1] = { 4 * ps };
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    memset(MPIR_Pageguard_staging(r), 'q', 4 * ps);

    atomic_store(&r->page_state[1], MPII_PAGE_LANDING);
    ck_assert_int_eq(MPII_Pageguard_forget_page(r, 1), 0);
    ck_assert_int_eq(atomic_load(&r->page_state[1]), MPII_PAGE_LANDING);
    atomic_store(&r->page_state[1], MPII_PAGE_GUARDED);

    atomic_store(&r->page_state[2], MPII_PAGE_FORGETTING);
    ck_assert_int_eq(MPII_Pageguard_mprotect((uintptr_t) mem + 2 * ps, ps,
                                             PROT_READ | PROT_WRITE), 0);
    memset(mem + 2 * ps, 'p', ps);      /* the program's again */
    ck_assert_int_eq(MPIR_Pageguard_complete(r, 0), MPIR_PAGEGUARD_OK);
    ck_assert_int_eq(mem[ps], 'q');
    ck_assert_int_eq(mem[2 * ps], 'p');
    ck_assert_int_eq(mem[3 * ps - 1], 'p');
    ck_assert_int_eq(mem[3 * ps], 'q');
    ck_assert_int_eq(atomic_load(&r->page_state[2]), MPII_PAGE_FORGETTING);
    atomic_store(&r->page_state[2], MPII_PAGE_FORGOTTEN);
    MPIR_Pageguard_unregister(r);
    munmap(mem, 4 * ps);
}
END_TEST

struct forgetter {
    MPIR_Pageguard_region_t *r;
    char *page;
};

static void *finish_forgetting_later(void *arg)
{
    struct forgetter *f = arg;
    sleep_ms(150);
    MPII_Pageguard_mprotect((uintptr_t) f->page, ps, PROT_READ | PROT_WRITE);
    atomic_store(&f->r->page_state[0], MPII_PAGE_FORGOTTEN);
    return NULL;
}

/* A fault on a page being given up runs again until the thread giving it up has opened it,
 * however long that thread is held up. */
START_TEST(fault_on_page_being_given_up_runs_again)
{
    char *mem = map_pages(2);
    size_t off[1] = { 0 }, len[1] = { 2 * ps };
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 2 * ps, 1, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    atomic_store(&r->page_state[0], MPII_PAGE_FORGETTING);
    struct forgetter f = { r, mem };
    pthread_t t;
    pthread_create(&t, NULL, finish_forgetting_later, &f);
    ck_assert_int_eq(((volatile char *) mem)[10], 0x11);  /* untouched by landing */
    pthread_join(t, NULL);
    MPIR_Pageguard_unregister(r);
    munmap(mem, 2 * ps);
}
END_TEST

/* A page shared by two sub-messages opens only when both are complete. */
START_TEST(shared_page_waits_for_both)
{
    char *mem = map_pages(3);
    size_t off[2] = { 0, ps + ps / 2 }, len[2] = { ps + ps / 2, ps + ps / 2 };
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 3 * ps, 2, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    MPIR_Pageguard_complete(r, 0);
    ck_assert(readable(mem));
    ck_assert(!readable(mem + ps));
    MPIR_Pageguard_complete(r, 1);
    ck_assert(readable(mem + ps) && readable(mem + 2 * ps));
    MPIR_Pageguard_unregister(r);
}
END_TEST

/* Sub-message layout shared with helper threads */
static size_t test_off[64], test_len[64];

struct completer {
    MPIR_Pageguard_region_t *r;
    int n, delay_ms;
    const int *order;
    char fill;
};

static void *complete_later(void *arg)
{
    struct completer *c = arg;
    char *staging = MPIR_Pageguard_staging(c->r);
    for (int i = 0; i < c->n; i++) {
        sleep_ms(c->delay_ms);
        int k = c->order ? c->order[i] : i;
        if (staging) {
            /* write every byte of sub k: a fault handler must never see a partial page */
            for (size_t b = 0; b < test_len[k]; b++)
                staging[test_off[k] + b] = (char) (c->fill + k);
        }
        ck_assert_int_eq(MPIR_Pageguard_complete(c->r, k), MPIR_PAGEGUARD_OK);
    }
    return NULL;
}

START_TEST(fault_waits_for_completion)
{
    char *mem = map_pages(8);
    split(8 * ps, 4, test_off, test_len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 8 * ps, 4, test_off, test_len,
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    const int order[4] = { 3, 2, 1, 0 };
    struct completer c = { r, 4, 20, order, 'A' };
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &c);
    /* touch sub-messages in forward order: each read faults and waits for its data */
    for (int k = 0; k < 4; k++) {
        volatile char *p = (volatile char *) mem + test_off[k] + test_len[k] - 1;
        ck_assert_int_eq(*p, 'A' + k);
        ck_assert_int_eq(mem[test_off[k]], 'A' + k);
    }
    pthread_join(t, NULL);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_ge(st.faults, 1);
    ck_assert_uint_gt(st.stall_ns, 0);
    ck_assert_uint_eq(st.foreign_faults, 0);
    /* first touches recorded in touch order */
    int o;
    uint64_t ns;
    MPIR_Pageguard_first_touch(r, 0, &o, &ns);
    ck_assert_int_eq(o, 1);
    ck_assert_uint_gt(ns, 0);
    MPIR_Pageguard_unregister(r);
}
END_TEST

/* A buffer reused by the next collective while the previous region, finished, is still
 * registered: a read waits for the new region's data instead of faulting over and over on the
 * old region's released page. */
START_TEST(reused_buffer_waits_for_the_newer_region)
{
    char *mem = map_pages(8);
    split(8 * ps, 4, test_off, test_len);
    MPIR_Pageguard_region_t *old, *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 8 * ps, 4, test_off, test_len,
                                             MPIR_PAGEGUARD_RECV, 0, &old), MPIR_PAGEGUARD_OK);
    for (int k = 0; k < 4; k++)
        MPIR_Pageguard_complete(old, k);
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 8 * ps, 4, test_off, test_len,
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    MPIR_Pageguard_stats_t st0, st;
    MPIR_Pageguard_get_stats(&st0);
    struct completer c = { r, 4, 20, NULL, 'N' };
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &c);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(((volatile char *) mem)[test_off[k] + 1], 'N' + k);
    pthread_join(t, NULL);
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_le(st.faults - st0.faults, 8);       /* waits, does not spin */
    ck_assert_uint_gt(st.stall_ns, st0.stall_ns);
    MPIR_Pageguard_unregister(r);
    MPIR_Pageguard_unregister(old);
}
END_TEST

START_TEST(first_touch_order_trace_mode)
{
    char *mem = map_pages(6);
    size_t off[6], len[6];
    split(6 * ps, 6, off, len);
    for (int p = 0; p < 6; p++)
        memset(mem + p * ps, '0' + p, ps);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 6 * ps, 6, off, len, MPIR_PAGEGUARD_RECV,
                                             MPIR_PAGEGUARD_TRACE, &r), MPIR_PAGEGUARD_OK);
    const int touch[6] = { 4, 0, 5, 2 };        /* 1 and 3 never touched */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(((volatile char *) mem)[touch[i] * ps + 7], '0' + touch[i]);
        ck_assert_int_eq(mem[touch[i] * ps + 8], '0' + touch[i]);      /* no second fault */
    }
    int expected[6] = { 2, 0, 4, 0, 1, 3 };
    uint64_t prev_ns = 0;
    for (int i = 0; i < 4; i++) {
        int o;
        uint64_t ns;
        MPIR_Pageguard_first_touch(r, touch[i], &o, &ns);
        ck_assert_int_eq(o, expected[touch[i]]);
        ck_assert_uint_ge(ns, prev_ns);
        prev_ns = ns;
    }
    for (int k = 0; k < 6; k++) {
        int o;
        uint64_t ns;
        MPIR_Pageguard_first_touch(r, k, &o, &ns);
        ck_assert_int_eq(o, expected[k]);
    }
    ck_assert(!readable(mem + 1 * ps));
    ck_assert(!MPIR_Pageguard_all_released(r));
    MPIR_Pageguard_unregister(r);       /* abandoned: opens the rest */
    ck_assert(readable(mem + 1 * ps) && readable(mem + 3 * ps));
    ck_assert_int_eq(mem[3 * ps], '3');
}
END_TEST

START_TEST(send_guard_blocks_writes_not_reads)
{
    char *mem = map_pages(4);
    split(4 * ps, 2, test_off, test_len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 2, test_off, test_len,
                                             MPIR_PAGEGUARD_SEND, 0, &r), MPIR_PAGEGUARD_OK);
    ck_assert_ptr_null(MPIR_Pageguard_staging(r));
    ck_assert_int_eq(mem[3 * ps], 0x11);        /* reading a send buffer never faults */
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.faults, 0);
    struct completer c = { r, 2, 30, NULL, 0 };
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &c);
    mem[3 * ps] = 'w';                  /* waits until sub 1 has "left" */
    ck_assert_int_eq(MPIR_Pageguard_complete(r, 1), MPIR_PAGEGUARD_OK);     /* idempotent */
    pthread_join(t, NULL);
    ck_assert_int_eq(mem[3 * ps], 'w');
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.faults, 1);
    MPIR_Pageguard_unregister(r);
}
END_TEST

static volatile sig_atomic_t previous_called;
static char *foreign_page;

static void previous_handler(int sig, siginfo_t * info, void *uctx)
{
    (void) sig;
    (void) uctx;
    previous_called++;
    if ((char *) info->si_addr >= foreign_page && (char *) info->si_addr < foreign_page + ps)
        mprotect(foreign_page, ps, PROT_READ | PROT_WRITE);
}

static void install_previous(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = previous_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
}

/* A library that replaces the handler without going through our sigaction (glibc's own entry,
 * as a statically linked library or a raw system call would) */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
static void install_previous_raw(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = previous_handler;
    sa.sa_flags = SA_SIGINFO;
    __sigaction(SIGSEGV, &sa, NULL);
}

START_TEST(foreign_fault_reaches_previous_handler)
{
    MPIR_Pageguard_finalize();  /* re-init with a previous handler in place */
    install_previous();
    ck_assert_int_eq(MPIR_Pageguard_init(NULL), MPIR_PAGEGUARD_OK);
    char *mem = map_pages(4);
    MPIR_Pageguard_region_t *r = guard_two_pages(mem);
    foreign_page = mem + 3 * ps;
    mprotect(foreign_page, ps, PROT_NONE);
    ((volatile char *) foreign_page)[0] = 5;    /* not ours: the previous handler opens it */
    ck_assert_int_eq(previous_called, 1);
    ck_assert_int_eq(foreign_page[0], 5);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.foreign_faults, 1);
    ck_assert_uint_eq(st.faults, 0);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_unregister(r);
}
END_TEST

/* With SIG_DFL before us, a real segfault still kills the process with SIGSEGV. */
START_TEST(foreign_fault_default_action)
{
    char *mem = map_pages(1);
    mprotect(mem, ps, PROT_NONE);
    ((volatile char *) mem)[0] = 1;
}
END_TEST

START_TEST(null_dereference_default_action)
{
    volatile char *p = NULL;
    p[0] = 1;
}
END_TEST

/* A two-page receive region whose one sub-message another thread completes 20 ms later with
 * fill: a touch waits in our handler and reads the data. */
static void touch_waits_for_data(char fill)
{
    char *mem = map_pages(2);
    MPIR_Pageguard_region_t *r = guard_two_pages(mem);
    struct completer c = { r, 1, 20, NULL, fill };
    test_off[0] = 0;
    test_len[0] = 2 * ps;
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &c);
    ck_assert_int_eq(((volatile char *) mem)[5], fill);
    pthread_join(t, NULL);
    MPIR_Pageguard_unregister(r);
}

/* A fault on a page the program protected itself (previous_handler opens it again). */
static void foreign_fault(void)
{
    foreign_page = map_pages(1);
    mprotect(foreign_page, ps, PROT_NONE);
    ((volatile char *) foreign_page)[0] = 1;
}

START_TEST(replaced_handler_is_reinstalled)
{
    install_previous_raw();     /* someone replaces our handler after init */
    touch_waits_for_data('R');  /* registering found ours replaced: ours again, no crash */
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.replaced, 1);
    ck_assert_int_eq(MPIR_Pageguard_check_handler(), 1);
    /* and the newcomer now gets the faults that are not ours */
    foreign_fault();
    ck_assert_int_eq(previous_called, 1);
}
END_TEST

/* The program installs its handler after ours, with sigaction: it goes behind ours, reads
 * back what it installed, and gets the faults that are not ours. */
START_TEST(program_handler_goes_behind_ours)
{
    install_previous();
    struct sigaction now;
    ck_assert_int_eq(sigaction(SIGSEGV, NULL, &now), 0);
    ck_assert(now.sa_sigaction == previous_handler);
    touch_waits_for_data('B');
    ck_assert_int_eq(previous_called, 0);
    foreign_fault();
    ck_assert_int_eq(previous_called, 1);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.replaced, 0);
}
END_TEST

/* A previous handler that leaves with siglongjmp: the next foreign fault reaches it too. */
static sigjmp_buf jump_back;
static volatile sig_atomic_t jumped;
static void jumping_handler(int sig, siginfo_t * info, void *uctx)
{
    jumped++;
    siglongjmp(jump_back, 1);
}

START_TEST(previous_handler_may_siglongjmp)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = jumping_handler;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    char *page = map_pages(1);
    mprotect(page, ps, PROT_NONE);
    for (int i = 0; i < 3; i++)
        if (!sigsetjmp(jump_back, 1))
            ((volatile char *) page)[0] = 1;
    ck_assert_int_eq(jumped, 3);
}
END_TEST

/* A page released by us but still in a registered region, protected again by the program: its
 * faults are the program's (they used to repeat for ever). */
START_TEST(released_page_protected_again_is_foreign)
{
    install_previous();
    char *mem = map_pages(2);
    MPIR_Pageguard_region_t *r = guard_two_pages(mem);
    MPIR_Pageguard_complete(r, 0);
    ck_assert(MPIR_Pageguard_all_released(r));
    foreign_page = mem;
    mprotect(foreign_page, ps, PROT_NONE);
    ((volatile char *) foreign_page)[7] = 1;
    ck_assert_int_eq(previous_called, 1);
    MPIR_Pageguard_unregister(r);
}
END_TEST

/* A thread with SIGSEGV blocked would be killed on a guarded page: it cannot block it. */
START_TEST(segv_is_never_blocked)
{
    sigset_t all, now;
    sigfillset(&all);
    ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &all, NULL), 0);
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    ck_assert(!sigismember(&now, SIGSEGV));
    ck_assert(sigismember(&now, SIGUSR1));
    ck_assert_int_eq(sigprocmask(SIG_SETMASK, &all, NULL), 0);
    sigprocmask(SIG_BLOCK, NULL, &now);
    ck_assert(!sigismember(&now, SIGSEGV));
    struct sigaction sa, back;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sa.sa_mask = all;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR1, NULL, &back);
    ck_assert(!sigismember(&back.sa_mask, SIGSEGV));

    touch_waits_for_data('M');
    sigemptyset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
}
END_TEST

START_TEST(replaced_handler_switches_off)
{
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = { .on_replaced = MPIR_PAGEGUARD_SWITCH_OFF };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    install_previous_raw();
    char *mem = map_pages(2);
    size_t off = 0, len = 2 * ps;
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 2 * ps, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_ERR_OFF);
    ck_assert(!MPIR_Pageguard_is_on());
    ck_assert(readable(mem));
}
END_TEST

START_TEST(budget_refusal_leaves_buffer_alone)
{
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = { .map_budget = 6 };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    char *mem = map_pages(16);
    size_t off[16], len[16];
    split(16 * ps, 16, off, len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 16 * ps, 16, off, len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_ERR_BUDGET);
    for (int p = 0; p < 16; p++)
        ck_assert(readable(mem + p * ps));
    /* a region within budget (1 run + 2 releases = 6 mappings) is fine, and gives it back */
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 16 * ps, 2, off, len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_OK);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.maps_in_use, 6);
    ck_assert_uint_eq(st.refused_budget, 1);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_complete(r, 1);
    MPIR_Pageguard_unregister(r);
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.maps_in_use, 0);
}
END_TEST

/* A shared mapping cannot be written through /proc/self/mem while protected: refused (seen
 * as shared where the kernel tells, else by the landing check), intact. */
START_TEST(shared_mapping_refused_for_receive)
{
    char *mem = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(mem, MAP_FAILED);
    memset(mem, 7, 4 * ps);
    size_t off = 0, len = 4 * ps;
    MPIR_Pageguard_region_t *r;
    int rc = MPIR_Pageguard_register(mem, 4 * ps, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0, &r);
    ck_assert(rc == MPIR_PAGEGUARD_ERR_PROT || rc == MPIR_PAGEGUARD_ERR_LANDING);
    for (int p = 0; p < 4; p++)
        ck_assert(readable(mem + p * ps) && mem[p * ps] == 7);
}
END_TEST

/* The protection a range had: each method available here agrees, and refuses what is not
 * private and read-write everywhere. */
START_TEST(protection_of_a_range)
{
    const MPII_Pageguard_prot_method_t methods[] = { MPII_PAGEGUARD_BY_QUERY,
        MPII_PAGEGUARD_BY_TEXT, MPII_PAGEGUARD_BY_POPULATE
    };
    for (int m = 0; m < 3; m++) {
        char *mem = map_pages(4);
        uintptr_t lo = (uintptr_t) mem, hi = lo + 4 * ps;
        int prot = 0;
        int rc = MPII_Pageguard_prot_by(methods[m], lo, hi, &prot);
        if (rc == MPII_PAGEGUARD_PROT_UNKNOWN) {
            munmap(mem, 4 * ps);
            continue;   /* this kernel lacks the method */
        }
        ck_assert_int_eq(rc, MPII_PAGEGUARD_PROT_OK);
        ck_assert_int_eq(prot, PROT_READ | PROT_WRITE);
        mprotect(mem + ps, ps, PROT_READ);
        ck_assert_int_eq(MPII_Pageguard_prot_by(methods[m], lo, hi, &prot),
                         MPII_PAGEGUARD_PROT_REFUSED);
        ck_assert_int_eq(MPII_Pageguard_prot_by(methods[m], lo + 2 * ps, hi, &prot),
                         MPII_PAGEGUARD_PROT_OK);
        munmap(mem + 3 * ps, ps);
        ck_assert_int_eq(MPII_Pageguard_prot_by(methods[m], lo + 2 * ps, hi, &prot),
                         MPII_PAGEGUARD_PROT_REFUSED);
        munmap(mem, 3 * ps);
        if (methods[m] == MPII_PAGEGUARD_BY_POPULATE)
            continue;   /* cannot see sharing */
        char *shared = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                            -1, 0);
        ck_assert_ptr_ne(shared, MAP_FAILED);
        lo = (uintptr_t) shared;
        ck_assert_int_eq(MPII_Pageguard_prot_by(methods[m], lo, lo + 2 * ps, &prot),
                         MPII_PAGEGUARD_PROT_REFUSED);
        munmap(shared, 2 * ps);
    }
}
END_TEST

/* Shared memory is never guarded to send from: another process may write it whatever our
 * protection, and the late send would carry its data. */
START_TEST(shared_mapping_refused_for_send)
{
    char *mem = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(mem, MAP_FAILED);
    size_t off = 0, len = 4 * ps;
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, &off, &len, MPIR_PAGEGUARD_SEND, 0,
                                             &r), MPIR_PAGEGUARD_ERR_PROT);
    mem[0] = 1;         /* still writable */
    munmap(mem, 4 * ps);
}
END_TEST

/* Lookups first compare with the span of all registered regions, which grows and shrinks with
 * them: each region's pages are still found as others come and go. */
START_TEST(guarded_pages_follow_regions)
{
    char *a = map_pages(4), *b = map_pages(4);
    size_t off = 0, len = 4 * ps;
    MPIR_Pageguard_region_t *ra, *rb;
    ck_assert_int_eq(MPIR_Pageguard_register(a, len, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0, &ra),
                     MPIR_PAGEGUARD_OK);
    ck_assert_int_eq(MPIR_Pageguard_register(b, len, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0, &rb),
                     MPIR_PAGEGUARD_OK);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(a + ps, ps, MPIR_PAGEGUARD_COUNT), 1);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(b, len, MPIR_PAGEGUARD_COUNT), 4);
    MPIR_Pageguard_unregister(ra);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(a, len, MPIR_PAGEGUARD_COUNT), 0);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(b + 3 * ps, 1, MPIR_PAGEGUARD_COUNT), 1);
    ck_assert_int_eq(MPIR_Pageguard_register(a, len, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0, &ra),
                     MPIR_PAGEGUARD_OK);     /* the span had shrunk to b's pages */
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(a + 2 * ps, 2 * ps, MPIR_PAGEGUARD_COUNT), 2);
    MPIR_Pageguard_unregister(ra);
    MPIR_Pageguard_unregister(rb);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(b, len, MPIR_PAGEGUARD_COUNT), 0);
    ck_assert_int_eq(MPIR_Pageguard_register(a, len, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0, &ra),
                     MPIR_PAGEGUARD_OK);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(a, len, MPIR_PAGEGUARD_COUNT), 4);
    MPIR_Pageguard_unregister(ra);
    munmap(a, len);
    munmap(b, len);
}
END_TEST

/* Window memory (exposed) is refused for both kinds while exposed, by any overlap; each
 * owner's ranges go with it, and a range exposed twice stays until both are gone. */
START_TEST(exposed_memory_is_refused)
{
    char *mem = map_pages(8);
    size_t off = 0, len = 4 * ps;
    int a, b;
    MPIR_Pageguard_region_t *r;
    MPIR_Pageguard_stats_t before, after;
    MPIR_Pageguard_get_stats(&before);
    MPIR_Pageguard_expose(&a, mem + 3 * ps, ps);
    MPIR_Pageguard_expose(&b, mem, 8 * ps);
    MPIR_Pageguard_expose(&b, mem + 6 * ps, 2 * ps);
    for (int kind = 0; kind < 2; kind++)
        ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, &off, &len,
                                                 (MPIR_Pageguard_kind_t) kind, 0, &r),
                         MPIR_PAGEGUARD_ERR_EXPOSED);
    MPIR_Pageguard_unexpose(&b, NULL);
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_ERR_EXPOSED);
    ck_assert_int_eq(MPIR_Pageguard_register(mem + 4 * ps, 4 * ps, 1, &off, &len,
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_unregister(r);
    MPIR_Pageguard_unexpose(&a, mem + 3 * ps);
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_OK);
    MPIR_Pageguard_complete(r, 0);
    MPIR_Pageguard_unregister(r);
    MPIR_Pageguard_get_stats(&after);
    ck_assert_uint_eq(after.refused_exposed - before.refused_exposed, 3);
    munmap(mem, 8 * ps);
}
END_TEST

/* Memory the program made read-only is never guarded (its pages would come back writable). */
START_TEST(read_only_send_is_refused)
{
    char *mem = map_pages(4);
    mprotect(mem, 4 * ps, PROT_READ);
    size_t off = 0, len = 4 * ps;
    MPIR_Pageguard_region_t *r;
    MPIR_Pageguard_stats_t before, after;
    MPIR_Pageguard_get_stats(&before);
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, &off, &len, MPIR_PAGEGUARD_SEND, 0,
                                             &r), MPIR_PAGEGUARD_ERR_PROT);
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 1, &off, &len, MPIR_PAGEGUARD_RECV, 0,
                                             &r), MPIR_PAGEGUARD_ERR_PROT);
    MPIR_Pageguard_get_stats(&after);
    ck_assert_uint_eq(after.refused_prot - before.refused_prot, 2);
    int prot;
    ck_assert_int_eq(MPII_Pageguard_prot_by(MPII_PAGEGUARD_BY_TEXT, (uintptr_t) mem,
                                            (uintptr_t) mem + 4 * ps, &prot),
                     MPII_PAGEGUARD_PROT_REFUSED);
    munmap(mem, 4 * ps);
}
END_TEST

/* Executable pages (a JIT's buffer) are executable again once released, where the system
 * allows writable executable memory. Sends on every kernel; receives where the kernel can
 * tell (PROCMAP_QUERY, Linux 6.11). */
START_TEST(executable_pages_stay_executable)
{
    char *mem = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE | PROT_EXEC,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return;
    uintptr_t lo = (uintptr_t) mem, hi = lo + 4 * ps;
    int prot = 0, have_query =
        MPII_Pageguard_prot_by(MPII_PAGEGUARD_BY_QUERY, lo, hi, &prot) == MPII_PAGEGUARD_PROT_OK;
    split(4 * ps, 2, test_off, test_len);
    for (int kind = 0; kind < 2; kind++) {
        if (kind == 0 && !have_query)
            continue;
        MPIR_Pageguard_region_t *r;
        ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 2, test_off, test_len,
                                                 kind ? MPIR_PAGEGUARD_SEND : MPIR_PAGEGUARD_RECV,
                                                 0, &r), MPIR_PAGEGUARD_OK);
        ck_assert_int_eq(MPIR_Pageguard_complete(r, 0), MPIR_PAGEGUARD_OK);
        ck_assert_int_eq(MPIR_Pageguard_complete(r, 1), MPIR_PAGEGUARD_OK);
        ck_assert_int_eq(MPII_Pageguard_prot_by(MPII_PAGEGUARD_BY_TEXT, lo, hi, &prot),
                         MPII_PAGEGUARD_PROT_OK);
        ck_assert_int_eq(prot, PROT_READ | PROT_WRITE | PROT_EXEC);
        MPIR_Pageguard_unregister(r);
    }
    munmap(mem, 4 * ps);
}
END_TEST

/* After a failed operation's pages were all opened, a late completion lands nothing. */
START_TEST(opened_region_lands_nothing)
{
    char *mem = map_pages(4);
    split(4 * ps, 2, test_off, test_len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 2, test_off, test_len,
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    memset(MPIR_Pageguard_staging(r), 0x22, 4 * ps);
    MPIR_Pageguard_open_all(r);
    mem[3 * ps] = 0x33; /* the program's again */
    ck_assert_int_eq(MPIR_Pageguard_complete(r, 1), MPIR_PAGEGUARD_OK);
    ck_assert_int_eq(mem[3 * ps], 0x33);
    MPIR_Pageguard_unregister(r);
}
END_TEST

static void *unregister_later(void *r)
{
    sleep_ms(1);
    MPIR_Pageguard_unregister(r);
    return NULL;
}

START_TEST(abandoned_region_wakes_waiters)
{
    char *mem = map_pages(2);
    MPIR_Pageguard_region_t *r = guard_two_pages(mem);
    pthread_t t;
    pthread_create(&t, NULL, unregister_later, r);
    (void) ((volatile char *) mem)[0];  /* either faults and is woken, or finds it open */
    pthread_join(t, NULL);
    ck_assert(readable(mem + ps));
}
END_TEST

static sigjmp_buf watchdog_jump;
static void watchdog(int sig)
{
    (void) sig;
    siglongjmp(watchdog_jump, 1);
}

static void install_watchdog(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = watchdog;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, old);
}

/* A watchdog timer leaves the handler's wait with siglongjmp (the program gives up on work
 * that reads received data): the wait's record is reaped when the region retires, instead of
 * pinning its slot for ever, and the count of waiting threads comes back. */
START_TEST(wait_left_by_longjmp_is_reaped)
{
    char *mem = map_pages(2);
    MPIR_Pageguard_region_t *r = guard_two_pages(mem);
    struct sigaction old;
    install_watchdog(&old);
    struct itimerval once = { {0, 0}, {0, 20000} };
    volatile int jumped = 0;
    if (!sigsetjmp(watchdog_jump, 1)) {
        setitimer(ITIMER_REAL, &once, NULL);
        (void) ((volatile char *) mem)[0];      /* waits until the timer jumps out */
    } else {
        jumped = 1;
    }
    ck_assert_int_eq(jumped, 1);
    ck_assert_int_eq(MPIR_Pageguard_waiting(), 1);      /* left behind by the jump */
    ck_assert_int_eq(MPIR_Pageguard_unregister(r), MPIR_PAGEGUARD_OK);
    ck_assert_int_eq(MPIR_Pageguard_waiting(), 0);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.waits_reaped, 1);
    ck_assert(readable(mem));
    sigaction(SIGALRM, &old, NULL);
    munmap(mem, 2 * ps);
}
END_TEST

static void *touch_first(void *mem)
{
    (void) ((volatile char *) mem)[0];
    return NULL;
}

/* A waiter on another thread, woken by the unregistration that then drains the records, is
 * waited for, never reaped (its last look may come after the drain read the clock). */
START_TEST(live_waiter_is_never_reaped)
{
    for (int i = 0; i < 50; i++) {
        char *mem = map_pages(2);
        MPIR_Pageguard_region_t *r = guard_two_pages(mem);
        pthread_t t;
        pthread_create(&t, NULL, touch_first, mem);
        sleep_ms(1);
        ck_assert_int_eq(MPIR_Pageguard_unregister(r), MPIR_PAGEGUARD_OK);
        pthread_join(t, NULL);
        munmap(mem, 2 * ps);
    }
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.waits_reaped, 0);
    ck_assert_int_eq(MPIR_Pageguard_waiting(), 0);
}
END_TEST

static void *jump_out_of_wait(void *mem)
{
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
    struct itimerval once = { {0, 0}, {0, 20000} };
    if (!sigsetjmp(watchdog_jump, 1)) {
        setitimer(ITIMER_REAL, &once, NULL);
        (void) ((volatile char *) mem)[0];
    }
    return NULL;        /* the thread ends with its wait left behind */
}

/* The wait of another thread, left by siglongjmp (that thread has even exited): reaped once it
 * has been silent for long enough, so the region still retires. */
START_TEST(silent_wait_of_another_thread_is_reaped)
{
    char *mem = map_pages(2);
    MPIR_Pageguard_region_t *r = guard_two_pages(mem);
    struct sigaction old;
    install_watchdog(&old);
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, NULL);    /* the timer's signal goes to the thread */
    pthread_t t;
    pthread_create(&t, NULL, jump_out_of_wait, mem);
    pthread_join(t, NULL);
    pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
    ck_assert_int_eq(MPIR_Pageguard_waiting(), 1);
    ck_assert_int_eq(MPIR_Pageguard_unregister(r), MPIR_PAGEGUARD_OK);
    ck_assert_int_eq(MPIR_Pageguard_waiting(), 0);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.waits_reaped, 1);
    sigaction(SIGALRM, &old, NULL);
    munmap(mem, 2 * ps);
}
END_TEST

#define NTHREADS 8
struct toucher {
    char *mem;
    int k;
    int ok;
};

static void *touch_sub(void *arg)
{
    struct toucher *t = arg;
    volatile char *p = (volatile char *) t->mem;
    t->ok = 1;
    for (size_t b = 0; b < test_len[t->k]; b += 512)
        t->ok &= (p[test_off[t->k] + b] == 'a' + t->k);
    return NULL;
}

START_TEST(many_threads_fault_at_once)
{
    size_t npages = 4 * NTHREADS;
    char *mem = map_pages(npages) + 123;        /* unaligned: the ends are synchronous */
    size_t len = npages * ps - 2 * 123;
    split(len, NTHREADS, test_off, test_len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, len, NTHREADS, test_off, test_len,
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    char *staging = MPIR_Pageguard_staging(r);
    for (int k = 0; k < NTHREADS; k++)
        memset(staging + test_off[k], 'a' + k, test_len[k]);
    /* as a collective would: complete the synchronous pieces before "returning" */
    for (int k = 0; k < NTHREADS; k++)
        if (MPIR_Pageguard_sub_is_sync(r, k))
            MPIR_Pageguard_complete(r, k);
    pthread_t threads[NTHREADS];
    struct toucher touchers[NTHREADS];
    for (int k = 0; k < NTHREADS; k++) {
        touchers[k] = (struct toucher) { mem, NTHREADS - 1 - k, 0 };
        pthread_create(&threads[k], NULL, touch_sub, &touchers[k]);
    }
    const int order[NTHREADS] = { 5, 2, 7, 0, 3, 6, 1, 4 };
    for (int i = 0; i < NTHREADS; i++) {
        sleep_ms(5);
        MPIR_Pageguard_complete(r, order[i]);
    }
    for (int k = 0; k < NTHREADS; k++) {
        pthread_join(threads[k], NULL);
        ck_assert_msg(touchers[k].ok, "thread %d read wrong data", k);
    }
    ck_assert(MPIR_Pageguard_all_released(r));
    MPIR_Pageguard_unregister(r);
}
END_TEST

START_TEST(stack_buffer)
{
    char buf[5 * 4096 + 300];
    memset(buf, 'z', sizeof(buf));
    size_t off[3], len[3];
    split(sizeof(buf), 3, off, len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(buf, sizeof(buf), 3, off, len, MPIR_PAGEGUARD_RECV,
                                             0, &r), MPIR_PAGEGUARD_OK);
    char *staging = MPIR_Pageguard_staging(r);
    for (int k = 0; k < 3; k++)
        memset(staging + off[k], 'A' + k, len[k]);
    for (int k = 0; k < 3; k++)
        MPIR_Pageguard_complete(r, k);
    for (int k = 0; k < 3; k++)
        ck_assert(buf[off[k]] == 'A' + k && buf[off[k] + len[k] - 1] == 'A' + k);
    MPIR_Pageguard_unregister(r);
}
END_TEST

static _Atomic int before_wait_calls;
static int count_before_wait(void *addr)
{
    before_wait_calls++;
    return MPIR_PAGEGUARD_WAIT;
}

/* A thread that cannot wait (it holds the lock completions need) must not go on without the
 * data either: the process aborts. */
static int cannot_wait(void *addr)
{
    before_wait_calls++;
    return MPIR_PAGEGUARD_CANNOT_WAIT;
}

START_TEST(thread_that_cannot_wait_aborts)
{
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = {.before_wait = cannot_wait };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    char *mem = map_pages(4);
    size_t off[2] = { 0, 2 * ps }, len[2] = { 2 * ps, 2 * ps };
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 4 * ps, 2, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    mem[ps + 5] = 'm';          /* SIGABRT here */
}
END_TEST

/* ... even on its own stack, when the buffer is in a live frame (a handle stored into it by
 * MPICH, under the lock): giving the page up would drop its data. */
START_TEST(cannot_wait_on_live_frame_aborts)
{
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = {.before_wait = cannot_wait };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    char buf[4 * 4096] __attribute__ ((aligned(4096)));
    size_t off = 0, len = sizeof(buf);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(buf, sizeof(buf), 1, &off, &len,
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    ((volatile char *) buf)[ps + 1] = 'x';      /* SIGABRT here */
}
END_TEST

/* ... but a page of its own stack below its live frames is given up: the frame that held the
 * buffer has returned, and the access is a later frame's (an MPI call's, under the lock). */
static int cannot_wait_new_frame(void *addr)
{
    before_wait_calls++;
    return MPIR_PAGEGUARD_CANNOT_WAIT_NEW_FRAME;
}

static char *dead_buffer;
static MPIR_Pageguard_region_t *dead_region;

static void __attribute__ ((noinline)) guard_and_return(void)
{
    char buf[6 * 4096] __attribute__ ((aligned(4096)));
    size_t off = 0, len = sizeof(buf);
    ck_assert_int_eq(MPIR_Pageguard_register(buf, sizeof(buf), 1, &off, &len,
                                             MPIR_PAGEGUARD_RECV, 0, &dead_region),
                     MPIR_PAGEGUARD_OK);
    dead_buffer = buf;
    __asm__ volatile ("":::"memory");
}

START_TEST(cannot_wait_on_own_stack_gives_page_up)
{
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = {.before_wait = cannot_wait_new_frame };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    guard_and_return();
    before_wait_calls = 0;
    ((volatile char *) dead_buffer)[2 * ps + 1] = 'x';  /* no abort */
    ck_assert_int_eq(before_wait_calls, 1);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.forgotten, 1);
    MPIR_Pageguard_unregister(dead_region);
}
END_TEST

/* The allocator's entry points: free() forgets the receive pages of its chunk (the data is
 * unwanted, the memory may be reused at once), realloc() waits for them (the data moves). */
/* The page guards live in a shared object of their own (as in libmpi) that defines none of
 * the C library's names: the program's slots were rewritten to the hooks (pageguard_hooks.c),
 * and get libc's functions back on removal. */
/* what the program's address slots hold now (the compiler would reuse an earlier load) */
__attribute__ ((noipa))
static void *program_free(void)
{
    return (void *) free;
}

__attribute__ ((noipa))
static void *program_read(void)
{
    return (void *) read;
}

START_TEST(hooks_redirect_the_program)
{
    ck_assert_ptr_eq(program_free(), MPIR_Pageguard_hook("free"));
    ck_assert_ptr_eq(program_read(), MPIR_Pageguard_hook("read"));
    ck_assert_ptr_eq(MPIR_Pageguard_hook("no_such_function"), NULL);
    ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "read"), dlsym(RTLD_NEXT, "read"));  /* libc's */
    MPIR_Pageguard_hooks_stats_t st;
    MPIR_Pageguard_hooks_get_stats(&st);
    ck_assert_uint_gt(st.slots, 0);
    ck_assert_uint_eq(st.foreign, 0);
    char *mem = malloc(3 * ps);
    free(mem);
    MPIR_Pageguard_hooks_get_stats(&st);
    ck_assert_uint_eq(st.calls_from_self, 0);

    MPIR_Pageguard_hooks_remove();
    ck_assert_int_eq(MPIR_Pageguard_hooks_installed(), 0);
    ck_assert_ptr_eq(program_free(), dlsym(RTLD_DEFAULT, "free"));
    ck_assert_ptr_eq(program_read(), dlsym(RTLD_DEFAULT, "read"));
    const char *why = NULL;
    ck_assert_int_eq(MPIR_Pageguard_hooks_install(NULL, &why), 0);
    ck_assert_ptr_eq(program_read(), MPIR_Pageguard_hook("read"));
}
END_TEST

START_TEST(free_forgets_receive_pages)
{
    size_t n = 8 * ps;
    char *mem = malloc(n + ps);
    ck_assert_int_eq(MPIR_Pageguard_alloc_interposed(), 1);
    char *buf = (char *) (((uintptr_t) mem + ps - 1) & ~(uintptr_t) (ps - 1));
    size_t off[1] = { 0 }, len[1] = { n };
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(buf, n, 1, off, len, MPIR_PAGEGUARD_RECV, 0, &r),
                     MPIR_PAGEGUARD_OK);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(buf, n, MPIR_PAGEGUARD_COUNT), 8);
    free(mem);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(buf, n, MPIR_PAGEGUARD_COUNT), 0);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.forgotten, 8);
    char *again = malloc(n + ps);       /* the allocator may write anywhere in it */
    memset(again, 'z', n + ps);
    MPIR_Pageguard_complete(r, 0);      /* the late data does not land */
    ck_assert_int_eq(again[n / 2], 'z');
    free(again);
    MPIR_Pageguard_unregister(r);
}
END_TEST

START_TEST(realloc_waits_for_the_data)
{
    size_t n = 64 * ps;         /* an mmap'd chunk: moved by mremap */
    char *mem = malloc(n + ps);
    char *buf = (char *) (((uintptr_t) mem + ps - 1) & ~(uintptr_t) (ps - 1));
    split(n, 2, test_off, test_len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(buf, n, 2, test_off, test_len, MPIR_PAGEGUARD_RECV,
                                             0, &r), MPIR_PAGEGUARD_OK);
    struct completer c = { r, 2, 20, NULL, 'r' };
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &c);
    size_t shift = buf - mem;
    char *moved = realloc(mem, 4 * n);
    pthread_join(t, NULL);
    ck_assert_int_eq(moved[shift], 'r');
    ck_assert_int_eq(moved[shift + n - 1], 'r' + 1);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    ck_assert_uint_eq(st.forgotten, 0);
    free(moved);
    MPIR_Pageguard_unregister(r);
}
END_TEST

/* A thread that may not run the program's signal handlers (it holds the lock the data needs)
 * has them held back, and run when it lets go. */
static volatile int may_run = 1, usr1_runs, usr2_runs;

static int test_may_run_handlers(void)
{
    return may_run;
}

static void on_usr1(int sig)
{
    (void) sig;
    usr1_runs++;
}

static void on_usr2(int sig, siginfo_t * info, void *uctx)
{
    (void) sig;
    (void) info;
    (void) uctx;
    usr2_runs++;
}

START_TEST(handlers_held_back_while_the_lock_is_held)
{
    signal(SIGUSR1, on_usr1);   /* installed before: put behind the trampoline at init */
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = {.may_run_handlers = test_may_run_handlers };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    struct sigaction sa, back, kernel;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_usr2;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
    ck_assert_int_eq(sigaction(SIGUSR2, NULL, &back), 0);     /* what the program installed */
    ck_assert_ptr_eq(back.sa_sigaction, on_usr2);
    ck_assert(back.sa_flags & SA_RESETHAND);
    ck_assert_int_eq(syscall(SYS_rt_sigaction, SIGUSR2, NULL, &kernel, _NSIG / 8), 0);
    ck_assert_ptr_ne(kernel.sa_handler, (void *) on_usr2);    /* the trampoline in front */

    may_run = 0;
    raise(SIGUSR1);
    raise(SIGUSR2);
    ck_assert_int_eq(usr1_runs, 0);
    ck_assert_int_eq(usr2_runs, 0);
    ck_assert(MPIR_Pageguard_deferred_signals & (1ull << (SIGUSR1 - 1)));
    MPIR_Pageguard_deliver_deferred();  /* still held: nothing */
    ck_assert_int_eq(usr1_runs, 0);
    may_run = 1;
    MPIR_Pageguard_deliver_deferred();
    ck_assert_int_eq(usr1_runs, 1);
    ck_assert_int_eq(usr2_runs, 1);
    ck_assert_uint_eq(MPIR_Pageguard_deferred_signals, 0);
    /* SA_RESETHAND: the default action from now on, as the kernel would have done */
    ck_assert_int_eq(sigaction(SIGUSR2, NULL, &back), 0);
    ck_assert_ptr_eq(back.sa_handler, SIG_DFL);
    raise(SIGUSR1);             /* may run: at once */
    ck_assert_int_eq(usr1_runs, 2);

    MPIR_Pageguard_finalize();  /* the program's handler goes back in front */
    struct sigaction now;
    ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
    ck_assert_ptr_eq(now.sa_handler, on_usr1);
    ck_assert_int_eq(MPIR_Pageguard_init(NULL), MPIR_PAGEGUARD_OK);
}
END_TEST

static volatile int abrt_runs;
static void on_abrt(int sig)
{
    abrt_runs++;
}

/* SIG_IGN stored with SA_SIGINFO is no handler (the two share their storage), and abort()'s
 * signal is never held back: the program's handler runs at once, lock or not. */
START_TEST(ignored_and_abort_signals_are_not_held_back)
{
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = {.may_run_handlers = test_may_run_handlers };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    struct sigaction ign, abrt, saved_usr1, saved_abrt;
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    ign.sa_flags = SA_SIGINFO;
    ck_assert_int_eq(sigaction(SIGUSR1, &ign, &saved_usr1), 0);
    memset(&abrt, 0, sizeof(abrt));
    abrt.sa_handler = on_abrt;
    ck_assert_int_eq(sigaction(SIGABRT, &abrt, &saved_abrt), 0);

    may_run = 1;
    raise(SIGUSR1);             /* ignored, never called at address SIG_IGN */
    may_run = 0;
    raise(SIGUSR1);
    MPIR_Pageguard_deliver_deferred();
    raise(SIGABRT);
    ck_assert_int_eq(abrt_runs, 1);
    ck_assert(!(MPIR_Pageguard_deferred_signals & (1ull << (SIGABRT - 1))));
    may_run = 1;
    MPIR_Pageguard_deliver_deferred();
    ck_assert_uint_eq(MPIR_Pageguard_deferred_signals, 0);

    sigaction(SIGUSR1, &saved_usr1, NULL);
    sigaction(SIGABRT, &saved_abrt, NULL);
    MPIR_Pageguard_finalize();
    ck_assert_int_eq(MPIR_Pageguard_init(NULL), MPIR_PAGEGUARD_OK);
}
END_TEST

START_TEST(guarded_pages_count_and_touch)
{
    /* re-initialise with a before_wait callback */
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = {.before_wait = count_before_wait };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    char *mem = map_pages(8);
    split(8 * ps, 4, test_off, test_len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 8 * ps, 4, test_off, test_len,
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(mem, 8 * ps, MPIR_PAGEGUARD_COUNT), 8);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(mem + ps + 1, 1, MPIR_PAGEGUARD_COUNT), 1);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(mem + 8 * ps, ps, MPIR_PAGEGUARD_COUNT), 0);
    ck_assert_int_eq(MPIR_Pageguard_waiting(), 0);

    struct completer c = { r, 4, 20, NULL, 'a' };
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &c);
    /* a write touch of the last sub-message's pages waits until they are released (both at
     * once: the second is found released after the first touch) */
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(mem + 6 * ps, 2 * ps,
                                                   MPIR_PAGEGUARD_TOUCH_WRITE), 1);
    ck_assert(readable(mem + 7 * ps));
    ck_assert_int_eq(mem[7 * ps], 'a' + 3);     /* the touch did not change the data */
    ck_assert_int_ge(before_wait_calls, 1);
    pthread_join(t, NULL);
    ck_assert_uint_eq(MPIR_Pageguard_guarded_pages(mem, 8 * ps, MPIR_PAGEGUARD_COUNT), 0);
    MPIR_Pageguard_unregister(r);
}
END_TEST

static _Atomic int on_wait_calls;
static void count_on_wait(void)
{
    atomic_fetch_add(&on_wait_calls, 1);
}

/* A thread that starts waiting tells the progress side (on_wait), and each wait that ends by a
 * release is one sample of release latency, measured from the data event when it is later
 * than the fault. */
START_TEST(wait_is_announced_and_release_latency_recorded)
{
    MPIR_Pageguard_finalize();
    MPIR_Pageguard_config_t cfg = {.on_wait = count_on_wait };
    ck_assert_int_eq(MPIR_Pageguard_init(&cfg), MPIR_PAGEGUARD_OK);
    char *mem = map_pages(8);
    split(8 * ps, 4, test_off, test_len);
    MPIR_Pageguard_region_t *r;
    ck_assert_int_eq(MPIR_Pageguard_register(mem, 8 * ps, 4, test_off, test_len,
                                             MPIR_PAGEGUARD_RECV, 0, &r), MPIR_PAGEGUARD_OK);
    /* no data event noted: every sample counts from the fault's own start */
    MPIR_Pageguard_note_data_event(0);
    struct completer c = { r, 4, 20, NULL, 'a' };
    pthread_t t;
    on_wait_calls = 0;
    pthread_create(&t, NULL, complete_later, &c);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(((volatile char *) mem)[test_off[k]], 'a' + k);
    pthread_join(t, NULL);
    MPIR_Pageguard_stats_t st;
    MPIR_Pageguard_get_stats(&st);
    uint64_t samples = 0;
    for (int b = 0; b < MPIR_PAGEGUARD_LATENCY_BUCKETS; b++)
        samples += st.release_hist[b];
    ck_assert_int_ge(on_wait_calls, 1);
    ck_assert_uint_eq(samples, (uint64_t) on_wait_calls);
    ck_assert_uint_gt(st.release_max_ns, 0);
    ck_assert_uint_lt(st.release_max_ns, 2000000000ull);
    MPIR_Pageguard_unregister(r);
    munmap(mem, 8 * ps);
}
END_TEST

START_TEST(latency_buckets_are_ordered)
{
    int prev = -1;
    for (uint64_t ns = 1; ns < (1ull << 36); ns = ns * 9 / 8 + 1) {
        int b = MPIR_Pageguard_latency_bucket(ns);
        ck_assert_int_ge(b, prev);
        prev = b;
        /* the bucket's middle is within a quarter octave of the value */
        double mid = MPIR_Pageguard_latency_of_bucket(b);
        ck_assert(mid > ns * 0.7 && mid < ns * 1.3 + 1);
    }
    ck_assert_int_eq(MPIR_Pageguard_latency_bucket(~0ull), MPIR_PAGEGUARD_LATENCY_BUCKETS - 1);
}
END_TEST

/* Every test case gets a fresh module (fixture) and room for the thread tests. */
static TCase *guarded_tcase(Suite * s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    suite_add_tcase(s, tc);
    return tc;
}

static Suite *pageguard_suite(void)
{
    Suite *s = suite_create("pageguard");
    TCase *tc = guarded_tcase(s, "regions");
    tcase_add_test(tc, alignment_whole_and_partial_pages);
    tcase_add_test(tc, alignment_small_buffers);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, landing_and_holes);
    tcase_add_test(tc, separate_objects_between_sub_messages);
    tcase_add_test(tc, filled_sub_messages_land_at_registration);
    tcase_add_test(tc, whole_pages_move_into_the_buffer);
    tcase_add_test(tc, mapping_queries_agree);
    tcase_add_test(tc, staging_is_kept_for_the_next_region);
    tcase_add_test(tc, forgotten_pages_are_left_alone);
    tcase_add_test(tc, landing_and_giving_up_exclude_each_other);
    tcase_add_test(tc, shared_page_waits_for_both);
    tcase_add_test(tc, stack_buffer);
    tcase_add_test(tc, budget_refusal_leaves_buffer_alone);
    tcase_add_test(tc, shared_mapping_refused_for_receive);
    tcase_add_test(tc, shared_mapping_refused_for_send);
    tcase_add_test(tc, guarded_pages_follow_regions);
    tcase_add_test(tc, exposed_memory_is_refused);
    tcase_add_test(tc, protection_of_a_range);
    tcase_add_test(tc, read_only_send_is_refused);
    tcase_add_test(tc, executable_pages_stay_executable);
    tcase_add_test(tc, opened_region_lands_nothing);

    tc = guarded_tcase(s, "faults");
    tcase_add_test(tc, fault_waits_for_completion);
    tcase_add_test(tc, first_touch_order_trace_mode);
    tcase_add_test(tc, send_guard_blocks_writes_not_reads);
    tcase_add_test(tc, abandoned_region_wakes_waiters);
    tcase_add_test(tc, wait_left_by_longjmp_is_reaped);
    tcase_add_test(tc, handlers_held_back_while_the_lock_is_held);
    tcase_add_test(tc, ignored_and_abort_signals_are_not_held_back);
    tcase_add_test(tc, live_waiter_is_never_reaped);
    tcase_add_test(tc, silent_wait_of_another_thread_is_reaped);
    tcase_add_test(tc, many_threads_fault_at_once);
    tcase_add_test(tc, guarded_pages_count_and_touch);
    tcase_add_test_raise_signal(tc, thread_that_cannot_wait_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, cannot_wait_on_live_frame_aborts, SIGABRT);
    tcase_add_test(tc, cannot_wait_on_own_stack_gives_page_up);
    tcase_add_test(tc, fault_on_page_being_given_up_runs_again);
    tcase_add_test(tc, free_forgets_receive_pages);
    tcase_add_test(tc, hooks_redirect_the_program);
    tcase_add_test(tc, realloc_waits_for_the_data);
    tcase_add_test(tc, reused_buffer_waits_for_the_newer_region);
    tcase_add_test(tc, wait_is_announced_and_release_latency_recorded);
    tcase_add_test(tc, latency_buckets_are_ordered);

    tc = guarded_tcase(s, "chaining");
    tcase_add_test(tc, foreign_fault_reaches_previous_handler);
    tcase_add_test_raise_signal(tc, foreign_fault_default_action, SIGSEGV);
    tcase_add_test_raise_signal(tc, null_dereference_default_action, SIGSEGV);
    tcase_add_test(tc, replaced_handler_is_reinstalled);
    tcase_add_test(tc, program_handler_goes_behind_ours);
    tcase_add_test(tc, previous_handler_may_siglongjmp);
    tcase_add_test(tc, released_page_protected_again_is_foreign);
    tcase_add_test(tc, segv_is_never_blocked);
    tcase_add_test(tc, replaced_handler_switches_off);
    return s;
}

int main(void)
{
    const char *why = NULL;
    /* this program's calls to free, read, sigaction, ... reach the hooks, as an application's */
    if (MPIR_Pageguard_hooks_install(NULL, &why) != 0) {
        fprintf(stderr, "check_pageguard: hooks not installed: %s\n", why);
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(pageguard_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
