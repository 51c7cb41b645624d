/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Page guards: let a collective return before its data is there, without ever exposing a page
 * that holds partial data.
 *
 * A guarded region is a user buffer [addr, addr + len) divided into sub-messages (sorted,
 * non-overlapping byte ranges; bytes between them are never written). Only the pages whose
 * every byte belongs to a sub-message are protected: PROT_NONE for a receive buffer, read-only
 * for a send buffer; released pages get back the protection they had. Memory that is not
 * private and read-write everywhere is refused (MPIR_PAGEGUARD_ERR_PROT), and so is RMA window
 * memory (MPIR_PAGEGUARD_ERR_EXPOSED). A page that also holds other bytes (the buffer's ends,
 * gaps between sub-messages: other objects may live there) is never protected: the
 * sub-messages that touch one are reported (MPIR_Pageguard_sub_is_sync) and the caller
 * completes them before it returns.
 *
 * Receive data lands in the region's staging memory (same offsets as the user buffer). When a
 * sub-message completes, its bytes are written into the still-protected user pages through
 * /proc/self/mem, which the kernel lets a process do to its own private pages whatever their
 * protection, and a page is made accessible only when every sub-message that overlaps it is
 * complete. So no thread can see a half-written page. Opt-in (config.move_min), whole pages
 * of a sub-message are swapped in from staging instead (pageguard_move.c). See README.tnbc for
 * the measured alternatives.
 *
 * A thread that touches a protected page takes SIGSEGV; the handler finds the region and page
 * (regions: linear over the few active slots; sub-message: binary search), records the first
 * touch of the sub-message, and waits on a futex until the page is released, then returns so
 * the faulting instruction runs again. It never allocates nor takes a lock. Faults that are not
 * ours go to the handler installed before ours.
 *
 * Pure C and Linux system calls: no MPICH includes, unit-tested with Check. */

#ifndef MPIR_PAGEGUARD_H_INCLUDED
#define MPIR_PAGEGUARD_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* Return codes */
#define MPIR_PAGEGUARD_OK            0
#define MPIR_PAGEGUARD_ERR_ARG      -1  /* bad arguments (overlapping or unsorted ranges, ...) */
#define MPIR_PAGEGUARD_ERR_OFF      -2  /* guards unavailable: not initialised, or disabled */
#define MPIR_PAGEGUARD_ERR_BUDGET   -3  /* over the mapping budget: complete synchronously */
#define MPIR_PAGEGUARD_ERR_NOMEM    -4  /* mprotect/mmap/malloc failed: complete synchronously */
#define MPIR_PAGEGUARD_ERR_LANDING  -5  /* the buffer cannot take data through /proc/self/mem */
#define MPIR_PAGEGUARD_ERR_SLOTS    -6  /* too many regions registered at once */
#define MPIR_PAGEGUARD_ERR_NOTHING  -7  /* no whole page to guard: complete synchronously */
#define MPIR_PAGEGUARD_ERR_PROT     -8  /* not private memory the program can read and write
                                         * (read-only, a read-only file, mixed protections,
                                         * shared): copy or wait */
#define MPIR_PAGEGUARD_ERR_HOOKS   -10 /* an object loaded later calls a signal or I/O
                                         * function past its hook: complete synchronously */
#define MPIR_PAGEGUARD_ERR_EXPOSED  -9  /* in an RMA window (MPIR_Pageguard_expose): copy or
                                         * wait */

typedef enum {
    MPIR_PAGEGUARD_RECV,        /* PROT_NONE; data lands from staging at completion */
    MPIR_PAGEGUARD_SEND         /* read-only; writable again once the data has left */
} MPIR_Pageguard_kind_t;

/* What to do when someone replaced our SIGSEGV handler after MPIR_Pageguard_init. */
typedef enum {
    MPIR_PAGEGUARD_REINSTALL,   /* chain to the newcomer and install ours again */
    MPIR_PAGEGUARD_SWITCH_OFF   /* refuse new regions (callers fall back to blocking) */
} MPIR_Pageguard_on_replaced_t;

