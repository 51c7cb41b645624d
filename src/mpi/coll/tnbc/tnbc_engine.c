/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The engine of early-returned collectives: launch, the list of operations in flight, and the
 * helper thread that finishes them.
 *
 * The list is touched only under MPICH's global lock. Operations advance whenever MPICH
 * progresses (a progress hook, active while the list is non-empty: the application's own
 * MPI_Wait or MPI_Test moves them too) and in the helper thread. The helper must not steal a
 * core from the application, so it sleeps whenever a round finds nothing to do: on the
 * network's event descriptor (MPID_Tnbc_arm: UCX's worker wakeup) and on an eventfd of
 * our own, which is signalled when an operation is launched, when a thread starts waiting in
 * the page-guard handler, when an application thread stops driving progress itself, and at
 * finalize. It never holds the global lock while it sleeps. Without a network descriptor it
 * polls with sleeps that double up to MPIR_CVAR_TNBC_POLL_MAX_US. T-NBC raises the thread
 * level to MPI_THREAD_MULTIPLE (maint/patches) so the lock is real even for
 * MPI_THREAD_SINGLE. */

#include "mpiimpl.h"
#include "tnbc_engine.h"
#include "tnbc_access.h"
#include "tnbc_late_error.h"
#include "tnbc_message.h"
#include "tnbc_node.h"
#include "tnbc_op.h"
#include "tnbc_stats.h"
#include "tnbc_util.h"
#include "mpid_tnbc.h"
#include "mpir_pageguard.h"


