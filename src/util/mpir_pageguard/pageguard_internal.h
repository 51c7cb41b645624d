/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Shared state of the page-guard module: regions, the slot table the signal handler scans,
 * and the global settings. Not for use outside src/util/mpir_pageguard. */

#ifndef PAGEGUARD_INTERNAL_H_INCLUDED
#define PAGEGUARD_INTERNAL_H_INCLUDED

#include "mpir_pageguard.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/types.h>

/* Regions registered at once: the handler scans them linearly, so keep this small. */
#define MPII_PAGEGUARD_MAX_REGIONS 256
#define MPII_PAGEGUARD_STAGING_CACHED 8 /* staging mappings kept at most */

/* Page states, read by the handler. A guarded page changes hands by compare-and-swap: landing
 * claims it (LANDING) and a thread giving it up claims it (FORGETTING), never both. */
enum {
    MPII_PAGE_UNGUARDED = 0,    /* holds no sub-message byte: never protected by us */
    MPII_PAGE_GUARDED = 1,      /* protected, waiting for its sub-messages */
    MPII_PAGE_RELEASED = 2,     /* accessible again */
    MPII_PAGE_FORGOTTEN = 3,    /* given up (unmapped by the application, or stack reused):
                                 * open, never landed, touched or protected again */
    MPII_PAGE_LANDING = 4,      /* data is being written or moved in: waited for like a guarded
                                 * page, never forgotten meanwhile */
    MPII_PAGE_FORGETTING = 5    /* being opened to become FORGOTTEN: a fault there runs again */
};

/* A thread touching a page in this state waits. */
static inline int MPII_Pageguard_page_waits(int state)
{
    return state == MPII_PAGE_GUARDED || state == MPII_PAGE_LANDING;
}

struct MPIR_Pageguard_region {
    uintptr_t base, end;        /* the user buffer */
    uintptr_t gbase;            /* first page of the guardable span, page aligned */
    size_t npages;              /* pages in [gbase, gbase + npages * pagesize) */
    uintptr_t guard_lo, guard_hi;       /* whole pages inside [base, end): may be protected */
    MPIR_Pageguard_kind_t kind;
    int flags;
    int open_prot;              /* what the program gave the pages: restored on release */
    int opened_all;             /* MPIR_Pageguard_open_all ran: land nothing more (under lock) */
    int nsub;
    size_t *sub_off, *sub_len;

    _Atomic unsigned char *page_state;  /* per page of the span */
    int *page_pending;          /* incomplete sub-messages overlapping each page (under lock) */
    _Atomic unsigned char *sub_done;
    _Atomic int *touch_order;
    uint64_t *touch_ns;
    _Atomic int touch_counter;
    _Atomic int unreleased;     /* guarded pages not yet released */
    _Atomic unsigned int seq;   /* futex word: bumped whenever pages are released */
    _Atomic int waiters;        /* handlers waiting on seq: no wake-up call when none */
    int waiter_reaped;          /* a wait left by a longjmp was reaped at retirement: the
                                 * struct and page_state are never freed (a slow waiter may
                                 * still read them) */

    char *staging;              /* RECV: same offsets as the user buffer, and the same offsets
                                 * within a page, so that whole pages can move */
    char *staging_map;          /* the mapping staging lies in, and its length */
    size_t staging_len;
    int no_moves;               /* a move failed here: copy from now on */
    int staging_spoiled;        /* a move left part of staging protected: not kept for later */
    int staging_lost, spare_lost;       /* a failed move left a hole there that another
                                         * mapping took: never unmapped by us */
    char *spare;                /* PROT_NONE reservation the size of the span, for moves */
    size_t maps_reserved;
    pthread_mutex_t lock;       /* progress side only; never taken by the handler */
    int slot;
};

typedef struct {
    _Atomic int state;          /* MPII_SLOT_* */
    _Atomic int users;          /* handlers currently looking at this slot */
    MPIR_Pageguard_region_t *region;
} MPII_Pageguard_slot_t;

enum { MPII_SLOT_FREE = 0, MPII_SLOT_BUSY = 1, MPII_SLOT_ACTIVE = 2, MPII_SLOT_DYING = 3 };

