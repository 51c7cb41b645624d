/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Operations (tnbc_op.c): a schedule bound to buffers; knows nothing of the engine. What a
 * builder fills in for one call, and what the engine asks of an operation. */

#ifndef TNBC_OP_H_INCLUDED
#define TNBC_OP_H_INCLUDED

#include "tnbc_policy.h"
#include "tnbc_sched.h"
#include "tnbc_priority.h"

/* Called when a completed operation is freed: learn from what its work space received. */
typedef void (*MPII_Tnbc_on_done_t) (MPIR_Tnbc_site_t * site, const MPIR_Tnbc_sched_t * sched,
                                      const char *work);

/* Where a call's bytes are (the builder's layout). */
typedef struct {
    void *recv_user;            /* user address of receive offset 0 (contiguous layout) */
    const void *send_user;      /* user address of send offset 0 (contiguous layout) */
    void *send_packed;          /* or: an already packed send space (malloc'd, taken over) */
    int recv_packed;            /* receive into a temporary buffer (caller unpacks) */
    MPI_Datatype reduce_type;   /* REDUCE entries: builtin type and op */
    MPI_Op reduce_op;
} MPII_Tnbc_buffers_t;

/* How the call site learns the application's access order (tnbc_access.c). */
typedef struct {
    int trace;                  /* a trace run or a sample: complete in the call, then guard
                                 * the data for its first touches */
    int sample;                 /* the trace is a sample (online learning) */
    MPIR_Tnbc_site_t *site;     /* learn this site's access order from the faults (or NULL) */
    MPII_Tnbc_on_done_t on_done;        /* with site: learn from the work space too */
} MPII_Tnbc_learning_t;

/* What node arbitration knows of a pairwise layout's urgency (tnbc_node.c). */
typedef struct {
    const int *access_pos;      /* position of source rank p's block in the access order, here
                                 * and (we assume) at every receiver; NULL: unknown */
    const int *send_urgency;    /* where peer p reads our block (0 first, -1 unknown); NULL:
                                 * access_pos instead */
} MPII_Tnbc_urgency_t;

/* Whether the call returns early or waits (tnbc_gain.h; launch decides). */
typedef struct {
    int small;                  /* this process's pieces are below the threshold */
    MPIR_Tnbc_gain_t *gain;     /* the call site's record of what returning early cost, or
                                 * NULL (launch finds the site) */
    int wait;                   /* wait in the call: returning early does not pay here */
    int early_only;             /* access orders steer this call across processes, which pays
                                 * only when they all return early: no per-site choice */
    int no_helper;              /* no helper thread: complete in the call (launch sets it) */
} MPII_Tnbc_return_t;

/* What a form's build fills in for MPII_Tnbc_run (and on to MPII_Tnbc_op_start). */
typedef struct {
    MPIR_Tnbc_coll_t coll;
    MPIR_Comm *comm;
    MPIR_Errflag_t errflag;     /* raised by the caller's earlier stages: our messages say so */
    MPIR_Tnbc_sched_t sched;    /* finished; the operation takes it over */
    MPII_Tnbc_buffers_t buf;
    MPII_Tnbc_learning_t learn;
    MPII_Tnbc_urgency_t arb;
    MPII_Tnbc_return_t ret;
    int started;                /* MPII_Tnbc_op_start ran: the peers hear from this call
                                 * (its messages, or its withdrawal) */
} MPII_Tnbc_start_t;

typedef struct MPII_Tnbc_op MPII_Tnbc_op_t;

int MPII_Tnbc_op_start(MPII_Tnbc_start_t * args, MPII_Tnbc_op_t ** op);
int MPII_Tnbc_op_poll(MPII_Tnbc_op_t * op, int *made_progress);
int MPII_Tnbc_op_is_done(const MPII_Tnbc_op_t * op);
int MPII_Tnbc_op_sync_done(const MPII_Tnbc_op_t * op);
int MPII_Tnbc_op_free(MPII_Tnbc_op_t * op);
/* The call that started op returns now (what it cost the caller is measured from here). */
void MPII_Tnbc_op_returned(MPII_Tnbc_op_t * op);
/* A nonblocking call's caller begins to wait for op (the first time counts). */
void MPII_Tnbc_op_wait_began(MPII_Tnbc_op_t * op);

/* What the engine and the statistics know of an operation. */
typedef struct {
    MPIR_Tnbc_coll_t coll;
    MPIR_Comm *comm;
    MPIR_Tnbc_outcome_t outcome;
    int nsub;                   /* schedule entries */
    size_t bytes;               /* sent + received */
    uint64_t t_start_ns;
    int error;                  /* an MPI error seen so far */
    int error_reported;         /* ... and already told to the application */
} MPII_Tnbc_op_info_t;
void MPII_Tnbc_op_info(const MPII_Tnbc_op_t * op, MPII_Tnbc_op_info_t * info);
/* The error went to the application with the call (a nonblocking call's request). */
void MPII_Tnbc_op_error_reported(MPII_Tnbc_op_t * op);
/* A nonblocking call's request is not complete (1) or is (0): until then the engine keeps the
 * operation, done or not. */
void MPII_Tnbc_op_set_call_pending(MPII_Tnbc_op_t * op, int pending);
int MPII_Tnbc_op_call_pending(const MPII_Tnbc_op_t * op);
/* The link of the engine's list of operations in flight. */
MPII_Tnbc_op_t **MPII_Tnbc_op_link(MPII_Tnbc_op_t * op);
/* The schedule of a finished operation (MPII_Tnbc_run traces by it). */
const MPIR_Tnbc_sched_t *MPII_Tnbc_op_sched(const MPII_Tnbc_op_t * op);
/* The operation held bodies back in its last poll (node arbitration or its window). */
int MPII_Tnbc_op_held(const MPII_Tnbc_op_t * op);
/* The temporary receive space of a call that waited with recv_packed (the caller unpacks). */
void *MPII_Tnbc_op_packed_recv(const MPII_Tnbc_op_t * op);

#endif /* TNBC_OP_H_INCLUDED */