#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_RETURN
      category    : TNBC
      type        : enum
      default     : adaptive
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : |-
        Whether a collective that can return early does.
        adaptive - per call site, return early while the application sees less of an early
                   call (time in the call and blocked on the data afterwards) than waiting for
                   the same messages would have taken; a site that waits tries again now and
                   then
        early    - always return early
        wait     - always wait in the call (T-NBC's messages, no page guards)

    - name        : MPIR_CVAR_TNBC_POLL_MAX_US
      category    : TNBC
      type        : int
      default     : 200
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Longest sleep of the T-NBC helper thread between two progress rounds that found nothing
        new while data is moving, in microseconds (taken between 1 and 999999): the polling
        helper's whole backoff (from 1 us, doubling), and the event-driven helper's timer while
        the network is busy.

    - name        : MPIR_CVAR_TNBC_HELPER_WAKEUP
      category    : TNBC
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        If true, the T-NBC helper thread sleeps on the network's event descriptor when a
        progress round finds nothing to do, and wakes when data moves. If false, it polls with
        timed sleeps (MPIR_CVAR_TNBC_POLL_MAX_US), as before the event-driven helper.

    - name        : MPIR_CVAR_TNBC_HELPER_SLICE_US
      category    : TNBC
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Experimental. The scheduler slice the T-NBC helper thread asks for, in microseconds
        (Linux 6.12 and later: 100 to 100000; no privilege needed; older kernels ignore it). A
        woken thread with a shorter slice than the running one's may preempt it instead of
        waiting for the running thread's slice to end. 0: the kernel's default slice.

    - name        : MPIR_CVAR_TNBC_STAGING_CACHE
      category    : TNBC
      type        : int
      default     : 67108864
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Bytes of receive staging memory kept after a collective finished, for the next ones
        (at most 8 mappings). Fresh memory costs a page fault and a zeroed page for every
        received page; 0 returns staging memory to the system at once.

    - name        : MPIR_CVAR_TNBC_LANDING_MOVE_MIN
      category    : TNBC
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Received data lands in a guarded receive buffer by moving whole pages from staging
        (mremap, no copy) for runs of at least this many bytes; 0 always copies. The buffer's
        pages are replaced: use it only if no library or the program itself holds pins or
        attributes on receive buffers (ibv_reg_mr or cudaHostRegister outside MPI, mlock,
        madvise, NUMA policy). See README.tnbc.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* A sleep on the descriptors ends after this long anyway: a lost event costs at most this,
 * and such rounds are counted ("rescued" in the statistics) so that tests can see them. */
#define MPII_TNBC_SLEEP_LIMIT_MS 100
#define MPII_TNBC_SLEEP_LIMIT_NS (MPII_TNBC_SLEEP_LIMIT_MS * 1000000ull)
/* First time limit of a sleep on the network after a round with news (see helper_main). */
#define MPII_TNBC_NET_TIMER_NS 8000ull
/* An application thread's sleep is shorter: another thread's progress does not wake it. */
#define MPII_TNBC_APP_SLEEP_LIMIT_MS 2

int MPIR_Tnbc_ops_in_flight;
MPL_TLS int MPIR_Tnbc_user_coll;
MPL_TLS uintptr_t MPIR_Tnbc_app_frames MPIR_TNBC_TLS_SIGNAL_SAFE;

static struct {
    int started;
    MPII_Tnbc_op_t *head;
    MPII_Tnbc_op_t *retired;    /* done on the helper, freed by an application thread */
    struct MPII_Tnbc_call *calls;       /* nonblocking calls whose request is not complete */
    int hook_id;
    int hook_active;
    unsigned long events;       /* completions seen: the helper's sign of news */
    int app_driving;            /* application threads driving progress in progress_until */

    pthread_t thread;
    int have_thread;            /* the helper runs; without it every operation waits in its call */
    int stop;
    int wake_fd;                /* our eventfd */
    int net_fd;                 /* the network's event descriptor, or -1: poll */
    int helper_asleep;          /* the helper sleeps (or is about to) on the descriptors */
    int held;                   /* an operation held bodies back for a node peer: no event
                                 * tells us when its turn comes, so the helper keeps a timer */
} engine = {.wake_fd = -1,.net_fd = -1 };

/* The helper never frees memory the application's threads allocated: free() would take the
 * allocator lock of their arena, which such a thread may hold while it waits in the fault
 * handler for a page only the helper can bring (malloc writing into a freed, still guarded
 * buffer) -- a deadlock found by tnbc_reuse. Finished operations wait on engine.retired until
 * an application thread passes by. */
static MPL_TLS int on_helper;

static void free_retired(void)
{
    while (engine.retired) {
        MPII_Tnbc_op_t *op = engine.retired;
        engine.retired = *MPII_Tnbc_op_link(op);
        MPII_Tnbc_op_free(op);
    }
}

/* A new collective frees what the helper finished since the last MPI call -- before it maps
 * staging memory of its own, so that it can take over theirs. Without it, an application
 * whose collectives all finish on the helper (it makes no other MPI call in between) would
 * keep every finished operation until MPI_Finalize. */
void MPII_Tnbc_engine_reap(void)
{
    if (!on_helper)
        free_retired();
}

int MPII_Tnbc_engine_uses_comm(const MPIR_Comm * comm)
{
    for (MPII_Tnbc_op_t * op = engine.head; op; op = *MPII_Tnbc_op_link(op)) {
        MPII_Tnbc_op_info_t info;
        MPII_Tnbc_op_info(op, &info);
        if (info.comm == comm)
            return 1;
    }
    return 0;
}

/* How often the calling thread holds MPICH's global lock (0: not at all). */
int MPII_Tnbc_holds_global_lock(void)
{
    return MPIR_ThreadInfo.isThreaded ?
        MPIDU_Thread_mutex_held_by_self(&MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX) : 0;
}

/* ---- waking the helper ---- */

/* Async-signal-safe (the page-guard handler calls it): one write to an eventfd, and only when
 * the helper sleeps. The helper announces its sleep before it checks for work one last time,
 * and we announce the work before we look at the announcement (both sequentially
 * consistent), so one of the two sees the other. */
static void wake_helper(void)
{
    if (engine.wake_fd >= 0 && __atomic_load_n(&engine.helper_asleep, __ATOMIC_SEQ_CST)) {
        uint64_t one = 1;
        ssize_t rc = syscall(SYS_write, engine.wake_fd, &one, sizeof(one));
        (void) rc;      /* EAGAIN: the counter is already non-zero, the helper will wake */
    }
}

static void drain_wake_fd(void)
{
    uint64_t count;
    ssize_t rc = syscall(SYS_read, engine.wake_fd, &count, sizeof(count));
    (void) rc;
}

/* ---- operations in flight ---- */

static void unlink_op(MPII_Tnbc_op_t * op)
{
    for (MPII_Tnbc_op_t ** p = &engine.head; *p; p = MPII_Tnbc_op_link(*p)) {
        if (*p == op) {
            *p = *MPII_Tnbc_op_link(op);
            break;
        }
    }
    __atomic_sub_fetch(&MPIR_Tnbc_ops_in_flight, 1, __ATOMIC_SEQ_CST);
    if (MPIR_Tnbc_ops_in_flight == 0 && engine.hook_active) {
        MPIR_Progress_hook_deactivate(engine.hook_id);
        engine.hook_active = 0;
    }
}

static void add_op(MPII_Tnbc_op_t * op)
{
    *MPII_Tnbc_op_link(op) = engine.head;
    engine.head = op;
    if (!engine.hook_active) {
        MPIR_Progress_hook_activate(engine.hook_id);
        engine.hook_active = 1;
    }
    __atomic_add_fetch(&MPIR_Tnbc_ops_in_flight, 1, __ATOMIC_SEQ_CST);
    wake_helper();
}

static void retire_op(MPII_Tnbc_op_t * op)
{
    MPII_Tnbc_op_info_t info;
    MPII_Tnbc_op_info(op, &info);
    MPII_Tnbc_stats_op_done(MPII_Tnbc_now_ns() - info.t_start_ns, info.error);
    if (info.error && !info.error_reported)
        MPII_Tnbc_late_error_raise(info.comm, info.coll, info.error);
    unlink_op(op);
    if (on_helper) {
        *MPII_Tnbc_op_link(op) = engine.retired;
        engine.retired = op;
    } else {
        MPII_Tnbc_op_free(op);
    }
}

/* ---- the end of a call ---- */

/* What a call does once its operation is done, before its caller sees the data. */
typedef struct {
    int packed;                 /* unpack the temporary receive space */
    void *trace_buf;            /* a trace run's receive buffer: guard it for first touches */
    uint64_t t_enter_ns;
} MPII_Tnbc_end_t;

static MPII_Tnbc_end_t end_of(const MPII_Tnbc_start_t * args)
{
    MPII_Tnbc_end_t end = {.packed = args->buf.recv_packed };
    if (args->learn.trace && !args->buf.recv_packed) {
        end.trace_buf = args->buf.recv_user;
        end.t_enter_ns = MPII_Tnbc_now_ns();
    }
    return end;
}

static int end_call(MPII_Tnbc_op_t * op, const MPII_Tnbc_launch_t * launch,
                    const MPII_Tnbc_end_t * end)
{
    if (end->packed)
        return launch->unpack(launch->unpack_ctx, MPII_Tnbc_op_packed_recv(op));
    if (end->trace_buf)
        MPII_Tnbc_access_trace(launch->site, end->trace_buf, MPII_Tnbc_op_sched(op),
                               end->t_enter_ns);
    return MPI_SUCCESS;
}

/* ---- nonblocking calls ---- */

/* A nonblocking call whose request is not complete. Only application threads complete one:
 * the end of a call writes into the application's buffers (unpack) and frees what the call
 * allocated, neither of which the helper may do (see on_helper). Its operation stays on the
 * list, done or not, until then (call pending, tnbc_op.h). */
typedef struct MPII_Tnbc_call {
    struct MPII_Tnbc_call *next;
    MPII_Tnbc_op_t *op;
    MPIR_Request *request;
    int early;                  /* complete once the rest can be left to the page guards */
    int error;                  /* an earlier operation's late error, told with this call */
    MPII_Tnbc_launch_t launch;
    MPII_Tnbc_end_t end;
} MPII_Tnbc_call_t;

static int call_is_due(const MPII_Tnbc_call_t * c)
{
    return MPII_Tnbc_op_is_done(c->op) || (c->early && MPII_Tnbc_op_sync_done(c->op));
}

/* The request completes with the operation's error if it has one by now (a later one is a late
 * error, as for a blocking call that returned early). */
static void complete_call(MPII_Tnbc_call_t * c)
{
    MPII_Tnbc_op_info_t info;
    int mpi_errno = c->error;

    MPII_Tnbc_op_info(c->op, &info);
    if (info.error) {
        MPIR_ERR_ADD(mpi_errno, info.error);
        MPII_Tnbc_op_error_reported(c->op);
    } else if (MPII_Tnbc_op_is_done(c->op)) {
        int err = end_call(c->op, &c->launch, &c->end);
        MPIR_ERR_ADD(mpi_errno, err);
    }
    if (c->launch.release)
        c->launch.release((void *) c->launch.unpack_ctx);
    MPII_Tnbc_op_returned(c->op);
    MPII_Tnbc_op_set_call_pending(c->op, 0);
    c->request->status.MPI_ERROR = mpi_errno;
    MPIR_Request_complete(c->request);
    MPL_free(c);
}

/* An application thread, under the global lock: in MPI_Wait, MPI_Test or another call that
 * progresses. The first such call after the start is taken for the wait (tnbc_gain.h judges
 * from there whether completing early paid), hence no completion in the starting call. */
static void complete_due_calls(void)
{
    MPII_Tnbc_call_t **p = &engine.calls;
    while (*p) {
        MPII_Tnbc_call_t *c = *p;
        MPII_Tnbc_op_wait_began(c->op);
        if (call_is_due(c)) {
            *p = c->next;
            complete_call(c);
        } else {
            p = &c->next;
        }
    }
}

/* Progress hook: advance every operation, complete the calls that may return, retire the
 * finished operations. An error of an operation that returned early cannot reach its
 * (returned) call: it is raised when the operation retires (tnbc_late_error.c), and its pages
 * are released. */
static int poll_all(int *made_progress)
{
    MPII_Tnbc_op_t *op, *next;

    *made_progress = 0;
    engine.held = 0;
    if (!on_helper)
        free_retired();
    for (op = engine.head; op; op = *MPII_Tnbc_op_link(op)) {
        int made = 0;
        MPII_Tnbc_op_poll(op, &made);
        engine.held |= MPII_Tnbc_op_held(op);
        if (made) {
            *made_progress = 1;
            engine.events++;
        }
    }
    if (!on_helper && engine.calls)
        complete_due_calls();
    for (op = engine.head; op; op = next) {
        next = *MPII_Tnbc_op_link(op);
        if (MPII_Tnbc_op_is_done(op) && !MPII_Tnbc_op_call_pending(op))
            retire_op(op);
    }
    return MPI_SUCCESS;
}

/* ---- the helper thread ---- */

static uint64_t thread_cpu_ns(void)
{
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    return (uint64_t) cpu.tv_sec * 1000000000ull + cpu.tv_nsec;
}

/* The kernel's part of this thread's CPU time: the network stack, mprotect, landing. */
static uint64_t thread_system_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (uint64_t) ru.ru_stime.tv_sec * 1000000000ull + ru.ru_stime.tv_usec * 1000ull;
}

