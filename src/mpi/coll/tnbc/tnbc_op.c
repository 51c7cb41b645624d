/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* One T-NBC operation: a schedule bound to its buffers, its communicator and a tag of its own.
 * Start decides locally how the buffers are held (page guards, copy, or plain when the call
 * waits), posts what can go, and leaves the rest to MPII_Tnbc_op_poll, which the engine
 * (tnbc_engine.c) calls under the global lock. An operation knows nothing of the engine: it
 * posts point-to-point messages and hands finished sub-messages to the page guards. */

#include "mpiimpl.h"
#include "tnbc_op.h"
#include "tnbc_entry.h"
#include "tnbc_flow.h"
#include "tnbc_stats.h"
#include "tnbc_util.h"
#include "tnbc_withdraw.h"
#include "mpir_pageguard.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_SEND_COPY_MAX
      category    : TNBC
      type        : int
      default     : 262144
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        A collective that returns early copies a send buffer of at most this many bytes and
        makes a larger one read-only until its data has left (a write to it then waits). The
        default is where a copy (about 0.23 ms/MiB here) starts to cost more than the guard
        (about 45 us/MiB for the two mprotect calls); see README.tnbc.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

typedef enum {
    MPII_TNBC_RECV_NONE,        /* nothing to receive */
    MPII_TNBC_RECV_GUARDED,     /* user buffer behind page guards: data lands from staging */
    MPII_TNBC_RECV_PLAIN,       /* straight into the user buffer; the call waits */
    MPII_TNBC_RECV_PACKED       /* into a temporary buffer; the caller waits and unpacks */
} MPII_Tnbc_recv_mode_t;

typedef enum {
    MPII_TNBC_SEND_NONE,
    MPII_TNBC_SEND_GUARDED,     /* user buffer read-only until sent; edge pieces copied */
    MPII_TNBC_SEND_COPY,        /* private copy */
    MPII_TNBC_SEND_PLAIN        /* straight from the user buffer; the call waits */
} MPII_Tnbc_send_mode_t;

struct MPII_Tnbc_op {
    struct MPII_Tnbc_op *next;  /* the engine's list (MPII_Tnbc_op_link) */
    MPIR_Tnbc_coll_t coll;
    MPIR_Comm *comm;
    int *tags;                  /* the schedule's tags; tags[0] names the operation */
    MPIR_Tnbc_sched_t sched;
    MPIR_Request **req;         /* per entry */
    unsigned char *state;       /* per entry: MPII_TNBC_ENTRY_* */
    int ndone;
    MPIR_Tnbc_outcome_t outcome;

    MPII_Tnbc_recv_mode_t recv_mode;
    char *recv_user, *recv_base, *recv_tmp;
    MPIR_Pageguard_region_t *recv_region;

    MPII_Tnbc_send_mode_t send_mode;
    const char *send_user;
    char *send_copy;            /* COPY: the sub-messages (copy_send_subs) or the packed send
                                 * space; GUARDED: edge pieces */
    const char **send_src;      /* per send sub-message: where its bytes are read */
    int *send_left;             /* per send sub-message: sends still running */
    MPIR_Pageguard_region_t *send_region;

    char *work;                 /* the schedule's work space */
    MPI_Datatype reduce_type;
    MPI_Op reduce_op;

    int error;                  /* an MPI error code seen after the call returned */
    int error_reported;         /* error went out with the call's request: no late error */
    int call_pending;           /* a nonblocking call whose request is not complete: the
                                 * engine keeps the operation until it is */
    MPIR_Errflag_t errflag;     /* MPICH's: raised by the caller, a peer's message or a failed
                                 * message of ours; every later send carries it */
    uint64_t t_start_ns, t_return_ns;
    uint64_t t_wait_ns;         /* a nonblocking call: when its caller began to wait (0: at
                                 * the start, as a blocking call) */
    uint64_t t_done_ns;         /* when the last entry completed (0: not yet) */
    uint64_t t_first_data_ns;   /* when the first receive completed (0: not yet, or none) */
    uint64_t setup_ns;          /* spent guarding and copying before the first message */
    uint64_t blocked_at_start;  /* MPII_Tnbc_stats_blocked_ns() when we started */
    MPIR_Tnbc_gain_t *gain;     /* told what this call cost the application, when freed */
    MPIR_Tnbc_site_t *site;     /* learns from our faults when we are freed */
    MPII_Tnbc_on_done_t on_done;        /* and from our work space, if we completed */