typedef struct {
    size_t map_budget;          /* extra kernel mappings we may cause; 0: derive from
                                 * /proc/sys/vm/max_map_count */
    MPIR_Pageguard_on_replaced_t on_replaced;
    /* Called in the handler before a thread waits for a guarded page (may be NULL). For a
     * thread that cannot wait (it holds the lock under which sub-messages complete) it returns
     * MPIR_PAGEGUARD_CANNOT_WAIT, or MPIR_PAGEGUARD_CANNOT_WAIT_NEW_FRAME when addr lies below
     * the thread's live frames that hold application data: a page of that thread's own stack
     * there is given up (the frame that held the buffer has returned and new frames are being
     * pushed there). Any other access calls on_abort (may be NULL; async-signal-safe: say why)
     * and aborts the process, as going on would read or overwrite a page whose data is still
     * coming. */
    int (*before_wait) (void *addr);
    void (*on_abort) (void *addr);
    /* Called in the handler when a thread starts to wait (may be NULL), so that the progress
     * side can wake up. Must be async-signal-safe. */
    void (*on_wait) (void);
    /* Bytes of released staging memory kept for later receive regions (0: none kept). */
    size_t staging_cache;
    /* Landing by moving pages (pageguard_move.c): the whole pages of a sub-message in runs of
     * at least this many bytes are moved from staging into the buffer (mremap) instead of
     * copied; 0: always copy. The buffer's pages are replaced: pins and attributes of the old
     * pages (another library's memory registration, mlock, madvise, NUMA policy) do not carry
     * over, so this is for programs that hold none on their receive buffers. */
    size_t move_min;
    /* Tells the network layer that [addr, addr + len) holds other pages now (its registration
     * cache must forget the range); returns 0 when it cannot, and then no page moves. Called
     * before the moved pages are opened. */
    int (*pages_replaced) (void *addr, size_t len);
    /* Told once of a condition under which the page guards do less from now on (may be NULL):
     * what happened and what they do instead, one sentence. */
    void (*warn) (const char *what);
    /* May the calling thread run the program's signal handlers now? 0 while it holds a lock
     * the progress side needs (pageguard_defer.c; NULL: always). Async-signal-safe. */
    int (*may_run_handlers) (void);
} MPIR_Pageguard_config_t;

#define MPIR_PAGEGUARD_WAIT                  0
#define MPIR_PAGEGUARD_CANNOT_WAIT           1
#define MPIR_PAGEGUARD_CANNOT_WAIT_NEW_FRAME 2

/* Region flags */
#define MPIR_PAGEGUARD_TRACE 0x1        /* data is already in place: every sub-message is complete
                                         * at registration; a fault records the first touch and
                                         * releases that sub-message's pages (trace runs) */
#define MPIR_PAGEGUARD_MOVE  0x2        /* RECV: staging is not read after a sub-message lands,
                                         * so its pages may move into the buffer (move_min) */

typedef struct MPIR_Pageguard_region MPIR_Pageguard_region_t;

#define MPIR_PAGEGUARD_LATENCY_BUCKETS 160     /* up to 2^40 ns */

typedef struct {
    unsigned long regions;      /* registered so far */
    unsigned long refused_budget, refused_nomem, refused_landing, refused_prot, refused_exposed,
        refused_other;
    unsigned long faults;       /* faults on our pages */
    unsigned long foreign_faults;       /* faults passed to the previous handler */
    unsigned long stale_faults; /* faults repeated by the kernel on pages already opened */
    unsigned long waits_reaped; /* waits in the handler left by a longjmp, reaped */
    unsigned long pages_moved;  /* receive pages landed by moving them (config.move_min) */
    unsigned long replaced;     /* times our handler was found replaced */
    uint64_t stall_ns;          /* time spent waiting inside the handler */
    unsigned long mprotect_calls;
    unsigned long forgotten;    /* receive pages dropped: freed or unmapped before their data
                                 * came (forget_recv) */
    size_t map_budget, maps_in_use;
    unsigned long staging_reused;       /* receive regions that took a kept staging mapping */
    size_t staging_cached;      /* bytes of staging memory kept right now */
    /* Release latency of waits that ended by a release: from the later of (the thread began
     * to wait, the network signalled the data that released it: note_data_event) to the
     * thread running again. Bucket b = 4 k + q counts latencies in
     * [2^k (1 + q/4), 2^k (1 + (q+1)/4)) ns. */
    uint64_t release_hist[MPIR_PAGEGUARD_LATENCY_BUCKETS];
    uint64_t release_max_ns;
} MPIR_Pageguard_stats_t;

/* The latency bucket of ns, and the middle of bucket b in ns. */
int MPIR_Pageguard_latency_bucket(uint64_t ns);
double MPIR_Pageguard_latency_of_bucket(int b);