/* Which part of the helper's CPU time a round belongs to: while an application thread waited
 * for T-NBC anyway (its core was idle; a blocking collective spends that CPU inside the call),
 * or while the application ran, split by whether the round completed a sub-message. A round
 * that completed nothing may still have moved bytes (a socket read of a long message). */
static MPII_Tnbc_helper_cpu_t round_kind(int made, int app_waited)
{
    if (app_waited)
        return MPII_TNBC_HELPER_CPU_APP_WAITED;
    return made ? MPII_TNBC_HELPER_CPU_DATA : MPII_TNBC_HELPER_CPU_IDLE;
}

/* What the helper does after a round. */
typedef enum {
    MPII_HELPER_AGAIN,          /* news, or events pending: another round at once */
    MPII_HELPER_SLEEP_NET,      /* armed: sleep on the network and our eventfd */
    MPII_HELPER_SLEEP_OURS,     /* nothing for us to do: sleep on our eventfd only */
    MPII_HELPER_BACKOFF,        /* no network descriptor: timed sleep */
    MPII_HELPER_STOP
} MPII_helper_next_t;

/* One progress round under the global lock. The data-event time tells the page guards when
 * the network signalled the data this round may complete (release latency). */
static MPII_helper_next_t helper_round(uint64_t data_event_ns, int *made, int *net_events_out,
                                       int *held_out)
{
    MPII_helper_next_t next;

    uint64_t asked_ns = MPII_Tnbc_now_ns();
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    MPII_Tnbc_stats_helper_lock(MPII_Tnbc_now_ns() - asked_ns);
    unsigned long before = engine.events;
    int net_events = 0;
    *made = 0;
    if (engine.head) {
        MPIR_Pageguard_note_data_event(data_event_ns);
        /* our messages complete in the network's progress alone; MPICH's whole progress
         * engine would cost a second epoll_wait per round on TCP */
        if (engine.net_fd >= 0)
            net_events = MPID_Tnbc_progress();
        else
            MPID_Progress_test(NULL);
        poll_all(made);
    }
    *made |= (engine.events != before);
    if (*made)
        next = MPII_HELPER_AGAIN;
    else if (!engine.head || (engine.app_driving && !MPIR_Pageguard_waiting()))
        /* an application thread progressing in progress_until wakes us when it leaves (unless
         * a signal handler on it waits for a page: then it drives nothing) */
        next = MPII_HELPER_SLEEP_OURS;
    else if (engine.net_fd < 0)
        next = MPII_HELPER_BACKOFF;
    else
        next = MPID_Tnbc_arm(net_events == 0) ? MPII_HELPER_SLEEP_NET : MPII_HELPER_AGAIN;
    *held_out = engine.held;
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    *net_events_out = net_events;
    return next;
}