    MPII_Tnbc_flow_t flow;      /* when a body may go */
};

enum { MPII_TNBC_ENTRY_IDLE, MPII_TNBC_ENTRY_POSTED, MPII_TNBC_ENTRY_DONE };

/* Where offset off of a space is. The send space is read through its sub-message's source
 * (the user buffer, or a copy of the pieces on unguarded pages). */
static char *space_at(const MPII_Tnbc_op_t * op, MPIR_Tnbc_space_t space, size_t off, int sub)
{
    switch (space) {
        case MPIR_TNBC_SPACE_RECV:
            return op->recv_base + off;
        case MPIR_TNBC_SPACE_WORK:
            return op->work + off;
        default:
            if (sub >= 0)
                return (char *) op->send_src[sub] + (off - op->sched.send_sub_off[sub]);
            return (char *) op->send_user + off;
    }
}

/* The entry reads a send sub-message: that sub stays guarded or copied until it is done. */
static int reads_send_sub(const MPIR_Tnbc_entry_t * e)
{
    return e->sub >= 0 && !MPIR_Tnbc_entry_fills_recv(e);
}

/* Self copies that can go straight into the user's receive pages before they are guarded:
 * per receive sub-message, where its bytes are (NULL: not so). None when something reads the
 * receive space later (it would find staging empty there) or the send space overlaps the
 * receive buffer. Returns NULL when there is none (or no memory). */
static const void **self_fill(MPII_Tnbc_op_t * op, MPII_Tnbc_start_t * args, int reads_recv)
{
    MPIR_Tnbc_sched_t *s = &op->sched;
    const char *send = args->buf.send_packed ? args->buf.send_packed : args->buf.send_user;
    const char *lo = args->buf.recv_user, *hi = lo + s->recv_bytes;
    const void **fill = NULL;

    if (!send || reads_recv)
        return NULL;
    for (int i = 0; i < s->n; i++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        /* the page guards copy the whole sub-message: the entry must be all of it */
        if (!MPIR_Tnbc_sched_is_first_self_copy(s, i) || e->len == 0 ||
            e->off != s->recv_sub_off[e->sub] || e->len != s->recv_sub_len[e->sub] ||
            (send + e->src_off < hi && send + e->src_off + e->len > lo))
            continue;
        if (!fill && !(fill = MPL_calloc(s->nrecv_sub, sizeof(*fill), MPL_MEM_COLL)))
            return NULL;
        fill[e->sub] = send + e->src_off;
    }
    return fill;
}

/* The self copies given to the page guards are done. */
static void self_filled(MPII_Tnbc_op_t * op, const void **fill)
{
    MPIR_Tnbc_sched_t *s = &op->sched;
    for (int i = 0; i < s->n; i++) {
        if (MPIR_Tnbc_sched_is_first_self_copy(s, i) && fill[s->entries[i].sub] &&
            op->state[i] == MPII_TNBC_ENTRY_IDLE) {
            op->state[i] = MPII_TNBC_ENTRY_DONE;
            op->ndone++;
        }
    }
}

/* Receive side: guard the user's pages when this process may return early. */
static void setup_recv(MPII_Tnbc_op_t * op, MPII_Tnbc_start_t * args, int want_early)
{
    MPIR_Tnbc_sched_t *s = &op->sched;

    if (s->nrecv_sub == 0 || s->recv_bytes == 0) {
        op->recv_mode = MPII_TNBC_RECV_NONE;
        return;
    }
    if (args->buf.recv_packed) {
        op->recv_mode = MPII_TNBC_RECV_PACKED;
        op->recv_base = op->recv_tmp = MPL_malloc(s->recv_bytes, MPL_MEM_COLL);
        return;
    }
    op->recv_user = args->buf.recv_user;
    if (want_early) {
        int reads_recv = MPIR_Tnbc_sched_reads_recv(s);
        const void **fill = self_fill(op, args, reads_recv);
        /* staging may give its pages away when nothing reads it after landing */
        int flags = reads_recv ? 0 : MPIR_PAGEGUARD_MOVE;
        int rc = MPIR_Pageguard_register_filled(op->recv_user, s->recv_bytes, s->nrecv_sub,
                                                s->recv_sub_off, s->recv_sub_len, fill,
                                                MPIR_PAGEGUARD_RECV, flags, &op->recv_region);
        if (rc == MPIR_PAGEGUARD_OK && fill)
            self_filled(op, fill);
        MPL_free(fill);
        if (rc == MPIR_PAGEGUARD_OK) {
            op->recv_mode = MPII_TNBC_RECV_GUARDED;
            op->recv_base = MPIR_Pageguard_staging(op->recv_region);
            return;
        }
        op->outcome = (rc == MPIR_PAGEGUARD_ERR_NOTHING) ? MPIR_TNBC_SYNC_NO_PAGE :
            (rc == MPIR_PAGEGUARD_ERR_PROT) ? MPIR_TNBC_SYNC_PROT :
            (rc == MPIR_PAGEGUARD_ERR_EXPOSED) ? MPIR_TNBC_SYNC_WINDOW : MPIR_TNBC_SYNC_GUARD;
    }
    op->recv_mode = MPII_TNBC_RECV_PLAIN;
    op->recv_base = op->recv_user;
}

