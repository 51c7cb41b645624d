/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The program's handlers of asynchronous signals, held back while their thread holds a lock the
 * data needs. A handler that reads a buffer whose data is still coming must wait for it, and the
 * data comes through a progress engine that takes a lock (MPICH's global one); a handler that
 * interrupted the thread holding that lock (its main thread in MPI_Recv) would wait for itself. So
 * while the guards are on, each such handler is installed behind a trampoline: when
 * config.may_run_handlers says the thread may not run it now, or the thread is taking or letting
 * go of the lock (MPIR_Pageguard_lock_changing, which the lock's code raises), the signal is noted
 * in the thread's MPIR_Pageguard_deferred_signals and the trampoline returns; the lock's release
 * calls MPIR_Pageguard_deliver_deferred, which sends the noted signals to the thread again, and
 * then they run. MPICH releases its lock at the end of every call and between polls of a blocking
 * one, so a handler is late by one poll at most.
 *
 * The program sees what it installed (sigaction() reads it back), its handler runs with its mask
 * and flags (SA_RESETHAND done here), and a signal sent again arrives with a siginfo of its own
 * (SI_TKILL) and, like any standard signal, once however often it came meanwhile. Synchronous
 * signals (a fault's, abort()'s) and SIGPROF are never held back. With the guards off, nothing
 * changes. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPII_PAGEGUARD_NSIG 65

__thread unsigned long long MPIR_Pageguard_deferred_signals
    __attribute__ ((tls_model("initial-exec")));
__thread int MPIR_Pageguard_lock_changing __attribute__ ((tls_model("initial-exec")));

/* Not now: the thread holds the lock, or is between the lock and the fields that say who
 * holds it (taking or letting go of it: held as far as a waiter is concerned). */
static int held_back(void)
{
    return MPIR_Pageguard_lock_changing ||
        (MPII_pageguard.config.may_run_handlers && !MPII_pageguard.config.may_run_handlers());
}

/* What the program installed, per signal, behind the trampoline: written under a sequence
 * number with every signal blocked, read by the trampoline without a lock. */
static struct {
    struct sigaction program;
    _Atomic unsigned int seq;
    int behind;                 /* the trampoline stands in front of it */
} table[MPII_PAGEGUARD_NSIG];
static _Atomic int active;

/* Not the signals a fault raises, those no handler can take, abort()'s (raised by the thread
 * itself, which then expects to end: held back, the program's handler would never run), nor
 * a profiler's sampling signal (its handler records the interrupted context, and reads no
 * received data). */
static int deferrable(int sig)
{
    return sig > 0 && sig < MPII_PAGEGUARD_NSIG && sig != SIGSEGV && sig != SIGBUS &&
        sig != SIGFPE && sig != SIGILL && sig != SIGTRAP && sig != SIGSYS && sig != SIGKILL &&
        sig != SIGSTOP && sig != SIGPROF && sig != SIGABRT;
}

/* sa_handler and sa_sigaction share their storage: SIG_IGN with SA_SIGINFO is no handler */
static int has_handler(const struct sigaction *sa)
{
    return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

static void read_program(int sig, struct sigaction *sa)
{
    unsigned int before, after;
    do {
        before = atomic_load(&table[sig].seq);
        atomic_thread_fence(memory_order_acquire);
        *sa = table[sig].program;
        atomic_thread_fence(memory_order_acquire);
        after = atomic_load(&table[sig].seq);
    } while ((before & 1) || before != after);
}

static void write_program(int sig, const struct sigaction *sa, int behind)
{
    sigset_t all, saved;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &saved, _NSIG / 8);
    atomic_fetch_add(&table[sig].seq, 1);
    table[sig].program = *sa;
    table[sig].behind = behind;
    atomic_fetch_add(&table[sig].seq, 1);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, NULL, _NSIG / 8);
}

static void trampoline(int sig, siginfo_t * info, void *uctx)
{
    int saved_errno = errno;
    if (held_back()) {
        __atomic_fetch_or(&MPIR_Pageguard_deferred_signals, 1ull << (sig - 1),
                          __ATOMIC_RELAXED);
        errno = saved_errno;
        return;
    }
    struct sigaction prog;
    read_program(sig, &prog);
    if (prog.sa_flags & SA_RESETHAND) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        write_program(sig, &dfl, 0);
        sigaction(sig, &dfl, NULL);
    }
    errno = saved_errno;
    if (prog.sa_handler == SIG_DFL) {
        /* replaced meanwhile by the default action: take it */
        sigaction(sig, &prog, NULL);
        syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
    } else if (prog.sa_handler == SIG_IGN) {
        return;
    } else if (prog.sa_flags & SA_SIGINFO) {
        prog.sa_sigaction(sig, info, uctx);
    } else {
        prog.sa_handler(sig);
    }
}