/* Sleep on our eventfd, and the network's (with_net); for at most limit_ns (0: without limit
 * where with_net is 0). Returns the time the sleep ended. */
static uint64_t helper_sleep(int with_net, uint64_t limit_ns, int *timed_out)
{
    struct pollfd fds[2] = {
        {.fd = engine.wake_fd,.events = POLLIN},
        {.fd = engine.net_fd,.events = POLLIN}
    };
    struct timespec limit = {.tv_sec = limit_ns / 1000000000ull,
        .tv_nsec = limit_ns % 1000000000ull
    };
    uint64_t t0 = MPII_Tnbc_now_ns();

    *timed_out = 0;
    __atomic_store_n(&engine.helper_asleep, 1, __ATOMIC_SEQ_CST);
    /* last look, after the announcement: what came before it was not signalled. Network
     * events after the arm are not lost: they make net_fd readable. */
    int stop = __atomic_load_n(&engine.stop, __ATOMIC_SEQ_CST);
    int ops = __atomic_load_n(&MPIR_Tnbc_ops_in_flight, __ATOMIC_SEQ_CST) > 0;
    int app_drives = __atomic_load_n(&engine.app_driving, __ATOMIC_SEQ_CST) > 0 &&
        !MPIR_Pageguard_waiting();
    int nothing_for_us = !ops || app_drives;
    int slept = 0;
    /* a thread that began to wait before the announcement did not signal: wake on the data */
    if (limit_ns && MPIR_Pageguard_waiting() > 0)
        with_net = 1;
    if (!stop && (with_net || limit_ns || nothing_for_us)) {
        int rc = ppoll(fds, with_net ? 2 : 1, limit_ns ? &limit : NULL, NULL);
        *timed_out = (rc == 0);
        slept = 1;
    }
    __atomic_store_n(&engine.helper_asleep, 0, __ATOMIC_SEQ_CST);
    if (fds[0].revents & POLLIN)
        drain_wake_fd();
    uint64_t t1 = MPII_Tnbc_now_ns();
    /* only the longest limit counts as a timeout: a lost wake-up would end there */
    MPII_Tnbc_stats_helper_sleep(t1 - t0, *timed_out && limit_ns >= MPII_TNBC_SLEEP_LIMIT_NS);
    /* operations in flight, and we left them to an application thread's progress */
    if (slept && ops && app_drives && !with_net && !limit_ns)
        MPII_Tnbc_stats_helper_deferred(t1 - t0);
    return t1;
}

/* Ask the fair scheduler for a short slice (sched_setattr's sched_runtime, Linux 6.12): a
 * woken thread whose slice is shorter than the running one's preempts it. Returns whether the
 * kernel took it (older kernels accept and ignore it). */
static int request_short_slice(void)
{
    /* the kernel's struct sched_attr, first version (glibc 2.36 has no wrapper, and the kernel
     * header's other definitions clash with glibc's) */
    struct {
        uint32_t size, sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
    } attr;
    if (MPIR_CVAR_TNBC_HELPER_SLICE_US <= 0)
        return 0;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.sched_policy = SCHED_OTHER;
    attr.sched_nice = getpriority(PRIO_PROCESS, 0);
    attr.sched_runtime = (uint64_t) MPIR_CVAR_TNBC_HELPER_SLICE_US * 1000;
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
}

