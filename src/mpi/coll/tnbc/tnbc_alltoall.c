/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Alltoall, Alltoallv and Alltoallw, and the pairwise engine the gather family and the
 * neighbour collectives share (tnbc_gather.c, tnbc_neighbor.c):
 * every pair exchanges at most one piece, in ring order (tnbc_sched.c). Contiguous buffers are
 * used in place (the receive buffer behind page guards); a derived datatype, MPI_IN_PLACE or
 * receive ranges that overlap are packed into private buffers, and a packed receive waits in
 * the call and unpacks. The wire protocol is the same in every case, so processes may choose
 * differently. */

#include "mpiimpl.h"
#include "reorder_merge.h"
#include "tnbc_access.h"
#include "tnbc_entry.h"
#include "tnbc_op.h"
#include "tnbc_pairwise.h"
#include "tnbc_stats.h"
#include "tnbc_util.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_RECV_ORDER
      category    : TNBC
      type        : boolean
      default     : false
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Post the receive bodies of an Alltoall(v) in the access order instead of ring order.
        Off by default: when every process reads in the same order, they all pull from the
        same sender first and leave the other links idle (an FT-like kernel was about 10%
        slower on 4 nodes x 2 ranks); the order steers node arbitration either way.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* Peer p's piece of one side: its datatype and where it starts, in bytes from side->buf. */
static MPI_Datatype piece_type(const MPII_Tnbc_side_t * side, int p)
{
    return side->types ? side->types[p] : side->type;
}

static MPI_Aint piece_off(const MPII_Tnbc_side_t * side, int p)
{
    MPI_Aint extent;
    if (side->types)
        return side->displs[p];
    MPIR_Datatype_get_extent_macro(side->type, extent);
    return side->displs[p] * extent;
}

/* Lowest and highest byte the pieces of a side touch, relative to its buffer. */
static void side_span(const MPII_Tnbc_side_t * side, int n, MPI_Aint * lo, MPI_Aint * hi)
{
    int first = 1;
    *lo = 0;
    *hi = 0;
    for (int p = 0; p < n; p++) {
        MPI_Aint true_lb, true_extent, extent, c = side->counts[p];
        if (c <= 0)
            continue;
        MPI_Datatype type = piece_type(side, p);
        MPIR_Type_get_true_extent_impl(type, &true_lb, &true_extent);
        MPIR_Datatype_get_extent_macro(type, extent);
        MPI_Aint a = piece_off(side, p) + true_lb + MPL_MIN(0, (c - 1) * extent);
        MPI_Aint b = piece_off(side, p) + true_lb + true_extent + MPL_MAX(0, (c - 1) * extent);
        if (first || a < *lo)
            *lo = a;
        if (first || b > *hi)
            *hi = b;
        first = 0;
    }
}

static int side_is_flat(const MPII_Tnbc_side_t * side, int n)
{
    if (!side->types)
        return MPII_Tnbc_is_flat(side->type);
    for (int p = 0; p < n; p++)
        if (side->counts[p] > 0 && !MPII_Tnbc_is_flat(side->types[p]))
            return 0;
    return 1;
}

static int settle_side(const MPII_Tnbc_side_t * side, int n)
{
    MPI_Aint lo, hi;
    if (side->buf == MPI_IN_PLACE)
        return MPI_SUCCESS;
    side_span(side, n, &lo, &hi);
    return MPIR_Tnbc_settle_range((const char *) side->buf + lo, (size_t) (hi - lo));
}

int MPII_Tnbc_settle_v(const void *buf, const MPI_Aint counts[], const MPI_Aint displs[],
                       MPI_Datatype type, int n)
{
    MPII_Tnbc_side_t side = {.buf = buf,.counts = counts,.displs = displs,.type = type };
    return settle_side(&side, n);
}

static int same_as_previous(const MPII_Tnbc_side_t * side, int p)
{
    return p > 0 && side->counts[p] > 0 && side->counts[p] == side->counts[p - 1] &&
        side->displs[p] == side->displs[p - 1] && piece_type(side, p) == piece_type(side, p - 1);
}