/* The kernel's action for the program's: the trampoline with the program's mask and flags */
static struct sigaction in_front(const struct sigaction *prog)
{
    struct sigaction t = *prog;
    t.sa_sigaction = trampoline;
    t.sa_flags = (prog->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
    sigdelset(&t.sa_mask, SIGSEGV);
    return t;
}

int MPII_Pageguard_defer_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!atomic_load(&active) || !deferrable(sig))
        return -1;
    struct sigaction before;
    int behind = table[sig].behind;
    if (behind)
        read_program(sig, &before);
    else if (sigaction(sig, NULL, &before) != 0)
        return 0;
    if (act) {
        if (has_handler(act)) {
            /* the table first: a signal that comes in between finds the new handler */
            struct sigaction t = in_front(act);
            write_program(sig, act, 1);
            if (sigaction(sig, &t, NULL) != 0) {
                write_program(sig, &before, behind);
                return 0;
            }
        } else {
            struct sigaction plain = *act;
            sigdelset(&plain.sa_mask, SIGSEGV);
            if (sigaction(sig, &plain, NULL) != 0)
                return 0;
            write_program(sig, act, 0);
        }
    }
    if (old)
        *old = before;
    return 1;
}

void MPII_Pageguard_defer_start(void)
{
    if (!MPII_pageguard.config.may_run_handlers || atomic_load(&active))
        return;
    /* the handlers installed before: behind the trampoline too */
    for (int sig = 1; sig < MPII_PAGEGUARD_NSIG; sig++) {
        struct sigaction now;
        if (!deferrable(sig) || sigaction(sig, NULL, &now) != 0 || !has_handler(&now) ||
            ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == trampoline))
            continue;
        write_program(sig, &now, 1);
        struct sigaction t = in_front(&now);
        if (sigaction(sig, &t, NULL) != 0)
            write_program(sig, &now, 0);
    }
    atomic_store(&active, 1);
}

void MPII_Pageguard_defer_stop(void)
{
    if (!atomic_load(&active))
        return;
    atomic_store(&active, 0);
    for (int sig = 1; sig < MPII_PAGEGUARD_NSIG; sig++) {
        if (!table[sig].behind)
            continue;
        struct sigaction prog;
        read_program(sig, &prog);
        sigaction(sig, &prog, NULL);
        write_program(sig, &prog, 0);
    }
}

void MPIR_Pageguard_drop_deferred(void)
{
    MPIR_Pageguard_deferred_signals = 0;
}

void MPIR_Pageguard_deliver_deferred(void)
{
    if (!MPIR_Pageguard_deferred_signals || held_back())
        return;
    unsigned long long sigs = __atomic_exchange_n(&MPIR_Pageguard_deferred_signals, 0,
                                                  __ATOMIC_RELAXED);
    pid_t pid = getpid(), tid = (pid_t) syscall(SYS_gettid);
    for (int sig = 1; sig < MPII_PAGEGUARD_NSIG; sig++) {
        if (sigs & (1ull << (sig - 1)))
            syscall(SYS_tgkill, pid, tid, sig);
    }
}