int MPIR_Pageguard_init(const MPIR_Pageguard_config_t * config);
int MPIR_Pageguard_finalize(void);
int MPIR_Pageguard_is_on(void);
/* 1 while any region is registered: the one check the libc hooks make before they look at a
 * buffer (with nothing guarded they go straight on to the process's function). */
int MPIR_Pageguard_any_region(void);
const char *MPIR_Pageguard_strerror(int rc);
void MPIR_Pageguard_get_stats(MPIR_Pageguard_stats_t * stats);
/* stall_ns alone, without the lock */
uint64_t MPIR_Pageguard_stall_ns(void);

/* sigaction as the program must see it (the sigaction and signal hooks call this): for SIGSEGV the
 * program's handler is kept behind ours while the guards are on, and no handler gets SIGSEGV
 * in its mask; otherwise libc's. */
struct sigaction;
int MPIR_Pageguard_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* Check that our SIGSEGV handler is still the installed one; acts on config.on_replaced.
 * Returns 1 when guards may be used. Called by MPIR_Pageguard_register too. */
int MPIR_Pageguard_check_handler(void);

/* Register and protect. sub_off/sub_len: nsub ranges relative to addr, sorted, non-overlapping,
 * inside [0, len); zero-length ranges are allowed and complete at once. */
int MPIR_Pageguard_register(void *addr, size_t len, int nsub, const size_t * sub_off,
                            const size_t * sub_len, MPIR_Pageguard_kind_t kind, int flags,
                            MPIR_Pageguard_region_t ** region);
/* The same for a receive region some of whose sub-messages are at hand (a self block): fill[k],
 * when not NULL, holds sub-message k's bytes, which are copied into the buffer before it is
 * protected (one copy, where staging and landing make two); those sub-messages are complete at
 * once and a page that only they cover stays open. */
int MPIR_Pageguard_register_filled(void *addr, size_t len, int nsub, const size_t * sub_off,
                                   const size_t * sub_len, const void *const *fill,
                                   MPIR_Pageguard_kind_t kind, int flags,
                                   MPIR_Pageguard_region_t ** region);

/* RECV regions: where sub-message k's bytes must be received (staging + sub_off[k]). */
void *MPIR_Pageguard_staging(MPIR_Pageguard_region_t * region);

/* 1 when sub-message k touches a page we could not protect (one it shares with bytes outside
 * every sub-message): the caller must complete it before returning to the application. */
int MPIR_Pageguard_sub_is_sync(MPIR_Pageguard_region_t * region, int k);

/* Progress side: sub-message k is complete (received into staging, or sent). Lands its bytes
 * and releases every page whose sub-messages are now all complete. Thread-safe. */
int MPIR_Pageguard_complete(MPIR_Pageguard_region_t * region, int k);

/* 1 once every page of the region is accessible. */
int MPIR_Pageguard_all_released(MPIR_Pageguard_region_t * region);

/* First touch of sub-message k: order (1 = touched first, 0 = never faulted) and the
 * CLOCK_MONOTONIC time in ns. */
void MPIR_Pageguard_first_touch(MPIR_Pageguard_region_t * region, int k, int *order,
                                uint64_t * time_ns);

/* Threads waiting in the handler right now. */
int MPIR_Pageguard_waiting(void);
/* The calling thread is not in the fault handler: a wait of its own that a signal handler
 * left with siglongjmp is over (its region need not wait for it). Async-signal-safe. */
void MPIR_Pageguard_wait_left(void);

/* Progress side: the sub-messages completed from now on came with network events signalled
 * at time_ns (CLOCK_MONOTONIC); measures the release latency (stats). Lock-free. */
void MPIR_Pageguard_note_data_event(uint64_t time_ns);

/* Asynchronous signals whose handlers this thread held back (bit sig - 1) while it could not
 * run them; the code that releases the lock calls MPIR_Pageguard_deliver_deferred (it checks
 * the word itself first: one TLS load when there is nothing to do). Async-signal-safe. */
extern __thread unsigned long long MPIR_Pageguard_deferred_signals
    __attribute__ ((tls_model("initial-exec")));
/* Nonzero while the thread takes or lets go of that lock (its code raises it): held back too. */
extern __thread int MPIR_Pageguard_lock_changing __attribute__ ((tls_model("initial-exec")));
void MPIR_Pageguard_deliver_deferred(void);
/* In a fork child: the signals held back were the parent's (a child has none pending). */
void MPIR_Pageguard_drop_deferred(void);

