/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Hooks of the T-NBC family (transparent non-blocking collectives) that the generated MPI
 * bindings call, see maint/patches. A collective that returned early still owns pieces of its
 * buffers; before an MPI routine lets MPICH read or write user memory, the sub-messages that
 * overlap it are completed ("settled"), so MPICH never faults on a page guard while it holds
 * the global lock. With no early-returned collective in flight and no trace buffer held every
 * hook is two loads. */

#ifndef MPIR_TNBC_H_INCLUDED
#define MPIR_TNBC_H_INCLUDED

/* MPIR_CVAR_TNBC_ENABLE as MPI_Init found it: whether blocking collectives are offered to
 * T-NBC (maint/patches: the generated MPIR_<Coll>). A later MPI_T write does not change it:
 * the buffers T-NBC holds must be settled by it, and every process must make the same
 * choice. */
extern int MPIR_Tnbc_enabled;

/* Collectives in flight in this process; changed and read under the global lock. */
extern int MPIR_Tnbc_ops_in_flight;
/* Trace and sample buffers kept guarded for their first touches (their data is there). */
extern int MPIR_Tnbc_regions_held;
/* Some user buffer still has T-NBC's guards: the one test of every settle hook (relaxed
 * loads: ROMIO's hook tests it before it takes the lock). */
#define MPIR_TNBC_OWNS_BUFFERS()                                                \
    (__atomic_load_n(&MPIR_Tnbc_ops_in_flight, __ATOMIC_RELAXED) ||             \
     __atomic_load_n(&MPIR_Tnbc_regions_held, __ATOMIC_RELAXED))

/* Set by the binding of a blocking collective, consumed by MPIR_Tnbc_<Coll>: MPICH's own calls
 * of MPIR_<Coll> (communicator creation, ...) read their results at once and are declined. */
extern MPL_TLS int MPIR_Tnbc_user_coll;
/* and where the application called it from (call sites of access orders, tnbc_access.c) */
extern MPL_TLS const void *MPIR_Tnbc_user_caller;

/* Read by the page-guard handler: no lazy allocation of this thread's copy. */
#define MPIR_TNBC_TLS_SIGNAL_SAFE __attribute__ ((tls_model("initial-exec")))
/* Where the application's frames end on this thread's stack: the frame of the MPI routine it
 * is in (the bindings are exported functions, never inlined into the application). A fault
 * under MPICH's lock below it is on a frame pushed since (the buffer's frame has returned: its
 * page is given up); at or above it, on a live one (the process aborts rather than drop data).
 * A binding restores the caller's value on exit, for MPI calls made from user callbacks. The
 * fence keeps the note before the binding's accesses to user memory. */
extern MPL_TLS uintptr_t MPIR_Tnbc_app_frames MPIR_TNBC_TLS_SIGNAL_SAFE;
#define MPIR_TNBC_APP_FRAMES_DECL \
    uintptr_t tnbc_outer_app_frames = __atomic_load_n(&MPIR_Tnbc_app_frames, __ATOMIC_RELAXED)
#define MPIR_TNBC_NOTE_APP_FRAMES()                                             \
    do {                                                                        \
        __atomic_store_n(&MPIR_Tnbc_app_frames, (uintptr_t) __builtin_frame_address(0), \
                         __ATOMIC_RELAXED);                                     \
        __atomic_signal_fence(__ATOMIC_SEQ_CST);                                \
    } while (0)
#define MPIR_TNBC_RESTORE_APP_FRAMES() \
    __atomic_store_n(&MPIR_Tnbc_app_frames, tnbc_outer_app_frames, __ATOMIC_RELAXED)

int MPIR_Tnbc_settle_buf(const void *buf, MPI_Aint count, MPI_Datatype datatype);
int MPIR_Tnbc_settle_range(const void *addr, size_t len);
/* The same, for ROMIO (patch 0016): its MPI-IO routines are not generated bindings */
int MPIR_Ext_tnbc_settle_buf(const void *buf, MPI_Aint count, MPI_Datatype datatype);
/* Arrays with one element per process of the group (the remote group of an intercommunicator)
 * or of the local group only, or per in- or out-neighbour of the communicator's topology */
enum {
    MPIR_TNBC_ARRAY_GROUP,
    MPIR_TNBC_ARRAY_LOCAL_GROUP,
    MPIR_TNBC_ARRAY_IN_NEIGHBORS,
    MPIR_TNBC_ARRAY_OUT_NEIGHBORS
};
int MPIR_Tnbc_settle_comm_array(const void *array, size_t elem_size, MPIR_Comm * comm_ptr,
                                int which);
int MPIR_Tnbc_settle_all(void);
int MPIR_Tnbc_settle_comm(MPIR_Comm * comm_ptr);
int MPIR_Tnbc_settle_requests(int count, MPIR_Request * const *requests);
int MPIR_Tnbc_finalize_drain(void);
/* Collective over COMM_WORLD, once it exists: whether every process could install the libc
 * hooks and has device support (T-NBC is off for the job otherwise), and the node's segment
 * for node arbitration. */
int MPIR_Tnbc_world_init(void);

#define MPIR_TNBC_SETTLE_BUF(buf_, count_, datatype_)                           \
    do {                                                                        \
        if (unlikely(MPIR_TNBC_OWNS_BUFFERS())) {                               \
            mpi_errno = MPIR_Tnbc_settle_buf(buf_, count_, datatype_);          \
            MPIR_ERR_CHECK(mpi_errno);                                          \
        }                                                                       \
    } while (0)

#define MPIR_TNBC_SETTLE_ALL()                                                  \
    do {                                                                        \
        if (unlikely(MPIR_TNBC_OWNS_BUFFERS())) {                               \
            mpi_errno = MPIR_Tnbc_settle_all();                                 \
            MPIR_ERR_CHECK(mpi_errno);                                          \
        }                                                                       \
    } while (0)