typedef struct {
    size_t off;
    int sub;
} MPII_piece_t;

static int piece_cmp(const void *a, const void *b)
{
    size_t x = ((const MPII_piece_t *) a)->off, y = ((const MPII_piece_t *) b)->off;
    return (x > y) - (x < y);
}

/* Copy the send sub-messages, and nothing between them: displacements or a datatype may skip
 * memory that cannot be read (a guard page, an unmapped range between MPI_BOTTOM-relative
 * pieces). Overlapping sub-messages share their copy. Entries that read the send space without
 * naming a sub-message run before the call returns (tnbc_sched.h) and keep the user's buffer. */
static int copy_send_subs(MPII_Tnbc_op_t * op)
{
    int mpi_errno = MPI_SUCCESS;
    const MPIR_Tnbc_sched_t *s = &op->sched;
    int n = s->nsend_sub;
    MPII_piece_t *pieces = MPL_malloc(n * sizeof(*pieces), MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!pieces, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int k = 0; k < n; k++)
        pieces[k] = (MPII_piece_t) {.off = s->send_sub_off[k],.sub = k };
    qsort(pieces, n, sizeof(*pieces), piece_cmp);

    /* the union of the sub-messages' ranges, once: its size, then the copy */
    size_t bytes = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        size_t lo = MPL_MAX(pieces[i].off, hi), end = pieces[i].off +
            s->send_sub_len[pieces[i].sub];
        bytes += end > lo ? end - lo : 0;
        hi = MPL_MAX(hi, end);
    }
    op->send_copy = MPL_malloc(bytes + 1, MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!op->send_copy, mpi_errno, MPI_ERR_OTHER, "**nomem");
    char *at = op->send_copy;   /* where the byte at offset run_lo of the send space went */
    size_t run_lo = 0;
    hi = 0;
    for (int i = 0; i < n; i++) {
        int k = pieces[i].sub;
        size_t off = pieces[i].off, end = off + s->send_sub_len[k];
        if (i == 0 || off > hi) {       /* a new run of overlapping pieces */
            at += hi - run_lo;
            run_lo = off;
            hi = off;
        }
        if (end > hi) {
            memcpy(at + (hi - run_lo), op->send_user + hi, end - hi);
            hi = end;
        }
        op->send_src[k] = at + (off - run_lo);
    }
    op->send_mode = MPII_TNBC_SEND_COPY;

  fn_exit:
    MPL_free(pieces);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Send side, once we know whether the call returns early. */
