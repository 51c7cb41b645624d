/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Signal dispositions and masks while the page guards are on. Every access to a guarded page
 * must reach our SIGSEGV handler:
 *  - sigaction() and signal() for SIGSEGV put the program's handler behind ours: it becomes the
 *    one foreign faults are passed to, and reading the disposition back gives what the program
 *    installed. (Installed over ours, it would see our faults first and take them for its own.)
 *  - a thread with SIGSEGV blocked that touches a guarded page is killed by the kernel, so
 *    sigprocmask() and pthread_sigmask() leave SIGSEGV unblocked, and handlers installed with
 *    sigaction() do not get it in their mask. A synchronous fault cannot be blocked anyway (the
 *    kernel kills instead); only a SIGSEGV sent with kill(2) now arrives instead of pending.
 * With the guards off they go straight to the next definitions (libc's). The SIGSEGV logic is
 * the page guards' (MPIR_Pageguard_sigaction); this file only stands in for libc. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

/* libc's (or the next library's) mask functions (pageguard_libc.c; its sigaction is
 * pageguard_state.c's), looked up before the program's threads start, or at first use by a
 * constructor that runs before ours */
static struct {
    int (*sigprocmask) (int, const sigset_t *, sigset_t *);
    int (*pthread_sigmask) (int, const sigset_t *, sigset_t *);
    int resolved;               /* looked up (a function libc lacks stays NULL) */
} libc_signal;

__attribute__ ((constructor))
static void resolve_libc_signal(void)
{
    libc_signal.sigprocmask = (int (*)(int, const sigset_t *, sigset_t *))
        MPII_Pageguard_next_definition("sigprocmask");
    libc_signal.pthread_sigmask = (int (*)(int, const sigset_t *, sigset_t *))
        MPII_Pageguard_next_definition("pthread_sigmask");
    libc_signal.resolved = 1;
}

/* The next definition of fn, or NULL where libc has none (the caller then fails with
 * ENOSYS: NULL is never called). */
#define MPII_SIGNAL_NEXT(fn_) \
    ((libc_signal.resolved ? (void) 0 : resolve_libc_signal()), libc_signal.fn_)

MPII_PAGEGUARD_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return MPIR_Pageguard_sigaction(sig, act, old);
}

/* glibc's signal() calls its own sigaction directly: BSD semantics, through ours */
MPII_PAGEGUARD_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof(act));
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

/* The set to pass on: set itself, or a copy without SIGSEGV. */
static const sigset_t *without_segv(int how, const sigset_t *set, sigset_t *copy)
{
    if (!set || how == SIG_UNBLOCK || !MPIR_Pageguard_is_on() || !sigismember(set, SIGSEGV))
        return set;
    *copy = *set;
    sigdelset(copy, SIGSEGV);
    return copy;
}

MPII_PAGEGUARD_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t copy;
    set = without_segv(how, set, &copy);
    if (!MPII_SIGNAL_NEXT(sigprocmask)) {
        errno = ENOSYS;
        return -1;
    }
    return libc_signal.sigprocmask(how, set, old);
}

MPII_PAGEGUARD_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t copy;
    set = without_segv(how, set, &copy);
    if (!MPII_SIGNAL_NEXT(pthread_sigmask))
        return ENOSYS;  /* pthread functions return the error */
    return libc_signal.pthread_sigmask(how, set, old);
}