/* Always: operations the helper finished still hold the communicator until they are freed,
 * and its delete callbacks must run inside MPI_Comm_free. */
#define MPIR_TNBC_SETTLE_COMM(comm_ptr_)                                        \
    do {                                                                        \
        mpi_errno = MPIR_Tnbc_settle_comm(comm_ptr_);                           \
        MPIR_ERR_CHECK(mpi_errno);                                              \
    } while (0)

/* Array (and fixed-size string) arguments, before the argument checks read them, and scalar
 * outputs (handles, flags, statuses) before MPICH stores them under its lock: n elements */
#define MPIR_TNBC_SETTLE_ARRAY(array_, n_)                                      \
    do {                                                                        \
        if (unlikely(MPIR_TNBC_OWNS_BUFFERS()) && (n_) > 0) {                   \
            mpi_errno = MPIR_Tnbc_settle_range(array_, (size_t) (n_) * sizeof(*(array_))); \
            MPIR_ERR_CHECK(mpi_errno);                                          \
        }                                                                       \
    } while (0)

#define MPIR_TNBC_SETTLE_COMM_ARRAY(array_, comm_ptr_, which_)                  \
    do {                                                                        \
        if (unlikely(MPIR_TNBC_OWNS_BUFFERS())) {                               \
            mpi_errno = MPIR_Tnbc_settle_comm_array(array_, sizeof(*(array_)), comm_ptr_, \
                                                    which_);                    \
            MPIR_ERR_CHECK(mpi_errno);                                          \
        }                                                                       \
    } while (0)

/* Persistent and partitioned requests about to start or send: their buffers */
#define MPIR_TNBC_SETTLE_REQUESTS(count_, requests_)                            \
    do {                                                                        \
        if (unlikely(MPIR_TNBC_OWNS_BUFFERS())) {                               \
            mpi_errno = MPIR_Tnbc_settle_requests(count_, requests_);           \
            MPIR_ERR_CHECK(mpi_errno);                                          \
        }                                                                       \
    } while (0)

/* Around a user callback that MPICH runs under its lock (error handlers): without the lock,
 * as MPICH runs other user callbacks, so that the callback may wait for a buffer of a
 * collective that returned early. begin returns what end needs. */
int MPIR_Tnbc_callback_begin(void);
void MPIR_Tnbc_callback_end(int released);

/* Persistent collectives (maint/patches: the generated MPIR_<Coll>_init, MPI_Start): the call's
 * arguments are kept with its request, and every MPI_Start offers the call to T-NBC as a
 * nonblocking one; a declined start runs MPICH's schedule. Kept beside the argument struct:
 * copies of the arrays (the binding's converted counts are gone after the call) and references
 * on the datatypes and ops, of the arguments that are significant on this process. */
typedef enum {
    MPIR_TNBC_ARG_SENDBUF, MPIR_TNBC_ARG_RECVBUF, MPIR_TNBC_ARG_ROOT,   /* where they are */
    MPIR_TNBC_ARG_TYPE, MPIR_TNBC_ARG_OP, MPIR_TNBC_ARG_AINTS, MPIR_TNBC_ARG_TYPES
} MPIR_Tnbc_arg_kind_t;
typedef enum {
    MPIR_TNBC_LEN_COMM, MPIR_TNBC_LEN_INDEGREE, MPIR_TNBC_LEN_OUTDEGREE
} MPIR_Tnbc_arg_len_t;
typedef enum {
    MPIR_TNBC_SIDE_NONE, MPIR_TNBC_SIDE_SEND, MPIR_TNBC_SIDE_RECV
} MPIR_Tnbc_arg_side_t;
typedef struct {
    size_t offset;              /* in the argument struct */
    MPIR_Tnbc_arg_kind_t kind;
    MPIR_Tnbc_arg_len_t len;    /* arrays: one element per process or neighbour */
    MPIR_Tnbc_arg_side_t side;  /* ignored where this side's buffer is MPI_IN_PLACE */
    int root_only;              /* significant at the root only */
} MPIR_Tnbc_arg_t;
/* Start the kept call as MPIR_Tnbc_<Coll> would a nonblocking one. */
typedef int (*MPIR_Tnbc_persist_start_t) (const void *args, MPIR_Comm * comm,
                                          MPIR_Request ** request, int *handled);
struct MPIR_Tnbc_persist;
/* Kept only where the call asserts that every process starts the communicator's persistent
 * collectives in the same order (info key mpi_assert_strict_persistent_collective_ordering,
 * MPI-4.1): each start draws its tags then, as MPICH's schedules draw theirs at init. */
int MPIR_Tnbc_persist_attach(MPIR_Request * preq, MPIR_Info * info,
                             MPIR_Tnbc_persist_start_t start, const void *args, size_t size,
                             const MPIR_Tnbc_arg_t * kept, int nkept);
/* *handled: T-NBC started the call (preq's real request is T-NBC's) */
int MPIR_Tnbc_persist_start(MPIR_Request * preq, int *handled);
void MPIR_Tnbc_persist_free(MPIR_Request * preq);

/* An error T-NBC met before it declined a nonblocking call or a persistent start, whose MPICH
 * schedule has started: the communicator's next T-NBC call reports it. */
void MPIR_Tnbc_error_later(MPIR_Comm * comm, int error);

/* In the binding, inlined into MPI_<Coll>: the return address is the application's. */
#define MPIR_TNBC_MARK_USER_COLL() \
    (MPIR_Tnbc_user_coll = 1, MPIR_Tnbc_user_caller = __builtin_return_address(0))

#endif /* MPIR_TNBC_H_INCLUDED */