static int setup_send(MPII_Tnbc_op_t * op, MPII_Tnbc_start_t * args, int early)
{
    MPIR_Tnbc_sched_t *s = &op->sched;
    int n = s->nsend_sub;

    if (args->buf.send_packed) {
        op->send_mode = MPII_TNBC_SEND_COPY;
        op->send_copy = args->buf.send_packed;
        args->buf.send_packed = NULL;
        op->send_user = op->send_copy;
    } else if (s->send_bytes == 0 || !args->buf.send_user) {
        op->send_mode = MPII_TNBC_SEND_NONE;
    } else {
        op->send_user = args->buf.send_user;
        op->send_mode = MPII_TNBC_SEND_PLAIN;
    }
    op->send_src = MPL_calloc(n + 1, sizeof(char *), MPL_MEM_COLL);
    op->send_left = MPL_calloc(n + 1, sizeof(int), MPL_MEM_COLL);
    if (!op->send_src || !op->send_left)
        return MPI_ERR_NO_MEM;
    for (int k = 0; k < n; k++)
        op->send_src[k] = op->send_user + s->send_sub_off[k];
    for (int i = 0; i < s->n; i++)
        if (reads_send_sub(&s->entries[i]))
            op->send_left[s->entries[i].sub]++;

    /* with no send sub-message only self copies read the send space, before we return */
    if (!early || op->send_mode != MPII_TNBC_SEND_PLAIN || n == 0)
        return MPI_SUCCESS;

    /* Returning early with the user's send buffer: guard it read-only when large, else copy. */
    if (s->send_bytes > (size_t) MPIR_CVAR_TNBC_SEND_COPY_MAX &&
        MPIR_Tnbc_sched_send_subs_disjoint(s) &&
        MPIR_Pageguard_register((void *) op->send_user, s->send_bytes, n, s->send_sub_off,
                                s->send_sub_len, MPIR_PAGEGUARD_SEND, 0,
                                &op->send_region) == MPIR_PAGEGUARD_OK) {
        /* a piece no message reads (a lone process's Bcast) is done already: guarded, it
         * would stay so until the operation is freed, which only an application thread does */
        for (int k = 0; k < n; k++)
            if (op->send_left[k] == 0)
                MPIR_Pageguard_complete(op->send_region, k);
        /* pieces on the unguarded edge pages may change after we return: copy them now */
        size_t edge = 0;
        for (int k = 0; k < n; k++)
            if (MPIR_Pageguard_sub_is_sync(op->send_region, k))
                edge += s->send_sub_len[k];
        op->send_copy = MPL_malloc(edge + 1, MPL_MEM_COLL);
        if (!op->send_copy)
            return MPI_ERR_NO_MEM;
        edge = 0;
        for (int k = 0; k < n; k++) {
            if (!MPIR_Pageguard_sub_is_sync(op->send_region, k))
                continue;
            memcpy(op->send_copy + edge, op->send_src[k], s->send_sub_len[k]);
            op->send_src[k] = op->send_copy + edge;
            edge += s->send_sub_len[k];
        }
        op->send_mode = MPII_TNBC_SEND_GUARDED;
        return MPI_SUCCESS;
    }
    return copy_send_subs(op);
}

/* Our order reports: where we read each peer's block (-1: not known); the peers' slots read
 * -1 until theirs arrive (ours never does). */
static void fill_reports(MPII_Tnbc_op_t * op, const int *access_pos)
{
    int n = op->comm->local_size;
    for (int p = 0; p < n; p++) {
        int32_t pos = access_pos ? access_pos[p] : -1, none = -1;
        memcpy(op->work + MPIR_Tnbc_report_out_off(p), &pos, sizeof(pos));
        memcpy(op->work + MPIR_Tnbc_report_in_off(n, p), &none, sizeof(none));
    }
}

/* After an error: entries that were never posted never will be. Give them up, so that waiting
 * for the operation ends once the posted ones are done. Their sub-messages do not complete (no
 * data lands); freeing the operation lifts their guards, and the error stays recorded. */
static void abandon_unposted(MPII_Tnbc_op_t * op)
{
    MPII_Tnbc_flow_abandon(&op->flow);
    if (!op->state) {
        op->ndone = op->sched.n;
        return;
    }
    for (int i = 0; i < op->sched.n; i++) {
        if (op->state[i] == MPII_TNBC_ENTRY_IDLE) {
            op->state[i] = MPII_TNBC_ENTRY_DONE;
            op->ndone++;
        }
    }
}

/* Every process draws the same tags: collectives start in the same order everywhere, and
 * the count is the schedule's, which every process computes alike. Drawn last, once nothing
 * can fail before the first message; until then a failure withdraws the call instead. */