/* Guarded pages in [addr, addr + len). With READ or WRITE, each one is touched that way first
 * -- for code about to let the kernel or a library access user memory, e.g. before a system
 * call -- so the calling thread waits in the handler until the page is released (a read does
 * not wait for a read-only send page). Lock-free; returns the number of guarded pages found. */
typedef enum {
    MPIR_PAGEGUARD_COUNT,
    MPIR_PAGEGUARD_TOUCH_READ,
    MPIR_PAGEGUARD_TOUCH_WRITE
} MPIR_Pageguard_touch_t;
size_t MPIR_Pageguard_guarded_pages(const void *addr, size_t len, MPIR_Pageguard_touch_t touch);

/* [addr, addr + len) (whole pages) is about to be unmapped or discarded (munmap, a heap trim,
 * madvise), e.g. by free(). Receive pages in it that still wait for data are forgotten: they
 * are made accessible now, that data never lands there (the memory may be mapped again for
 * someone else), and they are no longer ours to protect or open. Does not wait and does not
 * allocate, so it is safe where the caller holds the allocator's lock.
 * Send regions are left alone (their pages are read until the data has left). Returns the
 * number of pages forgotten. */
size_t MPIR_Pageguard_forget_recv(const void *addr, size_t len);

/* The C library's free, realloc, sigaction, read, write, ... (pageguard_libc.h lists them) as
 * every object of the process but libmpi and the device's libraries calls them: redirected to
 * this module's stand-ins (hooks), which settle guarded pages first, by rewriting those
 * objects' GOT slots -- whatever order the program, libc and libmpi were loaded in; libmpi
 * defines none of these names. device_owns(path) names the device's objects (NULL: none).
 * Returns 0, or -1 with *why where a signal or I/O call could not reach its hook (a processor
 * whose relocations are not understood, a slot another interposer rewrote, a program that
 * defines the function itself); nothing is then redirected. Objects loaded later are
 * redirected at the next registration (MPIR_Pageguard_hooks_refresh). Not async-signal-safe;
 * idempotent. remove writes every slot back. */
int MPIR_Pageguard_hooks_install(int (*device_owns) (const char *path), const char **why);
/* Objects loaded since the last walk (or every object, force) get the hooks. -1 once an object
 * had a signal or I/O call that cannot reach its hook (another interposer rewrote the slot):
 * nothing may be guarded from then on. */
int MPIR_Pageguard_hooks_refresh(int force);
void MPIR_Pageguard_hooks_remove(void);
int MPIR_Pageguard_hooks_installed(void);
typedef struct {
    unsigned objects;           /* objects whose slots were looked at */
    unsigned slots;             /* slots redirected */
    unsigned foreign;           /* slots another interposer had rewritten, left to it */
    unsigned long calls_from_self;      /* hook calls made from libmpi itself: should be 0 */
} MPIR_Pageguard_hooks_stats_t;
void MPIR_Pageguard_hooks_get_stats(MPIR_Pageguard_hooks_stats_t * stats);
/* 1 when the hooks of free and realloc are installed */
int MPIR_Pageguard_alloc_interposed(void);
/* The hook standing in for the C library's function name, or NULL (unit tests call them). */
void *MPIR_Pageguard_hook(const char *name);

/* Memory other processes may read or write directly, which page protections cannot stop
 * (RDMA into registered pages) or must not delay (active-message RMA under MPICH's lock): the
 * memory of RMA windows. Regions overlapping it are refused with MPIR_PAGEGUARD_ERR_EXPOSED.
 * owner tells the exposers apart (e.g. a window); the same memory may be exposed more than
 * once. unexpose removes owner's range that starts at addr, or all of owner's with addr NULL.
 * Thread-safe; usable before MPIR_Pageguard_init. When a range cannot be recorded (no memory),
 * all memory counts as exposed from then on. */
void MPIR_Pageguard_expose(const void *owner, const void *addr, size_t len);
void MPIR_Pageguard_unexpose(const void *owner, const void *addr);

/* Open every page still protected and wake its waiters, e.g. after MPIR_Pageguard_complete
 * failed: the content of those pages is undefined, and the caller reports the error. Later
 * completions land nothing (the pages are the program's again). */
void MPIR_Pageguard_open_all(MPIR_Pageguard_region_t * region);

/* Remove the region. With pages still protected (an abandoned operation) they are made
 * accessible first and waiters are woken; their content is then undefined. */
int MPIR_Pageguard_unregister(MPIR_Pageguard_region_t * region);

#endif /* MPIR_PAGEGUARD_H_INCLUDED */
