/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A timer whose signal goes to the calling thread, not to whichever thread the kernel picks:
 * the tests whose handler reads received data aim it at the thread that owns the buffers. */

#ifndef TNBC_TEST_TIMER_H_INCLUDED
#define TNBC_TEST_TIMER_H_INCLUDED

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* 0, or -1 when no timer could be made */
static inline int tnbc_timer_to_this_thread(int sig, timer_t * timer)
{
    struct sigevent to_me;
    memset(&to_me, 0, sizeof(to_me));
    to_me.sigev_notify = SIGEV_THREAD_ID;
    to_me.sigev_signo = sig;
    to_me._sigev_un._tid = gettid();    /* glibc 2.36 names no field for it */
    return timer_create(CLOCK_MONOTONIC, &to_me, timer);
}

#endif /* TNBC_TEST_TIMER_H_INCLUDED */