static int draw_tags(MPII_Tnbc_op_t * op)
{
    int mpi_errno = MPI_SUCCESS;

    for (int i = 0; i < MPL_MAX(op->sched.ntags, 1); i++) {
        mpi_errno = MPIR_Sched_next_tag(op->comm, &op->tags[i]);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* What the operation needs before its first message, all of it, so that nothing fails after
 * the peers were told to expect us. */
static int allocate(MPII_Tnbc_op_t * op)
{
    int mpi_errno = MPI_SUCCESS;
    int n = op->sched.n;

    MPIR_ERR_CHKANDJUMP(MPII_Tnbc_fault_injected(MPII_TNBC_FAULT_AFTER_SCHEDULE), mpi_errno,
                        MPI_ERR_OTHER, "**nomem");
    op->tags = MPL_malloc(MPL_MAX(op->sched.ntags, 1) * sizeof(int), MPL_MEM_COLL);
    op->req = MPL_calloc(n + 1, sizeof(MPIR_Request *), MPL_MEM_COLL);
    op->state = MPL_calloc(n + 1, 1, MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!op->tags || !op->req || !op->state, mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    if (op->sched.work_bytes) {
        op->work = MPL_malloc(op->sched.work_bytes, MPL_MEM_COLL);
        MPIR_ERR_CHKANDJUMP(!op->work, mpi_errno, MPI_ERR_OTHER, "**nomem");
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPII_Tnbc_op_start(MPII_Tnbc_start_t * args, MPII_Tnbc_op_t ** op_out)
{
    int mpi_errno = MPI_SUCCESS, drawn = 0;
    MPII_Tnbc_op_t *op = MPL_calloc(1, sizeof(*op), MPL_MEM_COLL);
    args->started = 1;
    MPIR_ERR_CHKANDJUMP(!op, mpi_errno, MPI_ERR_OTHER, "**nomem");

    op->coll = args->coll;
    op->comm = args->comm;
    op->errflag = args->errflag;
    MPIR_Comm_add_ref(op->comm);
    op->sched = args->sched;
    MPIR_Tnbc_sched_init(&args->sched);
    op->reduce_type = args->buf.reduce_type;
    op->reduce_op = args->buf.reduce_op;
    op->t_start_ns = MPII_Tnbc_now_ns();
    op->site = args->learn.site;
    op->on_done = args->learn.on_done;
    op->outcome = MPIR_TNBC_EARLY;
    if (args->learn.trace)
        op->outcome = args->learn.sample ? MPIR_TNBC_SYNC_SAMPLE : MPIR_TNBC_SYNC_TRACE;
    else if (args->buf.recv_packed)
        op->outcome = MPIR_TNBC_SYNC_PACKED;
    else if (args->ret.small)
        op->outcome = MPIR_TNBC_SYNC_SMALL;
    else if (args->ret.no_helper)
        op->outcome = MPIR_TNBC_SYNC_NO_HELPER;
    else if (args->ret.wait)
        op->outcome = MPIR_TNBC_SYNC_NO_GAIN;
    op->gain = args->ret.gain;
    op->blocked_at_start = MPII_Tnbc_stats_blocked_ns();

    mpi_errno = allocate(op);
    MPIR_ERR_CHECK(mpi_errno);
    if (op->work && op->sched.reports)
        fill_reports(op, args->arb.access_pos);
    uint64_t t_setup = MPII_Tnbc_now_ns();
    setup_recv(op, args, op->outcome == MPIR_TNBC_EARLY);
    MPIR_ERR_CHKANDJUMP(op->recv_mode == MPII_TNBC_RECV_PACKED && !op->recv_tmp, mpi_errno,
                        MPI_ERR_OTHER, "**nomem");
    int early = (op->outcome == MPIR_TNBC_EARLY);
    if (setup_send(op, args, early) != MPI_SUCCESS) {
        /* no memory for a copy: send from the user buffer and wait */
        MPIR_ERR_CHKANDJUMP(!op->send_src || !op->send_left, mpi_errno, MPI_ERR_OTHER,
                            "**nomem");
        op->outcome = MPIR_TNBC_SYNC_NOMEM;
    }
    drawn = 1;  /* a failure while drawing cannot be withdrawn: the counter moved */
    mpi_errno = draw_tags(op);
    MPIR_ERR_CHECK(mpi_errno);
    MPII_Tnbc_flow_start_t flow_start = {
        .early = (op->outcome == MPIR_TNBC_EARLY),
        .tag = op->tags[0],
        .pos = args->arb.access_pos ? args->arb.access_pos[op->comm->rank] : -1,
        .urgency = args->arb.send_urgency,
        .pace_bytes = MPII_Tnbc_policy.pace_bytes
    };
    MPII_Tnbc_flow_init(&op->flow, &op->sched, op->comm, &flow_start);
    op->setup_ns = MPII_Tnbc_now_ns() - t_setup;

    int made;
    mpi_errno = MPII_Tnbc_op_poll(op, &made);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    *op_out = op;
    return mpi_errno;
  fn_fail:
    if (!drawn) {
        /* no message went: make the peers' calls fail too */
        int err = MPII_Tnbc_withdraw(args->comm, args->coll, op ? &op->sched : &args->sched,
                                     mpi_errno);
        MPIR_ERR_ADD(mpi_errno, err);
    }
    if (op) {
        if (!op->error)
            op->error = mpi_errno;      /* nothing learnt from an operation that never ran */
        abandon_unposted(op);
    }
    goto fn_exit;
}

/* The data could not be landed or its pages opened (the landing write failed, mprotect ran out
 * of kernel mappings): a reader must not wait for ever, and must not take what it finds for
 * the result. Every page is opened and the operation fails (tnbc_engine.c reports it). */
static void guard_failed(MPII_Tnbc_op_t * op, MPIR_Pageguard_region_t * region, int rc)
{
    MPIR_Pageguard_open_all(region);
    if (!op->error)
        op->error = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                         MPI_ERR_OTHER, "**fail", "**fail %s",
                                         MPIR_Pageguard_strerror(rc));
}

/* A receive (or self copy) filled receive sub-message k (an empty receive fills none). */
static void recv_sub_done(MPII_Tnbc_op_t * op, int k)
{
    int rc;
    if (k >= 0 && op->recv_mode == MPII_TNBC_RECV_GUARDED &&
        (rc = MPIR_Pageguard_complete(op->recv_region, k)) != MPIR_PAGEGUARD_OK)
        guard_failed(op, op->recv_region, rc);
}

static void send_done(MPII_Tnbc_op_t * op, int k)
{
    if (k < 0)
        return;
    int rc;
    if (--op->send_left[k] == 0 && op->send_mode == MPII_TNBC_SEND_GUARDED &&
        (rc = MPIR_Pageguard_complete(op->send_region, k)) != MPIR_PAGEGUARD_OK)
        guard_failed(op, op->send_region, rc);
}

/* What a completed message tells the operation, as MPIC_Wait tells MPICH's algorithms: its
 * own failure, or a peer's error bit in its tag. Either is the operation's error, and raises
 * the errflag its later messages carry (down a tree, to the processes below). */
static void message_done(MPII_Tnbc_op_t * op, MPIR_Request * req)
{
    MPIR_Errflag_t before = op->errflag;
    int err = req->status.MPI_ERROR;
    if (err != MPI_SUCCESS && !op->errflag)
        op->errflag = MPII_Tnbc_errflag_of(err);
    if (req->kind == MPIR_REQUEST_KIND__RECV)
        MPIR_Process_status(&req->status, &op->errflag);
    if (op->error)
        return;
    if (err != MPI_SUCCESS)
        op->error = err;
    else if (before == MPIR_ERR_NONE && op->errflag == MPIR_ERR_PROC_FAILED)
        MPIR_ERR_SET(op->error, MPIX_ERR_PROC_FAILED, "**coll_fail");
    else if (before == MPIR_ERR_NONE && op->errflag == MPIR_ERR_OTHER)
        MPIR_ERR_SET(op->error, MPI_ERR_OTHER, "**coll_fail");
}

static int post_entry(MPII_Tnbc_op_t * op, int i)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_entry_t *e = &op->sched.entries[i];

    char *at = space_at(op, e->space, e->off, reads_send_sub(e) ? e->sub : -1);
    const char *src = space_at(op, e->src_space, e->src_off, reads_send_sub(e) ? e->sub : -1);

    switch (e->kind) {
        case MPIR_TNBC_RECV:
            mpi_errno = MPIC_Irecv(at, e->len, MPI_BYTE, e->peer, op->tags[e->tag], op->comm,
                                   &op->req[i]);
            break;
        case MPIR_TNBC_SEND:
            /* a report completes once matched: the body before it was delivered */
            if (MPII_Tnbc_flow_sync_send(&op->flow, i))
                mpi_errno = MPIC_Issend(at, e->len, MPI_BYTE, e->peer, op->tags[e->tag],
                                        op->comm, &op->req[i], &op->errflag);
            else
                mpi_errno = MPIC_Isend(at, e->len, MPI_BYTE, e->peer, op->tags[e->tag],
                                       op->comm, &op->req[i], &op->errflag);
            break;
        case MPIR_TNBC_COPY:
            memcpy(at, src, e->len);
            break;
        case MPIR_TNBC_REDUCE:
            mpi_errno = MPIR_Reduce_local(src, at, e->len / op->sched.elem, op->reduce_type,
                                          op->reduce_op);
            break;
    }
    MPIR_ERR_CHECK(mpi_errno);
    op->state[i] = MPII_TNBC_ENTRY_POSTED;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static void entry_done(MPII_Tnbc_op_t * op, int i)
{
    MPIR_Tnbc_entry_t *e = &op->sched.entries[i];
    op->state[i] = MPII_TNBC_ENTRY_DONE;
    if (++op->ndone == op->sched.n)
        op->t_done_ns = MPII_Tnbc_now_ns();
    if (e->kind == MPIR_TNBC_RECV && !op->t_first_data_ns)
        op->t_first_data_ns = MPII_Tnbc_now_ns();
    MPII_Tnbc_flow_done(&op->flow, i);
    if (MPIR_Tnbc_entry_fills_recv(e))
        recv_sub_done(op, e->sub);
    else
        send_done(op, e->sub);
}

int MPII_Tnbc_op_poll(MPII_Tnbc_op_t * op, int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Tnbc_sched_t *s = &op->sched;

    *made_progress = 0;
    if (MPII_Tnbc_op_is_done(op))
        return MPI_SUCCESS;     /* also one abandoned before its entries had state */
    MPII_Tnbc_flow_begin_poll(&op->flow);
    for (int j = 0; j < s->n; j++) {
        int i = s->order[j];
        MPIR_Tnbc_entry_t *e = &s->entries[i];
        if (op->state[i] == MPII_TNBC_ENTRY_IDLE) {
            if ((e->after >= 0 && op->state[e->after] != MPII_TNBC_ENTRY_DONE) ||
                (e->after2 >= 0 && op->state[e->after2] != MPII_TNBC_ENTRY_DONE) ||
                (e->prev_peer >= 0 && op->state[e->prev_peer] == MPII_TNBC_ENTRY_IDLE) ||
                !MPII_Tnbc_flow_may_post(&op->flow, i))
                continue;
            mpi_errno = post_entry(op, i);
            MPIR_ERR_CHECK(mpi_errno);
            *made_progress = 1;
            MPII_Tnbc_flow_posted(&op->flow, i);
            if (e->kind == MPIR_TNBC_COPY || e->kind == MPIR_TNBC_REDUCE) {
                entry_done(op, i);
                continue;
            }
        }
        if (op->state[i] == MPII_TNBC_ENTRY_POSTED && MPIR_Request_is_complete(op->req[i])) {
            message_done(op, op->req[i]);
            MPIR_Request_free(op->req[i]);
            op->req[i] = NULL;
            entry_done(op, i);
            *made_progress = 1;
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    if (!op->error)
        op->error = mpi_errno;
    abandon_unposted(op);
    goto fn_exit;
}

int MPII_Tnbc_op_is_done(const MPII_Tnbc_op_t * op)
{
    return op->ndone == op->sched.n;
}

/* Everything the application may see before the call returns: the sub-messages on pages we
 * could not guard. */
int MPII_Tnbc_op_sync_done(const MPII_Tnbc_op_t * op)
{
    const MPIR_Tnbc_sched_t *s = &op->sched;
    if (op->recv_mode != MPII_TNBC_RECV_GUARDED)
        return MPII_Tnbc_op_is_done(op) || op->outcome == MPIR_TNBC_EARLY;
    for (int i = 0; i < s->n; i++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        if (MPIR_Tnbc_entry_fills_recv(e) && op->state[i] != MPII_TNBC_ENTRY_DONE &&
            MPIR_Pageguard_sub_is_sync(op->recv_region, e->sub))
            return 0;
    }
    return 1;
}

/* The order in which the application touched blocks that had not arrived yet. */
static void learn_from_faults(MPII_Tnbc_op_t * op)
{
    MPIR_Tnbc_sched_t *s = &op->sched;
    int nb = op->site->key.nblocks;
    int *block = MPL_malloc((s->nrecv_sub + 1) * sizeof(int), MPL_MEM_COLL);
    int *touch = MPL_calloc(nb + 1, sizeof(int), MPL_MEM_COLL);
    if (block && touch) {
        MPIR_Tnbc_sched_recv_sub_blocks(s, block);
        for (int k = 0; k < s->nrecv_sub; k++) {
            int order, b = block[k];
            uint64_t t;
            MPIR_Pageguard_first_touch(op->recv_region, k, &order, &t);
            if (order > 0 && b >= 0 && b < nb && (touch[b] == 0 || order < touch[b]))
                touch[b] = order;
        }
        MPIR_Tnbc_site_observe(op->site, touch, 0);
    }
    MPL_free(block);
    MPL_free(touch);
}

void MPII_Tnbc_op_returned(MPII_Tnbc_op_t * op)
{
    op->t_return_ns = MPII_Tnbc_now_ns();
}

void MPII_Tnbc_op_wait_began(MPII_Tnbc_op_t * op)
{
    if (!op->t_wait_ns) {
        op->t_wait_ns = MPII_Tnbc_now_ns();
        op->blocked_at_start = MPII_Tnbc_stats_blocked_ns();
    }
}

/* An early call, judged against itself (tnbc_gain.h): what the application saw of it (its time
 * in the call and blocked on the data afterwards: faults, settling calls, any operation's, until
 * this one is freed at the next collective's start) against what waiting would have cost (the
 * time to completion, without the guarding and copying that only an early call does); the time
 * before any data came is left out of both. A nonblocking call is judged from when its caller
 * began to wait for it: the work before is overlap either way. */
static void note_gain(const MPII_Tnbc_op_t * op)
{
    if (!op->gain || op->error || !op->t_return_ns || !MPII_Tnbc_op_is_done(op) ||
        op->outcome != MPIR_TNBC_EARLY)
        return;
    uint64_t from = MPL_MAX(op->t_wait_ns, op->t_start_ns);
    uint64_t visible = op->t_return_ns - from + MPII_Tnbc_stats_blocked_ns() -
        op->blocked_at_start;
    uint64_t done = op->t_done_ns ? op->t_done_ns : op->t_return_ns;
    uint64_t messages = done > from ? done - from : 0;
    uint64_t setup = from == op->t_start_ns ? op->setup_ns : 0;
    uint64_t ready = MPL_MAX(op->t_start_ns + op->setup_ns, from);
    uint64_t idle = op->t_first_data_ns > ready ? op->t_first_data_ns - ready : 0;
    MPIR_Tnbc_gain_note_early(op->gain, visible, messages > setup ? messages - setup : 0, idle);
}

int MPII_Tnbc_op_free(MPII_Tnbc_op_t * op)
{
    note_gain(op);
    MPII_Tnbc_flow_free(&op->flow);
    if (op->recv_region && op->site)
        learn_from_faults(op);
    if (op->on_done && op->site && !op->error && MPII_Tnbc_op_is_done(op))
        op->on_done(op->site, &op->sched, op->work);
    if (op->recv_region)
        MPIR_Pageguard_unregister(op->recv_region);
    if (op->send_region)
        MPIR_Pageguard_unregister(op->send_region);
    for (int i = 0; i < op->sched.n; i++)
        if (op->req && op->req[i])
            MPIR_Request_free(op->req[i]);
    MPL_free(op->recv_tmp);
    MPL_free(op->work);
    MPL_free(op->tags);
    MPL_free(op->send_copy);
    MPL_free(op->send_src);
    MPL_free(op->send_left);
    MPL_free(op->req);
    MPL_free(op->state);
    MPIR_Tnbc_sched_free(&op->sched);
    MPIR_Comm_release(op->comm);
    MPL_free(op);
    return MPI_SUCCESS;
}

void MPII_Tnbc_op_info(const MPII_Tnbc_op_t * op, MPII_Tnbc_op_info_t * info)
{
    info->coll = op->coll;
    info->comm = op->comm;
    info->outcome = op->outcome;
    info->nsub = op->sched.n;
    info->bytes = op->sched.send_bytes + op->sched.recv_bytes;
    info->t_start_ns = op->t_start_ns;
    info->error = op->error;
    info->error_reported = op->error_reported;
}

void MPII_Tnbc_op_error_reported(MPII_Tnbc_op_t * op)
{
    op->error_reported = 1;
}

void MPII_Tnbc_op_set_call_pending(MPII_Tnbc_op_t * op, int pending)
{
    op->call_pending = pending;
}

int MPII_Tnbc_op_call_pending(const MPII_Tnbc_op_t * op)
{
    return op->call_pending;
}

MPII_Tnbc_op_t **MPII_Tnbc_op_link(MPII_Tnbc_op_t * op)
{
    return &op->next;
}

const MPIR_Tnbc_sched_t *MPII_Tnbc_op_sched(const MPII_Tnbc_op_t * op)
{
    return &op->sched;
}

int MPII_Tnbc_op_held(const MPII_Tnbc_op_t * op)
{
    return MPII_Tnbc_flow_held(&op->flow);
}

void *MPII_Tnbc_op_packed_recv(const MPII_Tnbc_op_t * op)
{
    return op->recv_tmp;
}