static void *helper_main(void *arg)
{
    uint64_t backoff_ns = 1000, cpu_before = thread_cpu_ns(), data_event_ns = 0;
    uint64_t net_limit_ns = MPII_TNBC_NET_TIMER_NS;
    int timed_out = 0;
    /* a timespec's nanoseconds stay below one second, and a zero limit would mean none */
    const uint64_t max_ns = MPIR_CVAR_TNBC_POLL_MAX_US < 1 ? 1000 :
        MPL_MIN((uint64_t) MPIR_CVAR_TNBC_POLL_MAX_US * 1000, 999999999ull);
    int rescue = 0;

    on_helper = 1;
    /* named for top, perf and the testbed's helper shares (maint/netcluster-cpu) */
    prctl(PR_SET_NAME, "tnbc-helper", 0, 0, 0);
    /* short sleeps must stay short: the default 50 us timer slack would dominate them */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    MPII_Tnbc_stats_helper_slice(request_short_slice());
    while (!__atomic_load_n(&engine.stop, __ATOMIC_SEQ_CST)) {
        int made, net_events, held;
        int app_waited = MPIR_Pageguard_waiting() > 0;
        MPII_helper_next_t next = helper_round(data_event_ns ? data_event_ns :
                                               MPII_Tnbc_now_ns(), &made, &net_events,
                                               &held);
        /* UCX's descriptor does not signal everything (a TCP socket that stays writable while
         * a send is pending raises no new event after an arm), so a timer wakes us too. Like
         * the polling helper's sleep it restarts when a sub-message completes and doubles up
         * to MPIR_CVAR_TNBC_POLL_MAX_US while the network is busy; past that only while the
         * rounds find nothing at all, so idle waits end up sleeping on events alone. */
        if (made) {
            net_limit_ns = MPII_TNBC_NET_TIMER_NS;
            MPII_Tnbc_stats_helper_made(MPII_Tnbc_now_ns());
        } else if (net_events || !timed_out || held)
            net_limit_ns = MPL_MIN(net_limit_ns * 2, max_ns);
        else
            net_limit_ns = MPL_MIN(net_limit_ns * 2, MPII_TNBC_SLEEP_LIMIT_NS);
        timed_out = 0;
        app_waited |= MPIR_Pageguard_waiting() > 0;
        MPII_Tnbc_stats_helper_round(rescue && made);
        rescue = 0;
        data_event_ns = 0;

        uint64_t cpu_now = thread_cpu_ns();
        MPII_Tnbc_stats_helper_cpu(round_kind(made, app_waited), cpu_now - cpu_before);
        switch (next) {
            case MPII_HELPER_SLEEP_NET:
                /* data is streaming (the network had events, no sub-message completed): let
                 * it accumulate for the timer instead of waking for every packet, which cost
                 * the application's work more than it saved -- unless a thread waits for it */
                data_event_ns = helper_sleep(!net_events || MPIR_Pageguard_waiting() > 0,
                                             net_limit_ns, &timed_out);
                rescue = timed_out && net_limit_ns == MPII_TNBC_SLEEP_LIMIT_NS;
                break;
            case MPII_HELPER_SLEEP_OURS:
                helper_sleep(0, 0, &timed_out);
                timed_out = 0;
                net_limit_ns = MPII_TNBC_NET_TIMER_NS;
                break;
            case MPII_HELPER_BACKOFF:{
                    struct timespec ts = {.tv_sec = 0,.tv_nsec = (long) backoff_ns };
                    nanosleep(&ts, NULL);
                    MPII_Tnbc_stats_helper_sleep(backoff_ns, 0);
                    backoff_ns = backoff_ns * 2 > max_ns ? max_ns : backoff_ns * 2;
                    break;
                }
            default:
                backoff_ns = 1000;
                break;
        }
        cpu_before = cpu_now;   /* a sleep's own CPU counts with the round after it */
    }
    MPII_Tnbc_stats_helper_system(thread_system_ns());
    return NULL;
}

/* ---- page-guard callbacks (in the signal handler: async-signal-safe only) ---- */

/* The handler is about to wait for a page. A thread that holds the global lock would wait for
 * a progress engine that needs that lock, and going on without the data would lose it. MPICH's
 * own accesses to application memory are settled once it holds the lock, before it reads them
 * (the bindings' hooks: buffers, arrays, strings, MPI_Start), RMA windows are never guarded,
 * and user callbacks (ops, attribute, generalized-request callbacks, error handlers) run
 * without the lock. What is left is an access these do not foresee: the page guards abort,
 * after this says why (a page of the thread's own stack is given up instead: its frame has
 * returned). */
static void cannot_wait_message(void *addr)
{
    (void) addr;
    static const char msg[] =
        "mpich-tnbc: fatal: a thread inside MPICH touched a buffer of a collective that "
        "returned early before its data arrived; it cannot wait while it holds MPICH's lock. "
        "Read the buffer before, or run with MPIR_CVAR_TNBC_ENABLE=0.\n";
    ssize_t rc = syscall(SYS_write, 2, msg, sizeof(msg) - 1);
    (void) rc;
}

/* a handler run now might wait for data only this thread's lock lets through */
static int may_run_handlers(void)
{
    return !MPII_Tnbc_holds_global_lock();
}

static int before_wait(void *addr)
{
    if (!MPII_Tnbc_holds_global_lock())
        return MPIR_PAGEGUARD_WAIT;
    /* the application's frames, live, are above the MPI routine's; below it, MPICH's */
    uintptr_t app_frames = __atomic_load_n(&MPIR_Tnbc_app_frames, __ATOMIC_RELAXED);
    return (app_frames && (uintptr_t) addr < app_frames) ? MPIR_PAGEGUARD_CANNOT_WAIT_NEW_FRAME :
        MPIR_PAGEGUARD_CANNOT_WAIT;
}