/* Pack each peer's piece of a side one after the other into a new buffer. */
static int pack_side(const MPII_Tnbc_side_t * side, int n, const size_t * bytes, size_t * off,
                     char **packed)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint actual;
    size_t total = 0;

    for (int p = 0; p < n; p++) {
        /* the same piece for consecutive peers (Allgather) is packed once */
        if (same_as_previous(side, p)) {
            off[p] = off[p - 1];
            continue;
        }
        off[p] = total;
        total += bytes[p];
    }
    *packed = MPL_malloc(total + 1, MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!*packed, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int p = 0; p < n; p++) {
        if (!bytes[p] || same_as_previous(side, p))
            continue;
        mpi_errno = MPIR_Typerep_pack((const char *) side->buf + piece_off(side, p),
                                      side->counts[p], piece_type(side, p), 0, *packed + off[p],
                                      bytes[p], &actual);
        MPIR_ERR_CHECK(mpi_errno);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int unpack_side(const char *packed, const MPII_Tnbc_side_t * side, int n,
                       const size_t * bytes, const size_t * off)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint actual;

    for (int p = 0; p < n; p++) {
        if (!bytes[p])
            continue;
        mpi_errno = MPIR_Typerep_unpack(packed + off[p], bytes[p],
                                        (char *) side->buf + piece_off(side, p), side->counts[p],
                                        piece_type(side, p), 0, &actual);
        MPIR_ERR_CHECK(mpi_errno);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Paced sends order themselves by where their blocks are read, which every process tells
 * every peer (order reports): in the Alltoall family, where every pair exchanges a block. The
 * same on every process: the collective, and the pacing MPI_Init agreed on. */
static int reports_on(MPIR_Tnbc_coll_t coll, const MPIR_Coll_nbrs_t * nbrs)
{
    return !nbrs && MPII_Tnbc_policy.pace_bytes > 0 && (coll == MPIR_TNBC_COLL_ALLTOALL ||
                                                        coll == MPIR_TNBC_COLL_ALLTOALLV ||
                                                        coll == MPIR_TNBC_COLL_ALLTOALLW);
}

/* The peers' reports, in our work space (our own slot stays -1), go to the call site. */
static void learn_readers(MPIR_Tnbc_site_t * site, const MPIR_Tnbc_sched_t * sched,
                          const char *work)
{
    (void) sched;
    if (work) {
        const char *in = work + MPIR_Tnbc_report_in_off(site->key.comm_size, 0);
        MPIR_Tnbc_site_set_reader_pos(site, (const int32_t *) in, -1);
    }
}

/* Every rank in ring order (or receives by access order, sends by a reorder plan or by where
 * they are read), or the neighbour lists of a topology. */
static int build(MPIR_Tnbc_sched_t * s, MPIR_Tnbc_coll_t coll, int rank,
                 const MPIR_Coll_nbrs_t * nbrs, int ns, const size_t * sbytes,
                 const size_t * soff, int nr, const size_t * rbytes, const size_t * roff,
                 const int *recv_pos, const int *send_pos)
{
    if (nbrs)
        return MPIR_Tnbc_sched_neighbor(s, ns, nbrs->dsts, sbytes, soff, nr, nbrs->srcs, rbytes,
                                        roff, nbrs->recv_reversed);
    return MPIR_Tnbc_sched_alltoallv_ordered(s, rank, ns, sbytes, soff, rbytes, roff, recv_pos,
                                             send_pos, reports_on(coll, nbrs));
}

/* The access order of the call site, for the pairwise layout: block p is source p's piece. It
 * always steers node arbitration; the receive bodies follow it only with the CVAR. */
static const int *access_order(MPII_Tnbc_start_t * args, const MPIR_Coll_nbrs_t * nbrs, int nr,
                               const size_t * rbytes, MPIR_Tnbc_site_t ** site)
{
    uint64_t total = 0;
    *site = NULL;
    if (nbrs || args->ret.small)
        return NULL;
    for (int p = 0; p < nr; p++)
        total += rbytes[p];
    *site = MPII_Tnbc_access_site(args->coll, nr, nr, total);
    args->learn.sample = MPII_Tnbc_access_sampling(*site, MPIR_CVAR_TNBC_RECV_ORDER ||
                                             MPIR_CVAR_TNBC_NODE_ARBITRATION ||
                                             reports_on(args->coll, nbrs));
    args->learn.trace = *site && (MPII_Tnbc_access_tracing() || args->learn.sample);
    args->learn.site = args->learn.trace ? NULL : *site;
    args->ret.gain = *site ? &(*site)->gain : NULL;
    args->arb.access_pos = MPII_Tnbc_access_order(*site);
    return MPIR_CVAR_TNBC_RECV_ORDER ? args->arb.access_pos : NULL;
}

/* The bytes of each peer's piece of a side; returns the largest. */
static size_t count_side(const MPII_Tnbc_side_t * side, int n, size_t * bytes)
{
    size_t largest = 0;
    MPI_Aint size;
    for (int p = 0; p < n; p++) {
        bytes[p] = 0;
        if (side->counts[p] > 0) {
            MPIR_Datatype_get_size_macro(piece_type(side, p), size);
            bytes[p] = side->counts[p] * size;
        }
        largest = MPL_MAX(largest, bytes[p]);
    }
    return largest;
}

/* An Alltoall(v) whose algorithm CVAR names a reorder algorithm sends in its plan's order. */
static const int *rm_send_order(const MPII_Tnbc_start_t * args, const MPIR_Coll_nbrs_t * nbrs,
                                const MPII_Tnbc_pieces_t * pc)
{
    if (nbrs || (args->coll != MPIR_TNBC_COLL_ALLTOALL && args->coll != MPIR_TNBC_COLL_ALLTOALLV))
        return NULL;
    return MPIR_Rm_send_order(args->coll == MPIR_TNBC_COLL_ALLTOALL ? MPIR_RM_FORM_ALLTOALL :
                              MPIR_RM_FORM_ALLTOALLV, args->comm, pc->sbytes, pc->rbytes,
                              pc->send_pos_space);
}

/* The orders to post by: receives by the call site's access order (with the CVAR), sends by a
 * reorder plan or by where their readers read them (order reports). */
static void order_pieces(MPII_Tnbc_start_t * args, const MPIR_Coll_nbrs_t * nbrs,
                         MPII_Tnbc_pieces_t * pc, const int **recv_pos, const int **send_pos,
                         MPIR_Tnbc_site_t ** site)
{
    *recv_pos = access_order(args, nbrs, pc->nr, pc->rbytes, site);
    *send_pos = rm_send_order(args, nbrs, pc);
    if (*send_pos)
        MPII_Tnbc_stats_planned_sends();
    if (!reports_on(args->coll, nbrs))
        return;
    const int *readers = *site ? MPIR_Tnbc_site_reader_pos(*site) : NULL;
    if (!*send_pos && readers) {
        MPIR_Tnbc_send_order_by_readers(readers, args->comm->rank, pc->ns, pc->send_pos_space);
        *send_pos = pc->send_pos_space;
    }
    args->arb.send_urgency = readers;
    if (args->learn.site)
        args->learn.on_done = learn_readers;
}

/* Send space: the user's bytes in place when flat, else packed (MPI_IN_PLACE: always a copy,
 * as the receive buffer is overwritten). */
static int place_send(MPII_Tnbc_start_t * args, const MPII_Tnbc_side_t * send, int copy,
                      MPII_Tnbc_pieces_t * pc)
{
    MPI_Aint lo, hi;
    if (copy || !side_is_flat(send, pc->ns))
        return pack_side(send, pc->ns, pc->sbytes, pc->soff, (char **) &args->buf.send_packed);
    side_span(send, pc->ns, &lo, &hi);
    for (int p = 0; p < pc->ns; p++)
        pc->soff[p] = pc->sbytes[p] ? (size_t) (piece_off(send, p) - lo) : 0;
    args->buf.send_user = (const char *) send->buf + lo;
    return MPI_SUCCESS;
}

/* Receive space, the user's buffer when flat and the pieces do not overlap, else a temporary
 * one; then the schedule. Returns the schedule builder's code. */
static int place_recv_and_build(MPII_Tnbc_start_t * args, const MPII_Tnbc_side_t * recv,
                                const MPIR_Coll_nbrs_t * nbrs, MPII_Tnbc_pieces_t * pc,
                                const int *recv_pos, const int *send_pos)
{
    MPI_Aint lo, hi;
    int rc = MPIR_TNBC_SCHED_ERR_OVERLAP, rank = args->comm->rank;
    if (side_is_flat(recv, pc->nr)) {
        side_span(recv, pc->nr, &lo, &hi);
        for (int p = 0; p < pc->nr; p++)
            pc->roff[p] = pc->rbytes[p] ? (size_t) (piece_off(recv, p) - lo) : 0;
        args->buf.recv_user = (char *) recv->buf + lo;
        rc = build(&args->sched, args->coll, rank, nbrs, pc->ns, pc->sbytes, pc->soff, pc->nr,
                   pc->rbytes, pc->roff, recv_pos, send_pos);
    }
    if (rc != MPIR_TNBC_SCHED_ERR_OVERLAP)
        return rc;
    size_t total = 0;
    MPIR_Tnbc_sched_free(&args->sched);
    for (int p = 0; p < pc->nr; p++) {
        pc->roff[p] = total;
        total += pc->rbytes[p];
    }
    args->buf.recv_user = NULL;
    args->buf.recv_packed = 1;
    return build(&args->sched, args->coll, rank, nbrs, pc->ns, pc->sbytes, pc->soff, pc->nr,
                 pc->rbytes, pc->roff, recv_pos, send_pos);
}

static int unpack_recv(const void *ctx, const void *packed)
{
    const MPII_Tnbc_pairwise_t *pw = ctx;
    return unpack_side(packed, &pw->recv, pw->pc.nr, pw->pc.rbytes, pw->pc.roff);
}

int MPII_Tnbc_pairwise_describe(void *call, MPII_Tnbc_start_t * args,
                                MPIR_Tnbc_call_facts_t * facts)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_pairwise_t *pw = call;
    MPII_Tnbc_pieces_t *pc = &pw->pc;
    const MPIR_Coll_nbrs_t *nbrs = pw->by_nbrs ? &pw->nbrs : NULL;

    pc->ns = nbrs ? nbrs->outdegree : args->comm->local_size;
    pc->nr = nbrs ? nbrs->indegree : args->comm->local_size;
    /* one allocation: bytes and offsets of both sides, and room for an order of the sends */
    size_t nsize = 2 * (size_t) (pc->ns + pc->nr) + 4;
    pc->sbytes = MPL_malloc(nsize * sizeof(size_t) + (pc->ns + 1) * sizeof(int), MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!pc->sbytes, mpi_errno, MPI_ERR_OTHER, "**nomem");
    pc->soff = pc->sbytes + pc->ns + 1;
    pc->rbytes = pc->soff + pc->ns + 1;
    pc->roff = pc->rbytes + pc->nr + 1;
    pc->send_pos_space = (int *) (pc->sbytes + nsize);

    /* MPI_IN_PLACE: each piece goes out from where its reply will land (Alltoall semantics) */
    pw->in_place = (pw->send.buf == MPI_IN_PLACE);
    if (pw->in_place)
        pw->send = pw->recv;
    size_t largest_send = count_side(&pw->send, pc->ns, pc->sbytes);
    size_t largest_recv = count_side(&pw->recv, pc->nr, pc->rbytes);
    facts->size_is_global = !!(pw->flags & MPII_TNBC_SIZE_IS_GLOBAL);
    facts->largest_submsg_bytes = MPL_MAX(largest_send, largest_recv);
    /* a process that only sends (Gather at a non-root) judges by what it sends */
    args->ret.small = ((largest_recv ? largest_recv : largest_send) < MPII_Tnbc_policy.min_bytes);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPII_Tnbc_pairwise_build(void *call, MPII_Tnbc_start_t * args, MPII_Tnbc_launch_t * launch)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_pairwise_t *pw = call;
    const MPIR_Coll_nbrs_t *nbrs = pw->by_nbrs ? &pw->nbrs : NULL;
    const int *recv_pos, *send_pos;

    order_pieces(args, nbrs, &pw->pc, &recv_pos, &send_pos, &launch->site);
    mpi_errno = place_send(args, &pw->send, pw->in_place || (pw->flags & MPII_TNBC_PACK_SEND),
                           &pw->pc);
    MPIR_ERR_CHECK(mpi_errno);
    int rc = place_recv_and_build(args, &pw->recv, nbrs, &pw->pc, recv_pos, send_pos);
    /* the self pair's type signatures differ: erroneous, and only this process is involved */
    MPIR_ERR_CHKANDJUMP(rc == MPIR_TNBC_SCHED_ERR_ARG, mpi_errno, MPI_ERR_TRUNCATE, "**truncate");
    MPIR_ERR_CHKANDJUMP(rc != MPIR_TNBC_SCHED_OK, mpi_errno, MPI_ERR_OTHER, "**nomem");
    launch->unpack = unpack_recv;
    launch->unpack_ctx = pw;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPII_Tnbc_pairwise_finish(void *call)
{
    MPII_Tnbc_pairwise_t *pw = call;
    MPL_free(pw->pc.sbytes);
    MPL_free(pw->layout.sc);
    MPL_free(pw->nbrs.srcs);
}

/* +1 (add) or -1 on the receive types of the pieces that carry bytes (the binding checks no
 * other: a piece of count 0 need not name a valid type). */
static void reference_recv_types(const MPII_Tnbc_pairwise_t * h, int add)
{
    for (int p = 0; p < h->pc.nr; p++) {
        if (!h->pc.rbytes[p])
            continue;
        if (add)
            MPIR_Datatype_add_ref_if_not_builtin(piece_type(&h->recv, p));
        else
            MPIR_Datatype_release_if_not_builtin(piece_type(&h->recv, p));
        if (!h->recv.types)
            return;     /* one type for all pieces: one reference */
    }
}

/* The receive side's arrays may be the binding's (converted counts, freed when it returns) and
 * its types the application's to free: the copy has its own, and references. */
void *MPII_Tnbc_pairwise_hold(const void *unpack_ctx)
{
    const MPII_Tnbc_pairwise_t *pw = unpack_ctx;
    int n = pw->pc.nr;
    size_t ntypes = pw->recv.types ? n : 0;
    MPII_Tnbc_pairwise_t *h = MPL_malloc(sizeof(*h) + 2 * n * sizeof(MPI_Aint) +
                                         ntypes * sizeof(MPI_Datatype), MPL_MEM_COLL);
    if (!h)
        return NULL;
    *h = *pw;
    MPI_Aint *counts = (MPI_Aint *) (h + 1), *displs = counts + n;
    memcpy(counts, pw->recv.counts, n * sizeof(MPI_Aint));
    memcpy(displs, pw->recv.displs, n * sizeof(MPI_Aint));
    h->recv.counts = counts;
    h->recv.displs = displs;
    if (ntypes) {
        MPI_Datatype *types = (MPI_Datatype *) (displs + n);
        memcpy(types, pw->recv.types, ntypes * sizeof(MPI_Datatype));
        h->recv.types = types;
    }
    reference_recv_types(h, 1);
    return h;
}

void MPII_Tnbc_pairwise_release(void *held)
{
    MPII_Tnbc_pairwise_t *h = held;
    reference_recv_types(h, 0);
    MPII_Tnbc_pairwise_finish(h);
    MPL_free(h);
}

/* ---- Alltoall, Alltoallv, Alltoallw ---- */

static int settle_sides(const void *call, MPIR_Comm * comm_ptr)
{
    const MPII_Tnbc_pairwise_t *pw = call;
    int mpi_errno = settle_side(&pw->send, comm_ptr->local_size);
    return mpi_errno ? mpi_errno : settle_side(&pw->recv, comm_ptr->local_size);
}

/* Alltoallv and Alltoallw: the sides are the call's arguments. */
static const MPII_Tnbc_form_t sides_form = {
    .settle = settle_sides,.describe = MPII_Tnbc_pairwise_describe,
    .build = MPII_Tnbc_pairwise_build,.finish = MPII_Tnbc_pairwise_finish,
    .hold = MPII_Tnbc_pairwise_hold,.release = MPII_Tnbc_pairwise_release
};

typedef struct {
    MPII_Tnbc_pairwise_t pw;    /* first: the pairwise steps take the call as theirs */
    MPI_Aint sendcount, recvcount;
} MPII_Tnbc_alltoall_t;

static int settle_alltoall(const void *call, MPIR_Comm * comm_ptr)
{
    const MPII_Tnbc_alltoall_t *a = call;
    int mpi_errno = MPI_SUCCESS, n = comm_ptr->local_size;
    if (a->pw.send.buf != MPI_IN_PLACE)
        mpi_errno = MPIR_Tnbc_settle_buf(a->pw.send.buf, a->sendcount * n, a->pw.send.type);
    return mpi_errno ? mpi_errno : MPIR_Tnbc_settle_buf(a->pw.recv.buf, a->recvcount * n,
                                                        a->pw.recv.type);
}

/* the regular layout as a v-layout: one code path for both */
static int describe_alltoall(void *call, MPII_Tnbc_start_t * args,
                             MPIR_Tnbc_call_facts_t * facts)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_alltoall_t *a = call;
    MPIR_Coll_vlayout_t *l = &a->pw.layout;

    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_regular(l, args->comm->local_size, a->sendcount,
                                                  a->recvcount), mpi_errno, MPI_ERR_OTHER,
                        "**nomem");
    a->pw.send.counts = l->sc;
    a->pw.send.displs = l->sd;
    a->pw.recv.counts = l->rc;
    a->pw.recv.displs = l->rd;
    mpi_errno = MPII_Tnbc_pairwise_describe(&a->pw, args, facts);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static const MPII_Tnbc_form_t alltoall_form = {
    .settle = settle_alltoall,.describe = describe_alltoall,.build = MPII_Tnbc_pairwise_build,
    .finish = MPII_Tnbc_pairwise_finish,
    .hold = MPII_Tnbc_pairwise_hold,.release = MPII_Tnbc_pairwise_release
};

int MPIR_Tnbc_Alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                       void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                       MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                       MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_alltoall_t a = {.pw = {.send = {.buf = sendbuf,.type = sendtype},
                                     .recv = {.buf = recvbuf,.type = recvtype},
                                     .flags = MPII_TNBC_SIZE_IS_GLOBAL},
        .sendcount = sendcount,.recvcount = recvcount
    };
    return MPII_Tnbc_enter(&alltoall_form, &a, MPIR_TNBC_COLL_ALLTOALL, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Alltoallv(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const MPI_Aint recvcounts[],
                        const MPI_Aint rdispls[], MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                        MPIR_Errflag_t * errflag, MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_pairwise_t pw = {
        .send = {.buf = sendbuf,.counts = sendcounts,.displs = sdispls,.type = sendtype},
        .recv = {.buf = recvbuf,.counts = recvcounts,.displs = rdispls,.type = recvtype}
    };
    return MPII_Tnbc_enter(&sides_form, &pw, MPIR_TNBC_COLL_ALLTOALLV, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Alltoallw(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint sdispls[],
                        const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Aint recvcounts[],
                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                        MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_pairwise_t pw = {
        .send = {.buf = sendbuf,.counts = sendcounts,.displs = sdispls,.types = sendtypes},
        .recv = {.buf = recvbuf,.counts = recvcounts,.displs = rdispls,.types = recvtypes}
    };
    return MPII_Tnbc_enter(&sides_form, &pw, MPIR_TNBC_COLL_ALLTOALLW, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}
