/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The SIGSEGV side: our handler, chaining to the previous one, detecting replacement, the
 * futex the handler waits on (pageguard_region.c wakes it), and the threads' signal stacks.
 * Everything reached from the handler is async-signal-safe: atomics, clock_gettime, futex,
 * mprotect, sigaction; no allocation and no lock. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* While this thread runs the previous handler: the siginfo it got and where our frame was. If
 * that handler hands the signal back to us (it saved ours as its own previous), we are called
 * again with the same siginfo from deeper in the stack, and must not call it again. A handler
 * that left with siglongjmp leaves these set: a later fault is told apart by coming with
 * another siginfo, or from no deeper. initial-exec: no allocation on access. */
static __thread const siginfo_t *chaining_info __attribute__ ((tls_model("initial-exec")));
static __thread uintptr_t chaining_frame __attribute__ ((tls_model("initial-exec")));

/* An access error that matches no guarded page may still be ours: the page can have been
 * released, or its region removed, between the fault and this handler. Such a fault does not
 * repeat, so a fault is passed on only when it repeats at the same address with no release or
 * removal in between (MPII_pageguard.changes), or too often. initial-exec: no allocation on
 * access. */
static __thread uintptr_t unmatched_addr __attribute__ ((tls_model("initial-exec")));
static __thread unsigned long unmatched_changes __attribute__ ((tls_model("initial-exec")));
static __thread int unmatched_retries __attribute__ ((tls_model("initial-exec")));
static __thread int unmatched_stale __attribute__ ((tls_model("initial-exec")));
static __thread uint64_t unmatched_ns __attribute__ ((tls_model("initial-exec")));
/* ... at most this often, however busy the progress side */
#define MPII_PAGEGUARD_MAX_RETRIES 8
/* A run instruction faults again within microseconds. The handler never sees an access
 * succeed, so a fault at the same address this much later is a new access (the next
 * iteration's read of the same page), not a repeat: otherwise such faults, each harmless,
 * would add up over thousands of collectives until one was passed on. */
#define MPII_PAGEGUARD_REPEAT_NS (10 * 1000 * 1000)
/* A page we released can fault again, several times, after our mprotect has returned (seen on
 * Linux 6.18 while the helper opens a run of pages the reader waits at); its mapping is then
 * open. Such faults are run again, yielding, at most this many times per access. */
#define MPII_PAGEGUARD_MAX_STALE 100000

static void handler(int sig, siginfo_t * info, void *uctx);

static void futex_wait(_Atomic unsigned int *word, unsigned int expected)
{
    /* Bounded, so a missed wake-up can only cost a little time. */
    struct timespec timeout = { 0, MPII_PAGEGUARD_WAIT_LOOK_NS };
    syscall(SYS_futex, (unsigned int *) word, FUTEX_WAIT_PRIVATE, expected, &timeout, NULL, 0);
}

/* The handler we chain to, replaced while the handler may read it: writers take turns on a
 * spin flag and make the sequence odd while they write; a reader copies it until it saw one
 * even sequence before and after. */
static struct sigaction previous;
static _Atomic unsigned int previous_seq;
static atomic_flag previous_writing = ATOMIC_FLAG_INIT;

void MPII_Pageguard_get_previous(struct sigaction *sa)
{
    unsigned int before, after;
    do {
        before = atomic_load(&previous_seq);
        *sa = previous;
        atomic_thread_fence(memory_order_acquire);
        after = atomic_load(&previous_seq);
    } while ((before & 1) || before != after);
}

/* The caller's struct is copied before the sequence turns odd, and every signal is blocked
 * while it is odd: a fault in this thread meanwhile would spin for ever in get_previous. */
void MPII_Pageguard_set_previous(const struct sigaction *sa)
{
    struct sigaction copy = *sa;
    sigset_t all, saved;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &saved, _NSIG / 8);
    while (atomic_flag_test_and_set(&previous_writing));
    atomic_fetch_add(&previous_seq, 1);
    previous = copy;
    atomic_fetch_add(&previous_seq, 1);
    atomic_flag_clear(&previous_writing);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, NULL, _NSIG / 8);
}

