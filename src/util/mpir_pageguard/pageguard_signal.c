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
 * With the guards off they go straight to the process's definitions (libc's). Hooks installed by
 * pageguard_hooks.c. The SIGSEGV logic is the page guards' (MPIR_Pageguard_sigaction); this
 * file only stands in for libc. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"

#include <signal.h>
#include <string.h>

int MPII_Pageguard_hook_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    return MPIR_Pageguard_sigaction(sig, act, old);
}

/* glibc's signal() calls its own sigaction directly: BSD semantics, through ours */
void (*MPII_Pageguard_hook_signal(int sig, void (*handler) (int))) (int)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    struct sigaction act, old;
    memset(&act, 0, sizeof(act));
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    if (MPIR_Pageguard_sigaction(sig, &act, &old) != 0)
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

typedef int (*sigmask_fn) (int, const sigset_t *, sigset_t *);

int MPII_Pageguard_hook_sigprocmask(int how, const sigset_t * set, sigset_t * old)
{
    sigset_t copy;
    MPII_PAGEGUARD_HOOK_ENTRY();
    return MPII_LIBC(SIGPROCMASK, sigmask_fn) (how, without_segv(how, set, &copy), old);
}

int MPII_Pageguard_hook_pthread_sigmask(int how, const sigset_t * set, sigset_t * old)
{
    sigset_t copy;
    MPII_PAGEGUARD_HOOK_ENTRY();
    return MPII_LIBC(PTHREAD_SIGMASK, sigmask_fn) (how, without_segv(how, set, &copy), old);
}