typedef struct {
    _Atomic int on;
    size_t pagesize;
    _Atomic int mem_fd;         /* /proc/self/mem, or -1 when landing is unavailable; use
                                 * MPII_Pageguard_landing_fd */
    pid_t mem_pid;              /* the process that opened it, and what it is */
    dev_t mem_dev;
    ino_t mem_ino;
    MPIR_Pageguard_config_t config;
    pthread_mutex_t lock;       /* slot allocation and budget */
    size_t map_budget, maps_in_use;
    MPII_Pageguard_slot_t slots[MPII_PAGEGUARD_MAX_REGIONS];
    _Atomic int live_regions;   /* slots ACTIVE: the libc hooks' one check */
    _Atomic uintptr_t span_lo, span_hi; /* the pages of all taken slots lie in [lo, hi);
                                         * empty when hi is 0; changed under lock */
    _Atomic unsigned long changes;      /* pages released or forgotten, regions removed */

    _Atomic unsigned long faults, foreign_faults, stale_faults, replaced, mprotect_calls;
    _Atomic unsigned long forgotten;    /* receive pages freed or unmapped before their data */
    _Atomic unsigned long pages_moved;  /* receive pages landed by moving, not copying */
    _Atomic int moves_off;      /* a move could not be announced or undone: no more moves */
    uintptr_t main_stack;       /* an address in the main thread's stack (never moved), or 0 */
    _Atomic uint64_t stall_ns;
    _Atomic int waiting;        /* threads waiting in the handler */
    _Atomic unsigned long waits_reaped; /* waits left by a longjmp (pageguard_wait.c) */
    _Atomic uint64_t data_event_ns;     /* MPIR_Pageguard_note_data_event */
    _Atomic uint64_t release_hist[MPIR_PAGEGUARD_LATENCY_BUCKETS];
    _Atomic uint64_t release_max_ns;
    unsigned long regions, refused_budget, refused_nomem, refused_landing, refused_prot,
        refused_exposed, refused_other;

    /* released staging mappings for the next regions (pageguard_staging.c); under lock */
    struct {
        void *mem;
        size_t len;
    } staging[MPII_PAGEGUARD_STAGING_CACHED];
    size_t staging_cached;
    unsigned long staging_reused;
} MPII_Pageguard_global_t;

extern MPII_Pageguard_global_t MPII_pageguard;

/* Use a slot's region, if it is active, without racing its unregistration: announce
 * ourselves, then check again (unregister waits for the users to drop to 0). Returns NULL when
 * the slot is not active; otherwise call MPII_Pageguard_slot_leave. Atomics only: safe in the
 * signal handler. */
static inline MPIR_Pageguard_region_t *MPII_Pageguard_slot_enter(MPII_Pageguard_slot_t * slot)
{
    if (atomic_load(&slot->state) != MPII_SLOT_ACTIVE)
        return NULL;
    atomic_fetch_add(&slot->users, 1);
    if (atomic_load(&slot->state) != MPII_SLOT_ACTIVE) {
        atomic_fetch_sub(&slot->users, 1);
        return NULL;
    }
    return slot->region;
}

static inline void MPII_Pageguard_slot_leave(MPII_Pageguard_slot_t * slot)
{
    atomic_fetch_sub(&slot->users, 1);
}


/* Wait records (pageguard_wait.c). A thread about to wait for a page of r takes a record
 * (NULL: none left, keep the slot instead), looks with wait_goes_on before every look at r
 * (0: the record was reaped, touch r no more), and ends with wait_end (0: it had been reaped,
 * and the reaper took back this wait's share of MPII_pageguard.waiting). A retiring region
 * drains them: returns 1 when another thread's record was reaped for being silent (that waiter
 * may still read the region's memory: keep it). A waiter looks at least this often: */
#define MPII_PAGEGUARD_WAIT_LOOK_NS (50ull * 1000 * 1000)
typedef struct MPII_Pageguard_wait MPII_Pageguard_wait_t;
MPII_Pageguard_wait_t *MPII_Pageguard_wait_begin(MPIR_Pageguard_region_t * r,
                                                 unsigned int *mine);
int MPII_Pageguard_wait_goes_on(MPII_Pageguard_wait_t * w, unsigned int mine);
int MPII_Pageguard_wait_end(MPII_Pageguard_wait_t * w, unsigned int mine);
int MPII_Pageguard_wait_drain(MPIR_Pageguard_region_t * r);

/* The protection to open the pages of [lo, hi) with again (pageguard_prot.c). */
enum {
    MPII_PAGEGUARD_PROT_OK = 0,         /* read-write everywhere: *prot is set */
    MPII_PAGEGUARD_PROT_REFUSED = 1,    /* read-only, unmapped, mixed or shared */
    MPII_PAGEGUARD_PROT_UNKNOWN = 2,    /* the method is not available here */
    MPII_PAGEGUARD_PROT_FAILED = 3      /* could not ask (no descriptor or memory left) */
};
typedef enum {
    MPII_PAGEGUARD_BY_QUERY, MPII_PAGEGUARD_BY_TEXT, MPII_PAGEGUARD_BY_POPULATE
} MPII_Pageguard_prot_method_t;
/* 1 when [lo, hi) overlaps memory exposed to other processes (pageguard_exposed.c). */
int MPII_Pageguard_is_exposed(uintptr_t lo, uintptr_t hi);
int MPII_Pageguard_open_prot(uintptr_t lo, uintptr_t hi, MPIR_Pageguard_kind_t kind, int *prot);
/* Does the mapping at addr allow an access of this kind (PROT_READ, PROT_WRITE or PROT_EXEC)
 * now? 1 yes, 0 no, -1 cannot tell. Raw system calls only: safe in the signal handler, and
 * past any wrapper a preloaded tool puts on open, ioctl or close. */