static int install(void)
{
    struct sigaction sa, before;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = handler;
    /* SA_NODEFER: a program's handler of another signal may interrupt ours anywhere -- in a
     * wait, or on the way in or out -- and touch another guarded page; its fault must reach
     * this handler again (nested, pageguard_wait.c), not kill the process, as a fault with
     * SIGSEGV blocked does. */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &before) != 0)
        return MPIR_PAGEGUARD_ERR_OFF;
    if (!MPII_Pageguard_is_our_handler(&before))
        MPII_Pageguard_set_previous(&before);
    /* Some libraries wrap sigaction and silently keep their own handler: check. */
    struct sigaction now;
    if (sigaction(SIGSEGV, NULL, &now) != 0 ||
        !MPII_Pageguard_is_our_handler(&now))
        return MPIR_PAGEGUARD_ERR_OFF;
    return MPIR_PAGEGUARD_OK;
}

int MPII_Pageguard_is_our_handler(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == handler;
}

int MPII_Pageguard_install_handler(void)
{
    return install();
}

void MPII_Pageguard_uninstall_handler(void)
{
    struct sigaction now;
    if (sigaction(SIGSEGV, NULL, &now) == 0 &&
        MPII_Pageguard_is_our_handler(&now)) {
        struct sigaction back;
        MPII_Pageguard_get_previous(&back);
        sigaction(SIGSEGV, &back, NULL);
    }
}

/* sigaction while the guards are on: for SIGSEGV the program's handler goes behind ours (the
 * one foreign faults are passed to) and reading gives what the program installed; no handler
 * gets SIGSEGV in its mask. Without the guards, libc's. */
int MPIR_Pageguard_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    int on = atomic_load_explicit(&MPII_pageguard.on, memory_order_relaxed);
    if (on) {
        int done = MPII_Pageguard_defer_sigaction(sig, act, old);
        if (done >= 0)
            return done ? 0 : -1;
    }
    if (on && sig == SIGSEGV) {
        struct sigaction now;
        if (sigaction(SIGSEGV, NULL, &now) == 0 &&
            MPII_Pageguard_is_our_handler(&now)) {
            struct sigaction before;
            MPII_Pageguard_get_previous(&before);
            if (act && !MPII_Pageguard_is_our_handler(act))
                MPII_Pageguard_set_previous(act);
            if (old)
                *old = before;
            return 0;
        }
    }
    if (on && act && sigismember(&act->sa_mask, SIGSEGV)) {
        struct sigaction unmasked = *act;
        sigdelset(&unmasked.sa_mask, SIGSEGV);
        return sigaction(sig, &unmasked, old);
    }
    return sigaction(sig, act, old);
}

int MPIR_Pageguard_check_handler(void)
{
    struct sigaction now;
    if (!atomic_load(&MPII_pageguard.on))
        return 0;
    if (sigaction(SIGSEGV, NULL, &now) == 0 &&
        MPII_Pageguard_is_our_handler(&now))
        return 1;
    atomic_fetch_add(&MPII_pageguard.replaced, 1);
    if (MPII_pageguard.config.on_replaced == MPIR_PAGEGUARD_SWITCH_OFF) {
        atomic_store(&MPII_pageguard.on, 0);
        return 0;
    }
    /* Chain to the newcomer from now on, and take the signal back. */
    if (install() != MPIR_PAGEGUARD_OK) {
        atomic_store(&MPII_pageguard.on, 0);
        return 0;
    }
    return 1;
}

/* The program's handler runs as the kernel would have run it: with its sa_mask added, and
 * SIGSEGV too unless it asked for SA_NODEFER (ours runs with it open), reset first for
 * SA_RESETHAND. The mask of the interrupted code comes back when our handler returns. */
static void call_previous(const struct sigaction *prev, int sig, siginfo_t * info, void *uctx)
{
    if (prev->sa_flags & SA_RESETHAND) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        MPII_Pageguard_set_previous(&dfl);
    }
    sigset_t block = prev->sa_mask;
    if (!(prev->sa_flags & SA_NODEFER))
        sigaddset(&block, sig);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, NULL, _NSIG / 8);
    if (prev->sa_flags & SA_SIGINFO)
        prev->sa_sigaction(sig, info, uctx);
    else
        prev->sa_handler(sig);
}

