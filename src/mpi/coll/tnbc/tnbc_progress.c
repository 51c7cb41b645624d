/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Progress of early-returned collectives.
 *
 * The operations in flight form one list, touched only under MPICH's global lock. They advance
 * whenever MPICH progresses (a progress hook, active while the list is non-empty: the
 * application's own MPI_Wait or MPI_Test moves them too) and in a helper thread that takes the
 * global lock like MPICH's async progress thread does. The helper must not steal a core from
 * the application: after a round without news it sleeps, doubling the sleep up to
 * MPIR_CVAR_TNBC_POLL_MAX_US; a thread waiting in the page-guard handler makes it poll without
 * sleeping, as that thread has nothing else to do. T-NBC raises the thread level to
 * MPI_THREAD_MULTIPLE (maint/patches) so the lock is real even for MPI_THREAD_SINGLE. */

#include "mpiimpl.h"
#include "tnbc_impl.h"

#include "mpir_ext.h"    /* MPIR_Err_get_string */

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_POLL_MAX_US
      category    : TNBC
      type        : int
      default     : 200
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Longest sleep of the T-NBC helper thread between two progress rounds that found nothing
        new, in microseconds. The sleep starts at 1 us and doubles. Longer sleeps take less CPU
        from the application but leave the network idle longer when a step finishes.

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

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

int MPIR_Tnbc_ops_in_flight;
MPL_TLS int MPIR_Tnbc_user_coll;

static struct {
    int started;
    MPII_Tnbc_op_t *head;
    MPII_Tnbc_op_t *retired;    /* done on the helper, freed by an application thread */
    int hook_id;
    int hook_active;
    unsigned long events;       /* completions seen: the helper's sign of news */

    pthread_t thread;
    pthread_mutex_t wake_lock;
    pthread_cond_t wake;
    int stop;
    int app_waiting;            /* application threads driving progress in progress_until */
    uint64_t polls, sleeps, system_ns;
    uint64_t cpu_ns[MPII_TNBC_HELPER_CPU_COUNT];
} engine = {
    .wake_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

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
        engine.retired = op->next;
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

uint64_t MPII_Tnbc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void unlink_op(MPII_Tnbc_op_t * op)
{
    for (MPII_Tnbc_op_t ** p = &engine.head; *p; p = &(*p)->next) {
        if (*p == op) {
            *p = op->next;
            break;
        }
    }
    __atomic_sub_fetch(&MPIR_Tnbc_ops_in_flight, 1, __ATOMIC_RELAXED);
    if (MPIR_Tnbc_ops_in_flight == 0 && engine.hook_active) {
        MPIR_Progress_hook_deactivate(engine.hook_id);
        engine.hook_active = 0;
    }
}

static void report_late_error(MPII_Tnbc_op_t * op)
{
    char msg[MPI_MAX_ERROR_STRING];
    MPIR_Err_get_string(op->error, msg, MPI_MAX_ERROR_STRING, NULL);
    fprintf(stderr, "[tnbc %d] %s failed after it returned early: %s\n", MPIR_Process.rank,
            MPIR_Tnbc_coll_name(op->coll), msg);
}

/* Progress hook: advance every operation, retire the finished detached ones. */
static int poll_all(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_op_t *op = engine.head, *next;

    *made_progress = 0;
    if (!on_helper)
        free_retired();
    for (; op; op = next) {
        int made = 0;
        next = op->next;
        mpi_errno = MPII_Tnbc_op_poll(op, &made);
        if (made) {
            *made_progress = 1;
            engine.events++;
        }
        if (op->detached && MPII_Tnbc_op_is_done(op)) {
            MPII_Tnbc_stats_op_done(MPII_Tnbc_now_ns() - op->t_start_ns, op->error);
            if (op->error)
                report_late_error(op);
            unlink_op(op);
            if (on_helper) {
                op->next = engine.retired;
                engine.retired = op;
            } else {
                MPII_Tnbc_op_free(op);
            }
        }
    }
    /* an error of an early-returned operation cannot reach its (returned) call; it was
     * reported above and its pages were released */
    return MPI_SUCCESS;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    return (uint64_t) cpu.tv_sec * 1000000000ull + cpu.tv_nsec;
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

/* The kernel's part of this thread's CPU time: the network stack, mprotect, landing. */
static uint64_t thread_system_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (uint64_t) ru.ru_stime.tv_sec * 1000000000ull + ru.ru_stime.tv_usec * 1000ull;
}

static void *helper_main(void *arg)
{
    uint64_t sleep_ns = 1000, cpu_before = thread_cpu_ns();
    const uint64_t max_ns = (uint64_t) MPIR_CVAR_TNBC_POLL_MAX_US * 1000;

    on_helper = 1;
    /* short sleeps must stay short: the default 50 us timer slack would dominate them */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    while (1) {
        pthread_mutex_lock(&engine.wake_lock);
        while (!engine.stop && __atomic_load_n(&MPIR_Tnbc_ops_in_flight, __ATOMIC_RELAXED) == 0)
            pthread_cond_wait(&engine.wake, &engine.wake_lock);
        int stop = engine.stop;
        pthread_mutex_unlock(&engine.wake_lock);
        if (stop)
            break;

        int app_waited = MPIR_Pageguard_waiting() > 0;
        MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
        app_waited |= engine.app_waiting > 0;
        unsigned long before = engine.events;
        int made = 0;
        if (engine.head) {
            MPID_Progress_test(NULL);
            poll_all(&made);
        }
        made |= (engine.events != before);
        engine.polls++;
        MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);

        /* only a thread in the fault handler needs us; one waiting in an MPI call polls
         * itself (progress_until), so the helper backs off as when idle */
        int faulted = MPIR_Pageguard_waiting() > 0;
        app_waited |= faulted;
        if (made || faulted) {
            sleep_ns = 1000;
            if (!made)
                sched_yield();
        } else {
            struct timespec ts = {.tv_sec = 0,.tv_nsec = (long) sleep_ns };
            nanosleep(&ts, NULL);
            engine.sleeps++;
            sleep_ns = sleep_ns * 2 > max_ns ? max_ns : sleep_ns * 2;
        }
        uint64_t cpu_now = thread_cpu_ns();
        engine.cpu_ns[round_kind(made, app_waited)] += cpu_now - cpu_before;
        cpu_before = cpu_now;
    }
    engine.system_ns = thread_system_ns();
    return NULL;
}

/* The handler is about to wait for a page. A thread that holds the global lock would wait for
 * a progress engine that needs that lock. MPICH itself never reads or writes an application
 * buffer of a pending collective (the settle hooks in the bindings complete those first), so
 * such an access comes from the allocator reusing memory the application freed before its
 * data came (malloc writing its bookkeeping into a freed chunk during a free() of MPICH's):
 * the data is no longer wanted there, and the page is given up instead of waited for. It is
 * counted in the statistics ("pages freed before their data came"). */
static int before_wait(void *addr)
{
    if (!MPIR_ThreadInfo.isThreaded || MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX.count <= 0)
        return MPIR_PAGEGUARD_WAIT;
    MPL_thread_id_t self, owner = MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX.owner;
    int same = 0;
    MPL_thread_self(&self);
    MPL_thread_same(&self, &owner, &same);
    (void) addr;
    return same ? MPIR_PAGEGUARD_FORGET : MPIR_PAGEGUARD_WAIT;
}

int MPII_Tnbc_engine_start(void)
{
    int mpi_errno = MPI_SUCCESS;

    if (engine.started)
        goto fn_exit;
    /* Installed at first use, after the device (UCX) has installed its own handlers: ours
     * chains to them for every fault that is not on a guarded page. */
    MPIR_Pageguard_config_t cfg = {.map_budget = 0,.on_replaced = MPIR_PAGEGUARD_REINSTALL,
        .before_wait = before_wait,
        .staging_cache = MPIR_CVAR_TNBC_STAGING_CACHE > 0 ? MPIR_CVAR_TNBC_STAGING_CACHE : 0
    };
    int rc = MPIR_Pageguard_init(&cfg);
    if (rc != MPIR_PAGEGUARD_OK && MPIR_Process.rank == 0)
        fprintf(stderr, "[tnbc] page guards unavailable (%s): collectives wait in the call\n",
                MPIR_Pageguard_strerror(rc));
    if (!MPII_Tnbc_watch_unmaps() && MPIR_Process.rank == 0)
        fprintf(stderr, "[tnbc] UCX memory events unavailable: do not unmap a buffer whose "
                "collective is still in flight\n");
    mpi_errno = MPIR_Progress_hook_register(poll_all, &engine.hook_id);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP(pthread_create(&engine.thread, NULL, helper_main, NULL) != 0,
                        mpi_errno, MPI_ERR_OTHER, "**fail");
    engine.started = 1;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPII_Tnbc_engine_add(MPII_Tnbc_op_t * op)
{
    op->detached = 1;
    op->next = engine.head;
    engine.head = op;
    if (!engine.hook_active) {
        MPIR_Progress_hook_activate(engine.hook_id);
        engine.hook_active = 1;
    }
    pthread_mutex_lock(&engine.wake_lock);
    __atomic_add_fetch(&MPIR_Tnbc_ops_in_flight, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&engine.wake);
    pthread_mutex_unlock(&engine.wake_lock);
}

/* Drive progress from the calling thread (which holds the global lock) until cond() holds. */
static int progress_until(int (*cond) (const void *), const void *arg)
{
    int mpi_errno = MPI_SUCCESS;
    engine.app_waiting++;
    while (!cond(arg)) {
        int made;
        mpi_errno = MPID_Progress_test(NULL);
        MPIR_ERR_CHECK(mpi_errno);
        if (!engine.hook_active)
            poll_all(&made);
        /* like MPICH's own blocking waits: let other threads (and the helper) in, or threads
         * running collectives on other communicators would wait for each other's lock */
        MPID_THREAD_CS_YIELD(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    }
  fn_exit:
    engine.app_waiting--;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int op_done_cond(const void *op)
{
    const MPII_Tnbc_op_t *o = op;
    int made;
    MPII_Tnbc_op_poll((MPII_Tnbc_op_t *) o, &made);
    return MPII_Tnbc_op_is_done(o);
}

static int op_sync_cond(const void *op)
{
    int made;
    MPII_Tnbc_op_poll((MPII_Tnbc_op_t *) op, &made);
    return MPII_Tnbc_op_sync_done(op);
}

int MPII_Tnbc_wait_op(MPII_Tnbc_op_t * op, int sync_only)
{
    return progress_until(sync_only ? op_sync_cond : op_done_cond, op);
}

/* An MPI call waits here for T-NBC pieces its buffers overlap before it touches them; the
 * waits are counted (a call that returned early is followed by one that must wait). */
static int settle_until(int (*cond) (const void *), const void *arg)
{
    if (cond(arg))
        return MPI_SUCCESS;
    uint64_t t0 = MPII_Tnbc_now_ns();
    int mpi_errno = progress_until(cond, arg);
    MPII_Tnbc_stats_settle(MPII_Tnbc_now_ns() - t0);
    return mpi_errno;
}

typedef struct {
    const void *addr;
    size_t len;
} range_t;

static int range_clear_cond(const void *arg)
{
    const range_t *r = arg;
    return MPIR_Pageguard_guarded_pages(r->addr, r->len, MPIR_PAGEGUARD_COUNT) == 0;
}

int MPII_Tnbc_settle_range(const void *addr, size_t len)
{
    range_t r = {.addr = addr,.len = len };
    if (!MPIR_Tnbc_ops_in_flight || len == 0)
        return MPI_SUCCESS;
    return settle_until(range_clear_cond, &r);
}

int MPIR_Tnbc_settle_buf(const void *buf, MPI_Aint count, MPI_Datatype datatype)
{
    MPI_Aint true_lb, true_extent, extent;

    if (buf == MPI_IN_PLACE || count <= 0 || datatype == MPI_DATATYPE_NULL)
        return MPI_SUCCESS;
    /* an argument the routine ignores (e.g. recvtype at a non-root) need not be a valid
     * handle: do not look it up, settle everything instead */
    if (HANDLE_GET_MPI_KIND(datatype) != MPIR_DATATYPE ||
        HANDLE_GET_KIND(datatype) == HANDLE_KIND_INVALID)
        return MPIR_Tnbc_settle_all();
    MPIR_Type_get_true_extent_impl(datatype, &true_lb, &true_extent);
    MPIR_Datatype_get_extent_macro(datatype, extent);
    /* span of count elements: from the lowest to the highest byte the type map can touch */
    MPI_Aint lo = true_lb + (extent < 0 ? (count - 1) * extent : 0);
    MPI_Aint span = true_extent + (count - 1) * (extent < 0 ? -extent : extent);
    return MPII_Tnbc_settle_range((const char *) buf + lo, (size_t) span);
}

static int no_ops_cond(const void *arg)
{
    return MPIR_Tnbc_ops_in_flight == 0;
}

int MPIR_Tnbc_settle_all(void)
{
    return settle_until(no_ops_cond, NULL);
}

static int comm_clear_cond(const void *comm)
{
    for (MPII_Tnbc_op_t * op = engine.head; op; op = op->next)
        if (op->comm == comm)
            return 0;
    return 1;
}

int MPIR_Tnbc_settle_comm(MPIR_Comm * comm_ptr)
{
    int mpi_errno = settle_until(comm_clear_cond, comm_ptr);
    /* finished operations hold the communicator too: let it go with the application's free */
    free_retired();
    return mpi_errno;
}

int MPIR_Tnbc_finalize_drain(void)
{
    int mpi_errno = MPI_SUCCESS;

    if (!MPIR_CVAR_TNBC_ENABLE)
        goto fn_exit;
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    mpi_errno = MPIR_Tnbc_settle_all();
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    MPIR_ERR_CHECK(mpi_errno);

    if (engine.started) {
        pthread_mutex_lock(&engine.wake_lock);
        engine.stop = 1;
        pthread_cond_signal(&engine.wake);
        pthread_mutex_unlock(&engine.wake_lock);
        pthread_join(engine.thread, NULL);
        MPIR_Progress_hook_deregister(engine.hook_id);
        MPII_Tnbc_stats_helper(engine.cpu_ns, engine.system_ns, engine.polls, engine.sleeps);
    }
    /* MPI_Finalize holds no lock, and the device still runs threaded here; freeing an operation
     * may free its communicator (attribute callbacks expect the lock) */
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    free_retired();
    mpi_errno = MPII_Tnbc_stats_reduce_and_print();
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
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
        engine.started = 0;
    }
    return MPI_SUCCESS;
}
