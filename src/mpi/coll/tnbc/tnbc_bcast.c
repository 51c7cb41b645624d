/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Bcast: a binomial tree over segments (tnbc_sched.c). Each process returns once its edge
 * pieces are in; its children get each segment as soon as it has arrived. The root's buffer
 * is copied or made read-only until sent; a derived datatype is packed (root) or received into
 * a temporary buffer and unpacked in the call (other processes).
 *
 * Segments by access order: the segments are the blocks of the call site's access order. A
 * process posts its receives in its own order (learnt from its faults or from a profile) and
 * tells its parent that order in every call; a parent sends to each child in the order that
 * child last reported, so the root, which never faults, learns from its children.
 *
 * The tree is binomial over the ranks grouped by node (the root's node first), so that its
 * lower levels stay inside a node whatever the placement: ranks spread round-robin over the
 * nodes would otherwise cross nodes on every edge. */

#include "mpiimpl.h"
#include "coll_peers.h"
#include "tnbc_access.h"
#include "tnbc_entry.h"
#include "tnbc_node.h"
#include "tnbc_op.h"
#include "tnbc_stats.h"
#include "tnbc_util.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_BCAST_SEGMENTS
      category    : TNBC
      type        : int
      default     : 4
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        A T-NBC Bcast sends its buffer in this many segments down the tree: an inner process
        forwards a segment as soon as it has it, and the application can read a segment while
        later ones are still on the way. Must be the same on every process: each segment has a
        tag of its own, and a process that draws another number of tags mismatches every
        later collective on the communicator.

    - name        : MPIR_CVAR_TNBC_BCAST_WINDOW
      category    : TNBC
      type        : int
      default     : 1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        A T-NBC Bcast keeps at most this many segments in flight to each child, in the order
        the child reads them (MPIR_CVAR_TNBC_PRIORITIES): posted all at once, large messages
        share the link and the segment read first arrives as late as the last. 0: no limit.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* A parent keeps the orders its children reported (in its work space). */
static void learn_child_orders(MPIR_Tnbc_site_t * site, const MPIR_Tnbc_sched_t * sched,
                               const char *work)
{
    int npieces = site->key.nblocks;
    int *pos = work ? MPL_malloc((npieces + 1) * sizeof(int), MPL_MEM_COLL) : NULL;

    for (int i = 0; pos && i < sched->n; i++) {
        const MPIR_Tnbc_entry_t *e = &sched->entries[i];
        if (e->kind == MPIR_TNBC_RECV && e->space == MPIR_TNBC_SPACE_WORK &&
            MPIR_Tnbc_bcast_report_decode(work + e->off, e->len, npieces, pos))
            MPIR_Tnbc_site_set_peer_order(site, e->peer, pos);
    }
    MPL_free(pos);
}

typedef struct {
    int node_key, from_root, rank;
} MPII_tree_slot_t;

static int cmp_tree_slots(const void *a, const void *b)
{
    const MPII_tree_slot_t *x = a, *y = b;
    if (x->node_key != y->node_key)
        return x->node_key < y->node_key ? -1 : 1;
    return x->from_root - y->from_root;
}

/* The tree's order of ranks: the root's node first, then the other nodes by id, each node's
 * ranks together, by rank from the root. The node ids are the same on every process: *ranks is
 * NULL (rank order) on every process when one is unknown. Out of memory is an error, never
 * rank order: the peers would build another tree. */
static int node_order(MPIR_Comm * comm, int root, int **ranks_out)
{
    int mpi_errno = MPI_SUCCESS;
    int size = comm->local_size, root_node = MPIR_Coll_node_of(comm, root);
    MPII_tree_slot_t *slots = MPL_malloc(size * sizeof(*slots), MPL_MEM_COLL);
    int *ranks = MPL_malloc(size * sizeof(int), MPL_MEM_COLL);
    int known = (root_node >= 0);

    *ranks_out = NULL;
    MPIR_ERR_CHKANDJUMP(!slots || !ranks, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int v = 0; known && v < size; v++) {
        int r = (root + v) % size, node = MPIR_Coll_node_of(comm, r);
        slots[v].node_key = (node == root_node) ? -1 : node;
        slots[v].from_root = v;
        slots[v].rank = r;
        known = (node >= 0);
    }
    if (known) {
        qsort(slots, size, sizeof(*slots), cmp_tree_slots);
        for (int v = 0; v < size; v++)
            ranks[v] = slots[v].rank;
        *ranks_out = ranks;
        ranks = NULL;
    }

  fn_exit:
    MPL_free(ranks);
    MPL_free(slots);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The report for our parent, in the send space of a process other than the root. */
static int report_to_parent(MPII_Tnbc_start_t * args, int npieces, const int *pos)
{
    int mpi_errno = MPI_SUCCESS;
    size_t report = MPIR_Tnbc_bcast_report_bytes(npieces);

    if (report) {
        args->buf.send_packed = MPL_malloc(report, MPL_MEM_COLL);
        MPIR_ERR_CHKANDJUMP(!args->buf.send_packed, mpi_errno, MPI_ERR_OTHER, "**nomem");
        MPIR_Tnbc_bcast_report_encode(pos, npieces, args->buf.send_packed);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The orders of this call: our receives', each child's, and the report for our parent. */
static int order_segments(MPII_Tnbc_start_t * args, int root, size_t nbytes, int nseg,
                          const int *tree_ranks, MPIR_Tnbc_bcast_order_t * order,
                          const int **child_pos, MPIR_Tnbc_site_t ** site_out)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Comm *comm = args->comm;
    int parent, children[MPIR_TNBC_BCAST_MAX_CHILDREN];
    int nchildren = MPIR_Tnbc_bcast_tree(comm->rank, comm->local_size, root, tree_ranks,
                                         &parent, children);
    int npieces = MPIR_Tnbc_bcast_pieces(nbytes, nseg), by_child = 0;
    int edges = MPIR_Tnbc_bcast_edge_pieces(nbytes);
    MPIR_Tnbc_site_t *site = MPII_Tnbc_access_site(MPIR_TNBC_COLL_BCAST, comm->local_size,
                                                   npieces, nbytes);

    *site_out = site;
    args->learn.sample = MPII_Tnbc_access_sampling(site, parent >= 0);
    args->learn.trace = site && (MPII_Tnbc_access_tracing() || args->learn.sample);
    args->learn.site = site;  /* a trace run or a sample waits in the call: no faults to learn from,
                         * but the children's reports still count */
    args->learn.on_done = learn_child_orders;
    args->ret.gain = site ? &site->gain : NULL;
    order->recv_pos = MPII_Tnbc_access_order(site);
    order->child_pos = child_pos;
    order->ranks = tree_ranks;
    for (int c = 0; c < nchildren; c++) {
        child_pos[c] = MPII_Tnbc_access_peer_order(site, children[c]);
        by_child |= (child_pos[c] != NULL);
        args->ret.early_only |= !MPIR_Tnbc_order_is_natural(child_pos[c], edges, npieces);
    }
    /* segments read in another order than they go: the edges (a page each) do not count */
    args->ret.early_only |= !MPIR_Tnbc_order_is_natural(order->recv_pos, edges, npieces);
    if (order->recv_pos && parent >= 0)
        MPII_Tnbc_stats_bcast(MPII_TNBC_BCAST_OWN_ORDER);
    if (by_child)
        MPII_Tnbc_stats_bcast(MPII_TNBC_BCAST_CHILD_ORDER);
    /* what we read, else what our first child reads (it passes knowledge up the tree) */
    if (parent >= 0)
        mpi_errno = report_to_parent(args, npieces, order->recv_pos ? order->recv_pos :
                                     nchildren > 0 ? child_pos[0] : NULL);
    return mpi_errno;
}

/* One Bcast call, and what its steps keep. */
typedef struct {
    void *buffer;
    MPI_Aint count;
    MPI_Datatype datatype;
    int root;
    size_t nbytes;
    int *tree_ranks;            /* the tree's order of the ranks, by node (or NULL) */
    const int *child_pos[MPIR_TNBC_BCAST_MAX_CHILDREN];
} MPII_Tnbc_bcast_t;

static int unpack_buffer(const void *ctx, const void *packed)
{
    const MPII_Tnbc_bcast_t *b = ctx;
    MPI_Aint actual;
    return MPIR_Typerep_unpack(packed, b->nbytes, b->buffer, b->count, b->datatype, 0, &actual);
}

static int settle(const void *call, MPIR_Comm * comm_ptr)
{
    const MPII_Tnbc_bcast_t *b = call;
    return MPIR_Tnbc_settle_buf(b->buffer, b->count, b->datatype);
}

static int describe(void *call, MPII_Tnbc_start_t * args, MPIR_Tnbc_call_facts_t * facts)
{
    MPII_Tnbc_bcast_t *b = call;
    MPI_Aint typesize;
    MPIR_Datatype_get_size_macro(b->datatype, typesize);
    b->nbytes = b->count > 0 ? b->count * typesize : 0;
    facts->size_is_global = 1;
    facts->largest_submsg_bytes = b->nbytes;
    return MPI_SUCCESS;
}

/* The root sends from the user's buffer when flat, else from a packed copy; the others receive
 * into the user's buffer when flat, else into a temporary space they unpack. */
static int place_buffers(MPII_Tnbc_bcast_t * b, MPII_Tnbc_start_t * args,
                         MPII_Tnbc_launch_t * launch)
{
    int mpi_errno = MPI_SUCCESS, flat = MPII_Tnbc_is_flat(b->datatype);
    MPI_Aint actual;

    if (args->comm->rank == b->root) {
        if (flat) {
            args->buf.send_user = b->buffer;
        } else {
            args->buf.send_packed = MPL_malloc(b->nbytes, MPL_MEM_COLL);
            MPIR_ERR_CHKANDJUMP(!args->buf.send_packed, mpi_errno, MPI_ERR_OTHER, "**nomem");
            mpi_errno = MPIR_Typerep_pack(b->buffer, b->count, b->datatype, 0,
                                          args->buf.send_packed, b->nbytes, &actual);
            MPIR_ERR_CHECK(mpi_errno);
        }
    } else if (flat) {
        args->buf.recv_user = b->buffer;
    } else {
        args->buf.recv_packed = 1;
    }
    launch->unpack = unpack_buffer;
    launch->unpack_ctx = b;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int build(void *call, MPII_Tnbc_start_t * args, MPII_Tnbc_launch_t * launch)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_bcast_t *b = call;
    MPIR_Comm *comm = args->comm;
    int nseg = MPII_Tnbc_policy.bcast_segments;
    MPIR_Tnbc_bcast_order_t order;

    mpi_errno = node_order(comm, b->root, &b->tree_ranks);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = order_segments(args, b->root, b->nbytes, nseg, b->tree_ranks, &order,
                               b->child_pos, &launch->site);
    MPIR_ERR_CHECK(mpi_errno);
    int rc = MPIR_Tnbc_sched_bcast(&args->sched, comm->rank, comm->local_size, b->root,
                                   b->nbytes, nseg, &order);
    MPIR_ERR_CHKANDJUMP(rc != MPIR_TNBC_SCHED_OK, mpi_errno, MPI_ERR_OTHER, "**nomem");
    args->sched.body_window = MPL_MAX(MPIR_CVAR_TNBC_BCAST_WINDOW, 0);
    mpi_errno = place_buffers(b, args, launch);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static void finish(void *call)
{
    MPL_free(((MPII_Tnbc_bcast_t *) call)->tree_ranks);
}

/* the datatype is the application's to free before a nonblocking call unpacks */
static void *hold(const void *unpack_ctx)
{
    MPII_Tnbc_bcast_t *h = MPL_malloc(sizeof(*h), MPL_MEM_COLL);
    if (h) {
        *h = *(const MPII_Tnbc_bcast_t *) unpack_ctx;
        MPIR_Datatype_add_ref_if_not_builtin(h->datatype);
    }
    return h;
}

static void release(void *held)
{
    MPII_Tnbc_bcast_t *h = held;
    MPIR_Datatype_release_if_not_builtin(h->datatype);
    finish(h);
    MPL_free(h);
}

static const MPII_Tnbc_form_t bcast_form = {
    .settle = settle,.describe = describe,.build = build,.finish = finish,.hold = hold,
    .release = release
};

int MPIR_Tnbc_Bcast(void *buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                    MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, MPIR_Request ** tnbc_request,
                    int *tnbc_handled)
{
    MPII_Tnbc_bcast_t b = {.buffer = buffer,.count = count,.datatype = datatype,.root = root };
    return MPII_Tnbc_enter(&bcast_form, &b, MPIR_TNBC_COLL_BCAST, comm_ptr, errflag, tnbc_request,
                           tnbc_handled);
}