/* ---- start and stop ---- */

static void on_unmap(void *addr, size_t len)
{
    if (__atomic_load_n(&MPIR_Tnbc_ops_in_flight, __ATOMIC_RELAXED)) {
        MPIR_Pageguard_forget_recv(addr, len);
        /* only send pages are left guarded here */
        MPIR_Pageguard_guarded_pages(addr, len, MPIR_PAGEGUARD_TOUCH_WRITE);
    }
}

/* The helper thread. Without one (e.g. a pids limit) collectives keep their schedules but
 * complete inside their calls, so the processes still agree on the messages, and the
 * statistics say why; every launch tries again, as the limit may have been transient.
 * It starts with every asynchronous signal blocked: a signal meant for the process (a timer,
 * SIGINT) would otherwise run the application's handler on the helper, and a handler that
 * reads data still on the way would wait for the only thread that lands it. The signals a
 * fault raises stay open (a fault in our own code must still be reported). */
static void start_helper(void)
{
    static const int synchronous[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
    sigset_t blocked, old;

    if (engine.have_thread)
        return;
    __atomic_store_n(&engine.stop, 0, __ATOMIC_SEQ_CST);
    sigfillset(&blocked);
    for (int i = 0; i < (int) (sizeof(synchronous) / sizeof(synchronous[0])); i++)
        sigdelset(&blocked, synchronous[i]);
    pthread_sigmask(SIG_BLOCK, &blocked, &old);
    engine.have_thread = (pthread_create(&engine.thread, NULL, helper_main, NULL) == 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int MPII_Tnbc_engine_started(void)
{
    return engine.started;
}

static void warn_from_guards(const char *what)
{
    MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "%s", what);
}

static int engine_start(void)
{
    int mpi_errno = MPI_SUCCESS;

    if (engine.started)
        goto fn_exit;
    /* Installed at first use, after the device (UCX) has installed its own handlers: ours
     * chains to them for every fault that is not on a guarded page. */
    MPIR_Pageguard_config_t cfg = {.map_budget = 0,.on_replaced = MPIR_PAGEGUARD_REINSTALL,
        .before_wait = before_wait,.on_abort = cannot_wait_message,.on_wait = wake_helper,
        .may_run_handlers = may_run_handlers,
        .staging_cache = MPIR_CVAR_TNBC_STAGING_CACHE > 0 ? MPIR_CVAR_TNBC_STAGING_CACHE : 0,
        .move_min = MPIR_CVAR_TNBC_LANDING_MOVE_MIN > 0 ? MPIR_CVAR_TNBC_LANDING_MOVE_MIN : 0,
        .pages_replaced = MPID_Tnbc_pages_replaced,
        .warn = warn_from_guards
    };
    int rc = MPIR_Pageguard_init(&cfg);
    if (rc != MPIR_PAGEGUARD_OK && MPIR_Process.rank == 0)
        MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "page guards unavailable (%s): collectives wait in "
                      "the call", MPIR_Pageguard_strerror(rc));
    if (!MPID_Tnbc_watch_unmaps(on_unmap) && MPIR_Process.rank == 0)
        MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "UCX memory events unavailable: do not unmap a "
                      "buffer whose collective is still in flight");
    engine.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    MPIR_ERR_CHKANDJUMP(engine.wake_fd < 0, mpi_errno, MPI_ERR_OTHER, "**fail");
    engine.net_fd = MPIR_CVAR_TNBC_HELPER_WAKEUP ? MPID_Tnbc_event_fd() : -1;
    mpi_errno = MPIR_Progress_hook_register(poll_all, &engine.hook_id);
    MPIR_ERR_CHECK(mpi_errno);
    engine.started = 1;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ---- waiting from an application thread ---- */

/* Rounds without news before a waiting application thread sleeps: short waits (a sub-message
 * on an edge page that is already on its way) stay a spin, long ones (a late peer) sleep. */
#define MPII_TNBC_SPIN_ROUNDS 16

/* An application thread waits for T-NBC inside an MPI call: like the helper, it sleeps on the
 * network (without the global lock) once rounds stop bringing news, instead of spinning for
 * the whole wait as MPICH's blocking calls do. Another thread that completes our operations
 * meanwhile does not wake us, hence the bounded sleep. */
static int app_sleep(uint64_t limit_ns)
{
    struct pollfd fds[2] = {
        {.fd = engine.wake_fd,.events = POLLIN},
        {.fd = engine.net_fd,.events = POLLIN}
    };
    struct timespec limit = {.tv_sec = 0,.tv_nsec = (long) limit_ns };
    int armed = MPID_Tnbc_arm(0);
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    if (armed) {
        uint64_t t0 = MPII_Tnbc_now_ns();
        ppoll(fds, 2, &limit, NULL);
        MPII_Tnbc_stats_app_sleep(MPII_Tnbc_now_ns() - t0);
    }
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    return armed;
}

int MPII_Tnbc_progress_until(int (*cond) (const void *), const void *arg)
{
    int mpi_errno = MPI_SUCCESS, quiet = 0;
    uint64_t sleep_ns = MPII_TNBC_NET_TIMER_NS;     /* grows like the helper's (helper_main) */
    __atomic_add_fetch(&engine.app_driving, 1, __ATOMIC_SEQ_CST);
    while (!cond(arg)) {
        int made;
        unsigned long before = engine.events;
        mpi_errno = MPID_Progress_test(NULL);
        MPIR_ERR_CHECK(mpi_errno);
        if (!engine.hook_active)
            poll_all(&made);
        if (engine.events == before) {
            quiet++;
        } else {
            quiet = 0;
            sleep_ns = MPII_TNBC_NET_TIMER_NS;
        }
        /* sleep only where the lock is really released (held once) */
        if (quiet >= MPII_TNBC_SPIN_ROUNDS && engine.net_fd >= 0 &&
            MPII_Tnbc_holds_global_lock() == 1 && !cond(arg)) {
            if (app_sleep(sleep_ns))
                sleep_ns = MPL_MIN(sleep_ns * 2, MPII_TNBC_APP_SLEEP_LIMIT_MS * 1000000ull);
            quiet = 0;
        } else {
            /* like MPICH's own blocking waits: let other threads (and the helper) in, or
             * threads running collectives on other communicators would wait for each other */
            MPID_THREAD_CS_YIELD(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
        }
    }
  fn_exit:
    if (__atomic_sub_fetch(&engine.app_driving, 1, __ATOMIC_SEQ_CST) == 0 && engine.head)
        wake_helper();  /* it slept while we drove progress */
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The operation being launched is not on the list yet: its progress is news too. */
static int op_done_cond(const void *op)
{
    int made;
    MPII_Tnbc_op_poll((MPII_Tnbc_op_t *) op, &made);
    engine.events += made;
    return MPII_Tnbc_op_is_done(op);
}

static int op_sync_cond(const void *op)
{
    int made;
    MPII_Tnbc_op_poll((MPII_Tnbc_op_t *) op, &made);
    engine.events += made;
    return MPII_Tnbc_op_sync_done(op);
}

/* ---- launch ---- */

/* Whether a call that could return early does (tnbc_gain.h). A collective whose builder knows
 * no call site gets one of its shape here. */
static void choose_return(MPII_Tnbc_start_t * args)
{
    if (args->learn.trace || args->buf.recv_packed || args->ret.small || args->ret.no_helper) {
        args->ret.gain = NULL;
        return;
    }
    if (MPIR_CVAR_TNBC_RETURN != MPIR_CVAR_TNBC_RETURN_adaptive) {
        args->ret.wait = (MPIR_CVAR_TNBC_RETURN == MPIR_CVAR_TNBC_RETURN_wait);
        args->ret.gain = NULL;
        return;
    }
    /* Paced calls return early: only early calls pace, and a site that switched between the
     * two would have its peers' turns and windows wait for calls that do not take them. So do
     * calls that other orders steer (a Bcast's segments): measured, a tree whose processes
     * choose apart hides nothing, one whose processes all return early hides about half. */
    if (args->sched.reports || args->ret.early_only) {
        args->ret.gain = NULL;
        return;
    }
    if (!args->ret.gain) {
        MPIR_Tnbc_site_t *site = MPII_Tnbc_access_site(args->coll, args->comm->local_size,
                                                       args->sched.nrecv_sub,
                                                       args->sched.recv_bytes);
        args->ret.gain = site ? &site->gain : NULL;
    }
    args->ret.wait = args->ret.gain && MPIR_Tnbc_gain_choose(args->ret.gain);
}

/* Start an operation and return early when it may; otherwise wait for it here. On return,
 * *op is NULL, or (recv_packed or trace) the finished operation, which the caller unpacks or
 * traces and frees. */
static int launch_op(MPII_Tnbc_start_t * args, MPII_Tnbc_op_t ** op_out)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_op_t *op = NULL;
    MPII_Tnbc_op_info_t info;
    uint64_t t0 = MPII_Tnbc_now_ns();

    mpi_errno = engine_start();
    MPIR_ERR_CHECK(mpi_errno);
    start_helper();
    args->ret.no_helper = !engine.have_thread;
    MPII_Tnbc_engine_reap();     /* operations freed here report what they cost */
    choose_return(args);
    mpi_errno = MPII_Tnbc_op_start(args, &op);
    if (mpi_errno && op) {
        /* let whatever was posted finish before the buffers go away */
        MPII_Tnbc_progress_until(op_done_cond, op);
    }
    MPIR_ERR_CHECK(mpi_errno);

    MPII_Tnbc_op_info(op, &info);
    int early = (info.outcome == MPIR_TNBC_EARLY);
    mpi_errno = MPII_Tnbc_progress_until(early ? op_sync_cond : op_done_cond, op);
    MPIR_ERR_CHECK(mpi_errno);
    MPII_Tnbc_op_returned(op);
    MPII_Tnbc_stats_outcome(info.coll, info.outcome, info.nsub, info.bytes,
                            MPII_Tnbc_now_ns() - t0);
    if (early && !MPII_Tnbc_op_is_done(op)) {
        add_op(op);
        op = NULL;
    } else {
        MPII_Tnbc_op_info(op, &info);
        MPII_Tnbc_stats_op_done(MPII_Tnbc_now_ns() - info.t_start_ns, info.error);
        if (info.error) {
            mpi_errno = info.error;
            goto fn_fail;
        }
        if (!args->buf.recv_packed && !args->learn.trace) {
            MPII_Tnbc_op_free(op);
            op = NULL;
        }
    }
    /* an earlier operation on this communicator that failed after it returned; a call that
     * hands its operation back (to unpack or trace it) leaves it to the next one */
    if (!op) {
        mpi_errno = MPII_Tnbc_late_error_take(args->comm);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    *op_out = op;
    return mpi_errno;
  fn_fail:
    if (op) {
        MPII_Tnbc_op_free(op);
        op = NULL;
    }
    goto fn_exit;
}

/* Launch, then end the call: unpack a call that waited into a temporary receive space, or
 * guard a trace run's data to see their first touches at the site. */
int MPII_Tnbc_run(MPII_Tnbc_start_t * args, const MPII_Tnbc_launch_t * launch)
{
    MPII_Tnbc_op_t *op = NULL;
    MPII_Tnbc_end_t end = end_of(args);
    int mpi_errno = launch_op(args, &op);
    if (mpi_errno || !op)
        return mpi_errno;
    mpi_errno = end_call(op, launch, &end);
    MPII_Tnbc_op_free(op);
    return mpi_errno;
}

/* The request holds a reference for the caller and one for us (dropped when it completes), and
 * its communicator, whose error handler MPI_Wait calls. Its status is empty: MPICH leaves a
 * reused request object's fields. */
static MPIR_Request *create_request(MPIR_Comm * comm)
{
    MPIR_Request *req = MPIR_Request_create(MPIR_REQUEST_KIND__COLL);
    if (req) {
        MPIR_Status_set_empty(&req->status);
        MPIR_Request_add_ref(req);
        req->comm = comm;
        MPIR_Comm_add_ref(comm);
    }
    return req;
}

int MPII_Tnbc_start_nonblocking(MPII_Tnbc_start_t * args, const MPII_Tnbc_launch_t * launch,
                                MPIR_Request ** request)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_op_t *op = NULL;
    MPII_Tnbc_op_info_t info;
    MPII_Tnbc_call_t *c = MPL_calloc(1, sizeof(*c), MPL_MEM_COLL);
    MPIR_Request *req = NULL;

    MPIR_ERR_CHKANDJUMP(!c, mpi_errno, MPI_ERR_OTHER, "**nomem");
    c->launch = *launch;
    mpi_errno = engine_start();
    MPIR_ERR_CHECK(mpi_errno);
    start_helper();
    args->ret.no_helper = !engine.have_thread;
    MPII_Tnbc_engine_reap();
    choose_return(args);
    c->end = end_of(args);
    mpi_errno = MPII_Tnbc_op_start(args, &op);
    if (mpi_errno && op)
        MPII_Tnbc_progress_until(op_done_cond, op);
    MPIR_ERR_CHECK(mpi_errno);

    MPII_Tnbc_op_info(op, &info);
    MPII_Tnbc_stats_outcome(info.coll, info.outcome, info.nsub, info.bytes,
                            MPII_Tnbc_now_ns() - info.t_start_ns);
    req = create_request(args->comm);
    if (!req) {
        /* the peers expect our messages: let them go, then fail */
        MPII_Tnbc_progress_until(op_done_cond, op);
        MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**nomem");
    }
    c->op = op;
    c->request = req;
    c->early = (info.outcome == MPIR_TNBC_EARLY);
    c->error = MPII_Tnbc_late_error_take(args->comm);
    MPII_Tnbc_op_set_call_pending(op, 1);
    MPII_Tnbc_stats_nonblocking(c->early, c->end.packed);
    add_op(op);
    c->next = engine.calls;
    engine.calls = c;
    *request = req;

  fn_exit:
    return mpi_errno;
  fn_fail:
    if (op)
        MPII_Tnbc_op_free(op);
    if (launch->release)
        launch->release((void *) launch->unpack_ctx);
    MPL_free(c);
    goto fn_exit;
}

/* ---- finalize ---- */

static int no_ops_cond(const void *arg)
{
    return MPIR_Tnbc_ops_in_flight == 0;
}

int MPIR_Tnbc_finalize_drain(void)
{
    int mpi_errno = MPI_SUCCESS;

    if (!MPIR_Tnbc_enabled)
        goto fn_exit;
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    mpi_errno = MPII_Tnbc_progress_until(no_ops_cond, NULL);
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    /* operations still in flight keep their helper and pages (a reader must not wait forever) */
    MPIR_ERR_CHECK(mpi_errno);

    if (engine.started) {
        __atomic_store_n(&engine.stop, 1, __ATOMIC_SEQ_CST);
        wake_helper();
        if (engine.have_thread)
            pthread_join(engine.thread, NULL);
        engine.have_thread = 0;
        MPIR_Progress_hook_deregister(engine.hook_id);
    }
    /* MPI_Finalize holds no lock, and the device still runs threaded here; freeing an operation
     * may free its communicator (attribute callbacks expect the lock) */
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    free_retired();
    MPII_Tnbc_late_error_drop(NULL);
    mpi_errno = MPII_Tnbc_stats_reduce_and_print(MPII_Tnbc_policy.stats);
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    MPII_Tnbc_node_finalize();
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPII_Tnbc_engine_finalize(void)
{
    if (engine.started) {
        MPIR_Pageguard_finalize();
        close(engine.wake_fd);
        engine.wake_fd = -1;
        engine.started = 0;
    }
    return MPI_SUCCESS;
}