int MPII_Pageguard_mapping_allows(uintptr_t addr, int access);
/* The mapping at addr: 1 and its bounds, protection and whether it is other than private
 * anonymous memory (*shared); 0 when none; -1 cannot tell. PROCMAP_QUERY (Linux 6.11), else the
 * maps text; raw system calls, as above. */
int MPII_Pageguard_mapping_at(uintptr_t addr, uintptr_t * start, uintptr_t * end, int *prot,
                              int *shared);
/* the maps text only (unit tests) */
int MPII_Pageguard_mapping_by_text(uintptr_t addr, uintptr_t * start, uintptr_t * end,
                                   int *prot, int *shared);
/* one method only (unit tests) */
int MPII_Pageguard_prot_by(MPII_Pageguard_prot_method_t how, uintptr_t lo, uintptr_t hi,
                           int *prot);

/* ---- the bottom (pageguard_state.c) ---- */

/* The landing's pwrite as a raw system call (it writes from staging, never guarded, and is no
 * I/O of the program's that a preloaded tracer should see). The module's other calls of the C
 * library (sigaction, ...) are plain: libmpi's own slots are never redirected to the hooks. */
ssize_t MPII_Pageguard_raw_pwrite(int fd, const void *buf, size_t count, off_t off);
uint64_t MPII_Pageguard_now_ns(void);
int MPII_Pageguard_mprotect(uintptr_t addr, size_t len, int prot);
/* The descriptor on /proc/self/mem, opened again when the program closed it or forked. */
int MPII_Pageguard_landing_fd(void);
/* Note the calling thread's stack (when it registers a region); [lo, hi) overlaps it; its
 * bounds (0, 0 when not noted). */
void MPII_Pageguard_note_stack_bounds(void);
int MPII_Pageguard_on_own_stack(uintptr_t lo, uintptr_t hi);
void MPII_Pageguard_own_stack(uintptr_t * lo, uintptr_t * hi);

/* ---- beside it: staging (pageguard_staging.c) ---- */

/* Staging memory of at least len bytes (page multiple), from the cache or a new mapping;
 * *mapped_len is what to hand back. NULL when mmap fails. */
void *MPII_Pageguard_staging_get(size_t len, size_t * mapped_len);
void MPII_Pageguard_staging_put(void *mem, size_t len);
void MPII_Pageguard_staging_drain(void);

/* ---- moving pages (pageguard_move.c) ---- */

/* Land whole pages [lo, hi) of receive region r (page aligned, inside one complete sub-message,
 * every page claimed for landing; r->lock held) by moving staging's pages there.
 * Returns 1 when they moved (they are open and released now), 0 when they must be copied. */
int MPII_Pageguard_move_run(MPIR_Pageguard_region_t * r, uintptr_t lo, uintptr_t hi);
/* Set while this thread announces a move: the unmap event that raises is not the program's. */
extern __thread int MPII_Pageguard_replacing __attribute__ ((tls_model("initial-exec")));
/* Give back r's spare reservation (free_region). */
void MPII_Pageguard_move_done(MPIR_Pageguard_region_t * r);

/* ---- regions (pageguard_region.c) ---- */

/* Protect a region (MPIR_Pageguard_register_filled without the handler and stack checks,
 * pageguard_register.c does those). */
int MPII_Pageguard_region_add(void *addr, size_t len, int nsub, const size_t * sub_off,
                              const size_t * sub_len, const void *const *fill,
                              MPIR_Pageguard_kind_t kind, int flags,
                              MPIR_Pageguard_region_t ** region);
/* Give up guarded page p of a receive region: accessible now, never landed, counted; 1 if it
 * was guarded. Callers wake the waiters. Signal-safe (atomics and mprotect). */
int MPII_Pageguard_forget_page(MPIR_Pageguard_region_t * r, size_t p);
/* The threads waiting in the handler for a page of region look again. Signal-safe. */
void MPII_Pageguard_wake(MPIR_Pageguard_region_t * region);
int MPII_Pageguard_sub_pages(const MPIR_Pageguard_region_t * r, int k, size_t * first,
                             size_t * last);

/* ---- the SIGSEGV side (pageguard_fault.c) ---- */

int MPII_Pageguard_install_handler(void);
/* pageguard_defer.c: the program's handlers behind a trampoline while the guards are on;
 * sigaction for a signal it covers (1 done, 0 failed with errno), -1 for one it does not */
void MPII_Pageguard_defer_start(void);
void MPII_Pageguard_defer_stop(void);
int MPII_Pageguard_defer_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void MPII_Pageguard_uninstall_handler(void);
int MPII_Pageguard_is_our_handler(const struct sigaction *sa);
/* The handler foreign faults go to: a copy, and its replacement. */
void MPII_Pageguard_get_previous(struct sigaction *sa);
void MPII_Pageguard_set_previous(const struct sigaction *sa);
/* Give the calling thread an alternate signal stack for the handler, if it has none, and note
 * its stack. */
void MPII_Pageguard_ensure_altstack(void);

#endif /* PAGEGUARD_INTERNAL_H_INCLUDED */