/* Not our fault: behave as if we were never installed. */
static void chain(int sig, siginfo_t * info, void *uctx)
{
    struct sigaction prev;
    uintptr_t frame = (uintptr_t) __builtin_frame_address(0);
    MPII_Pageguard_get_previous(&prev);
    atomic_fetch_add(&MPII_pageguard.foreign_faults, 1);

    int handed_back = chaining_info == info && frame < chaining_frame;
    /* sa_handler and sa_sigaction share their storage: SIG_IGN with SA_SIGINFO is no handler */
    int has_handler = prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN;
    if (!handed_back && has_handler) {
        const siginfo_t *outer_info = chaining_info;
        uintptr_t outer_frame = chaining_frame;
        chaining_info = info;
        chaining_frame = frame;
        call_previous(&prev, sig, info, uctx);
        chaining_info = outer_info;
        chaining_frame = outer_frame;
        return;
    }
    /* SIG_DFL (and SIG_IGN, which the kernel does not honour for a real fault): restore the
     * default action so that the faulting instruction, run again, kills the process with a core
     * dump as usual. A SIGSEGV sent by kill() does not repeat by itself: send it again. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (info->si_code <= 0)
        raise(sig);
}

/* Index of the sub-message holding byte offset off, or -1 (a hole between sub-messages). */
static int find_sub(const MPIR_Pageguard_region_t * r, size_t off)
{
    int lo = 0, hi = r->nsub - 1, found = -1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (r->sub_off[mid] <= off) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (found >= 0 && off < r->sub_off[found] + r->sub_len[found])
        return found;
    return -1;
}

static void record_first_touch(MPIR_Pageguard_region_t * r, int k)
{
    int untouched = 0;
    if (atomic_load(&r->touch_order[k]) == 0 &&
        atomic_compare_exchange_strong(&r->touch_order[k], &untouched, -1)) {
        r->touch_ns[k] = MPII_Pageguard_now_ns();
        atomic_store(&r->touch_order[k], atomic_fetch_add(&r->touch_counter, 1) + 1);
    }
}

/* Trace mode: the data is in place; open the pages of the touched sub-message (or just the
 * touched page, if none is found). */
static void release_touched(MPIR_Pageguard_region_t * r, int k, size_t page)
{
    size_t ps = MPII_pageguard.pagesize;
    size_t first = page, last = page;
    if (k >= 0 && !MPII_Pageguard_sub_pages(r, k, &first, &last)) {
        first = last = page;
    }
    MPII_Pageguard_mprotect(r->gbase + first * ps, (last - first + 1) * ps, r->open_prot);
    for (size_t p = first; p <= last; p++) {
        unsigned char guarded = MPII_PAGE_GUARDED;
        if (atomic_compare_exchange_strong(&r->page_state[p], &guarded, MPII_PAGE_RELEASED))
            atomic_fetch_sub(&r->unreleased, 1);
    }
    MPII_Pageguard_wake(r);
}

int MPIR_Pageguard_latency_bucket(uint64_t ns)
{
    int b = 0;
    if (ns == 0)
        return 0;
    /* 4 buckets per power of two: the two bits below the leading one pick the quarter */
    int lead = 63 - __builtin_clzll(ns);
    int quarter = lead >= 2 ? (int) ((ns >> (lead - 2)) & 3) : (int) ((ns << (2 - lead)) & 3);
    b = 4 * lead + quarter;
    return b < MPIR_PAGEGUARD_LATENCY_BUCKETS ? b : MPIR_PAGEGUARD_LATENCY_BUCKETS - 1;
}

double MPIR_Pageguard_latency_of_bucket(int b)
{
    return (double) (1ull << (b / 4)) * (1.0 + (b % 4 + 0.5) / 4.0);
}

/* A wait that began at t0 ended by a release at t1: the part of it that came after both the
 * reader and the data were there is the release latency. */
static void record_release_latency(uint64_t t0, uint64_t t1)
{
    uint64_t event = atomic_load(&MPII_pageguard.data_event_ns);
    uint64_t from = event > t0 ? event : t0;
    uint64_t ns = t1 > from ? t1 - from : 0;
    atomic_fetch_add(&MPII_pageguard.release_hist[MPIR_Pageguard_latency_bucket(ns)], 1);
    uint64_t max = atomic_load(&MPII_pageguard.release_max_ns);
    while (ns > max && !atomic_compare_exchange_weak(&MPII_pageguard.release_max_ns, &max, ns));
}

void MPIR_Pageguard_note_data_event(uint64_t time_ns)
{
    atomic_store_explicit(&MPII_pageguard.data_event_ns, time_ns, memory_order_relaxed);
}

/* A fault on a page of r that still waits for its data: 1 when this thread is to wait for it,
 * 0 when the access may run again at once. */
static int on_our_page(MPIR_Pageguard_region_t * r, uintptr_t addr, size_t page)
{
    atomic_fetch_add(&MPII_pageguard.faults, 1);
    int k = find_sub(r, addr - r->base);
    if (k >= 0)
        record_first_touch(r, k);

    if (r->flags & MPIR_PAGEGUARD_TRACE) {
        release_touched(r, k, page);
        return 0;
    }
    int verdict = MPII_pageguard.config.before_wait ?
        MPII_pageguard.config.before_wait((void *) addr) : MPIR_PAGEGUARD_WAIT;
    if (verdict != MPIR_PAGEGUARD_WAIT) {
        /* A page of this thread's own stack, below its live frames, touched by a thread that
         * cannot wait: the frame that held the buffer has returned, and calls made since (an
         * MPI call, under the lock its data needs) push their frames there. Nobody can read
         * that buffer any more. (A send page is still being read by the network: it is not
         * given up.) */
        if (verdict == MPIR_PAGEGUARD_CANNOT_WAIT_NEW_FRAME && r->kind == MPIR_PAGEGUARD_RECV &&
            MPII_Pageguard_on_own_stack(addr, addr + 1)) {
            if (MPII_Pageguard_forget_page(r, page))
                MPII_Pageguard_wake(r);
            else
                sched_yield();  /* being landed: the access runs again once it is written */
            return 0;
        }
        /* the data cannot come while this thread runs, and going on without it would lose it
         * silently */
        if (MPII_pageguard.config.on_abort)
            MPII_pageguard.config.on_abort((void *) addr);
        abort();
    }
    return 1;
}

/* Wait until page of r is released, with the slot entered; leaves it. A wait record, rather
 * than the slot, keeps r alive meanwhile (pageguard_wait.c): a signal handler may leave this
 * frame for good with siglongjmp. Without a record the slot stays entered, as before. */
static void wait_for_page(MPII_Pageguard_slot_t * slot, MPIR_Pageguard_region_t * r,
                          size_t page)
{
    unsigned int mine;
    uint64_t t0 = MPII_Pageguard_now_ns();
    atomic_fetch_add(&MPII_pageguard.waiting, 1);
    atomic_fetch_add(&r->waiters, 1);
    MPII_Pageguard_wait_t *w = MPII_Pageguard_wait_begin(r, &mine);
    if (w)
        MPII_Pageguard_slot_leave(slot);
    if (MPII_pageguard.config.on_wait)
        MPII_pageguard.config.on_wait();
    while ((!w || MPII_Pageguard_wait_goes_on(w, mine)) &&
           MPII_Pageguard_page_waits(atomic_load(&r->page_state[page]))) {
        unsigned int seq = atomic_load(&r->seq);
        if (!MPII_Pageguard_page_waits(atomic_load(&r->page_state[page])))
            break;
        futex_wait(&r->seq, seq);
    }
    int released = (atomic_load(&r->page_state[page]) == MPII_PAGE_RELEASED);
    atomic_fetch_sub(&r->waiters, 1);
    /* past this point r may be gone */
    if (!w)
        MPII_Pageguard_slot_leave(slot);
    if (!w || MPII_Pageguard_wait_end(w, mine))
        atomic_fetch_sub(&MPII_pageguard.waiting, 1);
    uint64_t t1 = MPII_Pageguard_now_ns();
    atomic_fetch_add(&MPII_pageguard.stall_ns, t1 - t0);
    if (released)
        record_release_latency(t0, t1);
}

/* The kind of access that faulted: PROT_READ, PROT_WRITE or PROT_EXEC, from the x86 page-fault
 * error code; elsewhere PROT_READ | PROT_WRITE (a page open for both serves any data access). */
static int fault_access(const void *uctx)
{
#if defined(__x86_64__) && defined(REG_ERR)
    greg_t err = ((const ucontext_t *) uctx)->uc_mcontext.gregs[REG_ERR];
    return (err & 0x10) ? PROT_EXEC : (err & 0x2) ? PROT_WRITE : PROT_READ;
#else
    (void) uctx;
    return PROT_READ | PROT_WRITE;
#endif
}

/* A fault at addr on no guarded page (released: on a page a region has released or given up;
 * forgetting: on one being given up): run the access again, or pass the fault on (0)? A
 * released page may have been opened while this fault was on its way. A fault that repeats
 * there with nothing released meanwhile comes from someone else's protection (the
 * application's mprotect, say) and is theirs, like one on no region -- unless the page we
 * released now allows the access that faulted, when the fault is stale. */
static int run_again(uintptr_t addr, int access, int released, int forgetting)
{
    unsigned long changes = atomic_load(&MPII_pageguard.changes);
    uint64_t now = MPII_Pageguard_now_ns();
    if (unmatched_addr != addr || now - unmatched_ns > MPII_PAGEGUARD_REPEAT_NS) {
        unmatched_addr = 0;     /* a new access */
        unmatched_retries = 0;
        unmatched_stale = 0;
    }
    int again = 0;
    if (forgetting) {
        /* opened in a moment by the thread giving it up, however long it is descheduled */
        sched_yield();
        again = 1;
    } else if ((released || atomic_load(&MPII_pageguard.on)) &&
        (unmatched_addr != addr ||
         (unmatched_changes != changes && unmatched_retries < MPII_PAGEGUARD_MAX_RETRIES))) {
        unmatched_addr = addr;
        unmatched_changes = changes;
        unmatched_retries++;
        again = 1;
    } else if (released && unmatched_stale < MPII_PAGEGUARD_MAX_STALE &&
               MPII_Pageguard_mapping_allows(addr, access) == 1) {
        unmatched_stale++;
        atomic_fetch_add(&MPII_pageguard.stale_faults, 1);
        sched_yield();
        again = 1;
    } else {
        unmatched_addr = 0;
    }
    /* from our return, so that the query and the yield (long on a busy node) never make a
     * repeat look like a new access, which would lift the bounds above */
    unmatched_ns = MPII_Pageguard_now_ns();
    return again;
}

static void handler(int sig, siginfo_t * info, void *uctx)
{
    int saved_errno = errno;

    /* Our protections only ever cause access errors, raised by the kernel (si_code > 0). */
    /* Our protections cause access errors; a page being moved in may be unmapped for an
     * instant (pageguard_move.c). */
    if (info->si_code == SEGV_ACCERR || info->si_code == SEGV_MAPERR) {
        uintptr_t addr = (uintptr_t) info->si_addr;
        size_t ps = MPII_pageguard.pagesize;
        int released = 0, forgetting = 0;
        /* The region that guards the page, if any. A buffer reused by the next collective can
         * be in two regions at once, the older one finished (its pages released) but not yet
         * unregistered: only a guarded page is waited for. */
        for (int i = 0; i < MPII_PAGEGUARD_MAX_REGIONS; i++) {
            MPII_Pageguard_slot_t *slot = &MPII_pageguard.slots[i];
            MPIR_Pageguard_region_t *r = MPII_Pageguard_slot_enter(slot);
            if (!r)
                continue;
            if (addr >= r->gbase && addr < r->gbase + r->npages * ps) {
                size_t page = (addr - r->gbase) / ps;
                int state = atomic_load(&r->page_state[page]);
                if (MPII_Pageguard_page_waits(state) &&
                    (info->si_code == SEGV_ACCERR || state == MPII_PAGE_LANDING)) {
                    if (on_our_page(r, addr, page))
                        wait_for_page(slot, r, page);
                    else
                        MPII_Pageguard_slot_leave(slot);
                    unmatched_addr = 0;
                    errno = saved_errno;
                    return;
                }
                released |= (state == MPII_PAGE_RELEASED || state == MPII_PAGE_FORGOTTEN);
                forgetting |= (state == MPII_PAGE_FORGETTING);
            }
            MPII_Pageguard_slot_leave(slot);
        }
        if (info->si_code == SEGV_ACCERR &&
            run_again(addr, fault_access(uctx), released, forgetting)) {
            errno = saved_errno;
            return;
        }
    }
    chain(sig, info, uctx);
    errno = saved_errno;
}

/* ---- the handler's own stack ---- */

/* A receive buffer on a thread's stack may be left unread when its function returns: the next
 * deep call then pushes frames onto guarded pages, and the kernel, with no stack to run the
 * handler on, kills the process. So every thread that registers a region gets an alternate
 * signal stack (unless it has one), below a guard page, freed when the thread exits; and its
 * stack's bounds are noted for the handler (on_our_page). */
#define MPII_PAGEGUARD_ALTSTACK_MIN (64 * 1024)

static pthread_key_t altstack_key;
static pthread_once_t altstack_once = PTHREAD_ONCE_INIT;
static __thread int altstack_done __attribute__ ((tls_model("initial-exec")));

static size_t altstack_size(void)
{
    long min = sysconf(_SC_SIGSTKSZ);
    size_t size = min > 0 && (size_t) min * 4 > MPII_PAGEGUARD_ALTSTACK_MIN ?
        (size_t) min * 4 : MPII_PAGEGUARD_ALTSTACK_MIN;
    return (size + MPII_pageguard.pagesize - 1) / MPII_pageguard.pagesize * MPII_pageguard.pagesize;
}

static void altstack_free(void *mem)
{
    /* the exiting thread's frames, and a thread that gets this stack next, must not run onto
     * pages still guarded: receive data there is unwanted, send data must leave first */
    uintptr_t stack_lo, stack_hi;
    MPII_Pageguard_own_stack(&stack_lo, &stack_hi);
    if (stack_hi > stack_lo) {
        MPIR_Pageguard_forget_recv((void *) stack_lo, stack_hi - stack_lo);
        MPIR_Pageguard_guarded_pages((void *) stack_lo, stack_hi - stack_lo,
                                     MPIR_PAGEGUARD_TOUCH_WRITE);
    }
    stack_t now, off = {.ss_flags = SS_DISABLE };
    if (sigaltstack(NULL, &now) == 0 && now.ss_sp == (char *) mem + MPII_pageguard.pagesize)
        sigaltstack(&off, NULL);
    munmap(mem, MPII_pageguard.pagesize + altstack_size());
}

static void altstack_key_create(void)
{
    pthread_key_create(&altstack_key, altstack_free);
}

void MPII_Pageguard_ensure_altstack(void)
{
    stack_t now;
    if (altstack_done)
        return;
    MPII_Pageguard_note_stack_bounds();
    if (sigaltstack(NULL, &now) != 0)
        return;
    if (!(now.ss_flags & SS_DISABLE)) {
        altstack_done = 1;      /* the thread has its own */
        return;
    }
    size_t ps = MPII_pageguard.pagesize, size = altstack_size();
    char *mem = mmap(NULL, ps + size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (mem == MAP_FAILED)
        return;
    /* an overflow faults instead of writing into the next mapping */
    stack_t ss = {.ss_sp = mem + ps,.ss_size = size,.ss_flags = 0 };
    if (mprotect(mem, ps, PROT_NONE) != 0 || sigaltstack(&ss, NULL) != 0) {
        munmap(mem, ps + size);
        return;
    }
    pthread_once(&altstack_once, altstack_key_create);
    pthread_setspecific(altstack_key, mem);
    altstack_done = 1;
}

int MPIR_Pageguard_waiting(void)
{
    return atomic_load(&MPII_pageguard.waiting);
}
