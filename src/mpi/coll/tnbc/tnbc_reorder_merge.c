/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Alltoallv algorithms "reorder", "merge" and "reorder_merge" (MPIR_CVAR_ALLTOALLV_INTRA_
 * ALGORITHM), planned by tnbc_rmplan.c.
 *
 * Every process sends its messages in plan order. With merging, the messages for a remote node
 * go as one stream of growing aggregates to that node's forwarder for this sender (its local
 * processes take the senders in turn); every sender sends one stream to every other node, empty
 * or not, so a forwarder knows whom to expect without asking. The forwarder unpacks its own
 * data as aggregates arrive and sends each other process of its node one message: a directory
 * (source, bytes) and the payloads. Intra-node messages go directly.
 *
 * The node graph (bytes between node pairs, bytes each process receives) steers only the order
 * and the aggregate sizes, never what a receiver expects; so it is refreshed every
 * MPIR_CVAR_TNBC_RM_REFRESH calls on a communicator (a count every process agrees on), not on
 * every change of the counts. */

#include "mpiimpl.h"
#include "tnbc_impl.h"
#include "tnbc_rmplan.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_RM_DISTANCE
      category    : TNBC
      type        : enum
      default     : near_first
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : |-
        Node-pair distance order of the reorder and reorder_merge Alltoallv algorithms
        near_first - messages to nearer nodes (by node number) first
        far_first  - messages to farther nodes first

    - name        : MPIR_CVAR_TNBC_RM_FIRST_BYTES
      category    : TNBC
      type        : int
      default     : 4096
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Payload of the first aggregate of a merged stream; each next one is alpha times larger
        (alpha = 1.5 + log2 of the larger node degree of the pair).

    - name        : MPIR_CVAR_TNBC_RM_MERGE_MAX
      category    : TNBC
      type        : int
      default     : 65536
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        The merge algorithms merge messages to other nodes of at most this many bytes; larger
        ones go directly (forwarding them would cost a copy and a hop for no saved latency).

    - name        : MPIR_CVAR_TNBC_RM_AGGREGATE_MAX
      category    : TNBC
      type        : int
      default     : 1048576
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Largest payload of one aggregate of the merge algorithms (receivers size their buffers
        by it, so it must be the same on every process).

    - name        : MPIR_CVAR_TNBC_RM_REFRESH
      category    : TNBC
      type        : int
      default     : 64
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        The reorder/merge algorithms learn the node graph (an Allreduce) on their first call on
        a communicator and again every this many calls; 0: only on the first.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define MPII_RM_DIRECT_TAG    MPIR_ALLTOALLV_TAG
#define MPII_RM_AGGREGATE_TAG MPIR_ALLTOALLW_TAG
#define MPII_RM_FORWARD_TAG   MPIR_ALLTOALL_TAG

/* What a communicator keeps between calls (an attribute, freed with the communicator). */
typedef struct {
    uint64_t calls;
    int nnodes;
    int *node_of;               /* node index of every rank */
    int *node_start, *node_ranks;       /* the ranks of each node, ascending */
    int64_t *graph;             /* recv_total[size], then node_bytes[nnodes * nnodes] */
    uint64_t graph_gen;
    MPIR_Tnbc_rm_cache_t cache;
    MPIR_Tnbc_rm_msg_t *msgs;   /* the ordered plan for cache's key */
    int nmsg;
} MPII_Rm_comm_t;

static int rm_keyval = MPI_KEYVAL_INVALID;

static int rm_delete_fn(MPI_Comm comm, int keyval, void *attr_val, void *extra)
{
    MPII_Rm_comm_t *st = attr_val;
    MPL_free(st->node_of);
    MPL_free(st->node_start);
    MPL_free(st->node_ranks);
    MPL_free(st->graph);
    MPL_free(st->msgs);
    MPL_free(st);
    return MPI_SUCCESS;
}

static int rm_finalize(void *unused)
{
    if (rm_keyval != MPI_KEYVAL_INVALID) {
        MPII_Keyval *keyval_ptr;
        MPII_Keyval_get_ptr(rm_keyval, keyval_ptr);
        MPIR_free_keyval(keyval_ptr);
        rm_keyval = MPI_KEYVAL_INVALID;
    }
    return MPI_SUCCESS;
}

/* Dense node indices in order of first appearance along the ranks. */
static int map_nodes(MPIR_Comm * comm, MPII_Rm_comm_t * st)
{
    int size = comm->local_size;
    int *ids = MPL_malloc(size * sizeof(int), MPL_MEM_COLL);
    st->node_of = MPL_malloc(size * sizeof(int), MPL_MEM_COLL);
    if (!ids || !st->node_of) {
        MPL_free(ids);
        return MPI_ERR_NO_MEM;
    }
    st->nnodes = 0;
    for (int r = 0; r < size; r++) {
        int id = MPII_Tnbc_node_of(comm, r), k;
        if (id < 0)
            id = -1 - r;        /* unknown: a node of its own */
        for (k = 0; k < st->nnodes && ids[k] != id; k++);
        if (k == st->nnodes)
            ids[st->nnodes++] = id;
        st->node_of[r] = k;
    }
    MPL_free(ids);

    /* the ranks of each node, ascending: node b's are node_ranks[node_start[b] ..
     * node_start[b + 1]) */
    st->node_start = MPL_calloc(st->nnodes + 1, sizeof(int), MPL_MEM_COLL);
    st->node_ranks = MPL_malloc(size * sizeof(int), MPL_MEM_COLL);
    if (!st->node_start || !st->node_ranks)
        return MPI_ERR_NO_MEM;
    for (int r = 0; r < size; r++)
        st->node_start[st->node_of[r] + 1]++;
    for (int b = 0; b < st->nnodes; b++)
        st->node_start[b + 1] += st->node_start[b];
    for (int r = 0, *fill = st->node_start; r < size; r++)
        st->node_ranks[fill[st->node_of[r]]++] = r;
    for (int b = st->nnodes; b > 0; b--)       /* the fill moved every start one node up */
        st->node_start[b] = st->node_start[b - 1];
    st->node_start[0] = 0;
    return MPI_SUCCESS;
}

static int get_state(MPIR_Comm * comm, MPII_Rm_comm_t ** out)
{
    int mpi_errno = MPI_SUCCESS, flag = 0;
    MPII_Rm_comm_t *st = NULL;
    MPII_Keyval *keyval_ptr;

    if (rm_keyval == MPI_KEYVAL_INVALID) {
        mpi_errno = MPIR_Comm_create_keyval_impl(MPI_COMM_NULL_COPY_FN, rm_delete_fn,
                                                 &rm_keyval, NULL);
        MPIR_ERR_CHECK(mpi_errno);
        MPIR_Add_finalize(rm_finalize, NULL, MPIR_FINALIZE_CALLBACK_PRIO - 1);
    }
    mpi_errno = MPIR_Comm_get_attr_impl(comm, rm_keyval, &st, &flag, MPIR_ATTR_PTR);
    MPIR_ERR_CHECK(mpi_errno);
    if (!flag) {
        st = MPL_calloc(1, sizeof(*st), MPL_MEM_COLL);
        MPIR_ERR_CHKANDJUMP(!st, mpi_errno, MPI_ERR_OTHER, "**nomem");
        mpi_errno = map_nodes(comm, st);
        if (mpi_errno) {
            rm_delete_fn(MPI_COMM_NULL, rm_keyval, st, NULL);
            MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**nomem");
        }
        MPII_Keyval_get_ptr(rm_keyval, keyval_ptr);
        mpi_errno = MPIR_Comm_set_attr_impl(comm, keyval_ptr, st, MPIR_ATTR_PTR);
        if (mpi_errno) {
            rm_delete_fn(MPI_COMM_NULL, rm_keyval, st, NULL);
            MPIR_ERR_POP(mpi_errno);
        }
    }
    *out = st;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* One call's view of the exchange. */
typedef struct {
    MPIR_Comm *comm;
    int rank, size, my_node, nlocal, my_local;
    const int *local;           /* ranks of my node, ascending */
    MPII_Rm_comm_t *st;
    const char *sendbuf;
    const MPI_Aint *sendcounts, *sdispls;
    MPI_Datatype sendtype;
    char *recvbuf;
    const MPI_Aint *recvcounts, *rdispls;
    MPI_Datatype recvtype;
    MPI_Aint sext, rext, send_true_lb;
    int send_contig;
    size_t *sbytes, *rbytes;
    size_t cap, hdr_max, merge_max;
    int *direct_req;            /* per source: index of its direct receive in reqs, or -1 */
    int *own;                   /* per source whose forwarder I am: what came for me */
    MPIR_Request **reqs;        /* everything MPIC_Waitall completes */
    int nreq, reqcap;
    char **bufs;                /* freed at the end */
    int nbuf, bufcap;
    MPIR_Errflag_t *errflag;
    int mpi_errno_ret;
} MPII_Rm_call_t;

/* What a forwarder saw of a source's message for one process of its node. */
#define MPII_RM_NONE   0        /* nothing */
#define MPII_RM_MERGED 1        /* merged data (unpacked, or kept in a slot) */
#define MPII_RM_DIRECT 2        /* an announcement: the sender sends it directly */
#define MPII_RM_TAKEN  3        /* merged data for me, already unpacked */

static void note_error(MPII_Rm_call_t * c, int mpi_errno)
{
    if (!mpi_errno)
        return;
    *c->errflag = (MPIR_ERR_GET_CLASS(mpi_errno) == MPIX_ERR_PROC_FAILED) ?
        MPIR_ERR_PROC_FAILED : MPIR_ERR_OTHER;
    MPIR_ERR_ADD(c->mpi_errno_ret, mpi_errno);
}

static MPIR_Request **new_req(MPII_Rm_call_t * c)
{
    if (c->nreq == c->reqcap) {
        int cap = c->reqcap ? 2 * c->reqcap : 64;
        MPIR_Request **r = MPL_realloc(c->reqs, cap * sizeof(*r), MPL_MEM_COLL);
        if (!r)
            return NULL;
        c->reqs = r;
        c->reqcap = cap;
    }
    c->reqs[c->nreq] = NULL;
    return &c->reqs[c->nreq++];
}

static char *new_buf(MPII_Rm_call_t * c, size_t bytes)
{
    if (c->nbuf == c->bufcap) {
        int cap = c->bufcap ? 2 * c->bufcap : 64;
        char **b = MPL_realloc(c->bufs, cap * sizeof(*b), MPL_MEM_COLL);
        if (!b)
            return NULL;
        c->bufs = b;
        c->bufcap = cap;
    }
    char *p = MPL_malloc(bytes ? bytes : 1, MPL_MEM_COLL);
    if (p)
        c->bufs[c->nbuf++] = p;
    return p;
}

/* The process of node `node` that receives the stream of `sender`: the node's processes take
 * the senders in turn. */
static int forwarder_of(MPII_Rm_call_t * c, int sender, int node)
{
    const int *start = c->st->node_start;
    return c->st->node_ranks[start[node] + sender % (start[node + 1] - start[node])];
}

/* The node graph: every process adds its row; an Allreduce sums them. */
static int refresh_graph(MPII_Rm_call_t * c)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Rm_comm_t *st = c->st;
    int n = st->nnodes;
    size_t count = (size_t) c->size + (size_t) n * n;

    if (!st->graph) {
        st->graph = MPL_malloc(count * sizeof(int64_t), MPL_MEM_COLL);
        MPIR_ERR_CHKANDJUMP(!st->graph, mpi_errno, MPI_ERR_OTHER, "**nomem");
    }
    memset(st->graph, 0, count * sizeof(int64_t));
    int64_t *recv_total = st->graph, *node_bytes = st->graph + c->size;
    for (int p = 0; p < c->size; p++) {
        recv_total[c->rank] += (int64_t) c->rbytes[p];
        node_bytes[(size_t) c->my_node * n + st->node_of[p]] += (int64_t) c->sbytes[p];
    }
    mpi_errno = MPIR_Allreduce_impl(MPI_IN_PLACE, st->graph, count, MPI_INT64_T, MPI_SUM,
                                    c->comm, c->errflag);
    MPIR_ERR_CHECK(mpi_errno);
    st->graph_gen++;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The ordered list of this process's messages (self excluded), kept while the counts and the
 * graph stay the same. */
static int make_plan(MPII_Rm_call_t * c, MPIR_Tnbc_rm_order_t order)
{
    MPII_Rm_comm_t *st = c->st;
    uint64_t sig = MPIR_Tnbc_rm_signature(c->sbytes, c->rbytes, c->size) ^ (uint64_t) order;

    if (MPIR_Tnbc_rm_cache_lookup(&st->cache, sig, st->graph_gen))
        return MPI_SUCCESS;
    MPIR_Tnbc_rm_msg_t *m = MPL_realloc(st->msgs, c->size * sizeof(*m), MPL_MEM_COLL);
    if (!m) {
        st->cache.valid = 0;
        return MPI_ERR_NO_MEM;
    }
    st->msgs = m;
    st->nmsg = 0;
    int64_t sent = 0;
    for (int p = 0; p < c->size; p++)
        sent += (int64_t) c->sbytes[p];
    for (int p = 0; p < c->size; p++) {
        if (p == c->rank || c->sbytes[p] == 0)
            continue;
        int64_t recv = st->graph[p];
        m[st->nmsg++] = (MPIR_Tnbc_rm_msg_t) {.peer = p,.node = st->node_of[p],
            .bytes = c->sbytes[p],.weight = sent > recv ? sent : recv
        };
    }
    MPIR_Tnbc_rm_order(m, st->nmsg, c->my_node, c->rank, c->size, order);
    return MPI_SUCCESS;
}

static void post_direct_recv(MPII_Rm_call_t * c, int p)
{
    MPIR_Request **r = new_req(c);
    if (!r) {
        note_error(c, MPI_ERR_NO_MEM);
        return;
    }
    c->direct_req[p] = (int) (r - c->reqs);
    note_error(c, MPIC_Irecv(c->recvbuf + c->rdispls[p] * c->rext, c->recvcounts[p],
                             c->recvtype, p, MPII_RM_DIRECT_TAG, c->comm, r));
}

static void post_direct_send(MPII_Rm_call_t * c, int p)
{
    MPIR_Request **r = new_req(c);
    if (!r) {
        note_error(c, MPI_ERR_NO_MEM);
        return;
    }
    note_error(c, MPIC_Isend(c->sendbuf + c->sdispls[p] * c->sext, c->sendcounts[p],
                             c->sendtype, p, MPII_RM_DIRECT_TAG, c->comm, r, c->errflag));
}

/* ---- merged streams, sender side ---- */

typedef struct {
    int node, fwd;
    int n;                      /* messages, in plan order */
    int *peers;
    size_t *bytes;
    int nd;                     /* messages sent directly, announced in aggregate 0 */
    int *direct_peers;
    size_t *direct_bytes;
    char **staged;              /* non-contiguous send type: each message packed whole */
    MPIR_Tnbc_rm_split_t split;
} MPII_Rm_stream_t;

static void send_aggregate(MPII_Rm_call_t * c, MPII_Rm_stream_t * s, int a)
{
    int f0 = s->split.first[a], nf = s->split.first[a + 1] - f0, nd = (a == 0) ? s->nd : 0;
    MPIR_Tnbc_rm_wire_frag_t wf[nf + nd > 0 ? nf + nd : 1];
    size_t payload = 0;

    for (int k = 0; k < nd; k++)
        wf[nf + k] = (MPIR_Tnbc_rm_wire_frag_t) {.dst = s->direct_peers[k],
            .total = s->direct_bytes[k],.off = MPIR_TNBC_RM_DIRECT_OFF,.len = 0
        };
    for (int k = 0; k < nf; k++) {
        const MPIR_Tnbc_rm_frag_t *f = &s->split.frags[f0 + k];
        wf[k] = (MPIR_Tnbc_rm_wire_frag_t) {.dst = s->peers[f->msg],.total = s->bytes[f->msg],
            .off = f->off,.len = f->len
        };
        payload += f->len;
    }
    char *buf = new_buf(c, MPIR_Tnbc_rm_header_bytes(nf + nd) + payload);
    MPIR_Request **r = new_req(c);
    if (!buf || !r) {
        note_error(c, MPI_ERR_NO_MEM);
        return;
    }
    char *p = MPIR_Tnbc_rm_write_header(buf, nf + nd, a == s->split.nagg - 1, wf);
    for (int k = 0; k < nf; k++) {
        int peer = (int) wf[k].dst, msg = s->split.frags[f0 + k].msg;
        MPI_Aint actual;
        if (c->send_contig) {
            memcpy(p, c->sendbuf + c->sdispls[peer] * c->sext + c->send_true_lb + wf[k].off,
                   wf[k].len);
        } else {
            /* a fragment may end inside an element: pack the message whole once */
            if (!s->staged[msg]) {
                s->staged[msg] = new_buf(c, wf[k].total);
                if (!s->staged[msg]) {
                    note_error(c, MPI_ERR_NO_MEM);
                    return;
                }
                note_error(c, MPIR_Typerep_pack(c->sendbuf + c->sdispls[peer] * c->sext,
                                                c->sendcounts[peer], c->sendtype, 0,
                                                s->staged[msg], wf[k].total, &actual));
            }
            memcpy(p, s->staged[msg] + wf[k].off, wf[k].len);
        }
        p += wf[k].len;
    }
    note_error(c, MPIC_Isend(buf, (MPI_Aint) (p - buf), MPI_BYTE, s->fwd, MPII_RM_AGGREGATE_TAG,
                             c->comm, r, c->errflag));
}

/* One stream per remote node, in the order its first message has in the plan; then empty
 * streams to the nodes this process sends nothing. */
static int make_streams(MPII_Rm_call_t * c, MPII_Rm_stream_t ** out, int *nout)
{
    MPII_Rm_comm_t *st = c->st;
    int nn = st->nnodes, ns = 0;
    MPII_Rm_stream_t *s = MPL_calloc(nn, sizeof(*s), MPL_MEM_COLL);
    int *slot = MPL_malloc(nn * sizeof(int), MPL_MEM_COLL);
    if (!s || !slot) {
        MPL_free(s);
        MPL_free(slot);
        return MPI_ERR_NO_MEM;
    }
    for (int b = 0; b < nn; b++)
        slot[b] = -1;
    for (int i = 0; i <= st->nmsg; i++) {
        int node = (i < st->nmsg) ? st->msgs[i].node : -1;
        if (i == st->nmsg) {
            /* nodes with no message, in ring order from ours */
            for (int k = 1; k < nn; k++) {
                int b = (c->my_node + k) % nn;
                if (slot[b] < 0) {
                    slot[b] = ns;
                    s[ns++].node = b;
                }
            }
            break;
        }
        if (node == c->my_node || slot[node] >= 0)
            continue;
        slot[node] = ns;
        s[ns++].node = node;
    }
    int rc = MPI_SUCCESS;
    for (int k = 0; k < ns && rc == MPI_SUCCESS; k++) {
        s[k].fwd = forwarder_of(c, c->rank, s[k].node);
        s[k].peers = MPL_malloc((st->nmsg + 1) * sizeof(int), MPL_MEM_COLL);
        s[k].bytes = MPL_malloc((st->nmsg + 1) * sizeof(size_t), MPL_MEM_COLL);
        s[k].staged = MPL_calloc(st->nmsg + 1, sizeof(char *), MPL_MEM_COLL);
        s[k].direct_peers = MPL_malloc((st->nmsg + 1) * sizeof(int), MPL_MEM_COLL);
        s[k].direct_bytes = MPL_malloc((st->nmsg + 1) * sizeof(size_t), MPL_MEM_COLL);
        if (!s[k].peers || !s[k].bytes || !s[k].staged || !s[k].direct_peers ||
            !s[k].direct_bytes) {
            rc = MPI_ERR_NO_MEM;
            break;
        }
        for (int i = 0; i < st->nmsg; i++) {
            if (st->msgs[i].node != s[k].node)
                continue;
            if (st->msgs[i].bytes <= c->merge_max) {
                s[k].peers[s[k].n] = st->msgs[i].peer;
                s[k].bytes[s[k].n++] = st->msgs[i].bytes;
            } else {
                s[k].direct_peers[s[k].nd] = st->msgs[i].peer;
                s[k].direct_bytes[s[k].nd++] = st->msgs[i].bytes;
            }
        }
        double alpha = MPIR_Tnbc_rm_alpha(st->graph + c->size, nn, c->my_node, s[k].node);
        if (MPIR_Tnbc_rm_split(s[k].bytes, s[k].n, MPIR_CVAR_TNBC_RM_FIRST_BYTES > 0 ?
                               (size_t) MPIR_CVAR_TNBC_RM_FIRST_BYTES : 1, alpha, c->cap,
                               &s[k].split) != MPIR_TNBC_RM_OK)
            rc = MPI_ERR_NO_MEM;
    }
    MPL_free(slot);
    *out = s;
    *nout = ns;
    return rc;
}

static void free_streams(MPII_Rm_stream_t * s, int ns)
{
    for (int k = 0; k < ns; k++) {
        MPL_free(s[k].peers);
        MPL_free(s[k].bytes);
        MPL_free(s[k].staged);  /* the buffers are the call's */
        MPL_free(s[k].direct_peers);
        MPL_free(s[k].direct_bytes);
        MPIR_Tnbc_rm_split_free(&s[k].split);
    }
    MPL_free(s);
}

/* Intra-node messages and the first aggregate of every stream in plan order, then the later
 * aggregates round by round: early (small) aggregates of all streams go first. */
static int post_sends(MPII_Rm_call_t * c, int merge)
{
    MPII_Rm_comm_t *st = c->st;
    MPII_Rm_stream_t *s = NULL;
    int ns = 0, maxagg = 0;

    if (!merge) {
        for (int i = 0; i < st->nmsg; i++)
            post_direct_send(c, st->msgs[i].peer);
        return MPI_SUCCESS;
    }
    int rc = make_streams(c, &s, &ns);
    if (rc) {
        free_streams(s, ns);
        return rc;
    }
    int next = 0;
    for (int i = 0; i < st->nmsg; i++) {
        if (st->msgs[i].node == c->my_node || st->msgs[i].bytes > c->merge_max)
            post_direct_send(c, st->msgs[i].peer);
        if (st->msgs[i].node != c->my_node && next < ns && s[next].node == st->msgs[i].node)
            send_aggregate(c, &s[next++], 0);
    }
    for (; next < ns; next++)
        send_aggregate(c, &s[next], 0);
    for (int k = 0; k < ns; k++)
        maxagg = MPL_MAX(maxagg, s[k].split.nagg);
    for (int a = 1; a < maxagg; a++)
        for (int k = 0; k < ns; k++)
            if (a < s[k].split.nagg)
                send_aggregate(c, &s[k], a);
    free_streams(s, ns);
    return MPI_SUCCESS;
}

/* ---- merged streams, forwarder side ---- */

typedef struct {
    char *buf;                  /* assembled message for a process of my node */
    size_t total, got;
    int64_t direct;             /* announced direct message: its bytes + 1 */
} MPII_Rm_slot_t;

typedef struct {
    int src, done;
    char *buf;
    MPIR_Request *req;
    MPII_Rm_slot_t *slots;      /* per local process */
} MPII_Rm_source_t;

static void post_aggregate_recv(MPII_Rm_call_t * c, MPII_Rm_source_t * s)
{
    s->buf = MPL_malloc(c->hdr_max + c->cap, MPL_MEM_COLL);
    if (!s->buf) {
        note_error(c, MPI_ERR_NO_MEM);
        s->done = 1;
        return;
    }
    int rc = MPIC_Irecv(s->buf, (MPI_Aint) (c->hdr_max + c->cap), MPI_BYTE, s->src,
                        MPII_RM_AGGREGATE_TAG, c->comm, &s->req);
    if (rc) {
        note_error(c, rc);
        s->done = 1;
    }
}

static int local_index(MPII_Rm_call_t * c, int rank)
{
    for (int l = 0; l < c->nlocal; l++)
        if (c->local[l] == rank)
            return l;
    return -1;
}

static void unpack_mine(MPII_Rm_call_t * c, int src, const char *data, size_t bytes)
{
    MPI_Aint actual;
    note_error(c, MPIR_Typerep_unpack(data, bytes, c->recvbuf + c->rdispls[src] * c->rext,
                                      c->recvcounts[src], c->recvtype, 0, &actual));
}

/* One aggregate of source s arrived: my own messages are unpacked when whole and expected,
 * the others assembled for forwarding; announcements of direct messages are noted. */
static void take_aggregate(MPII_Rm_call_t * c, MPII_Rm_source_t * s, const char *buf, size_t len)
{
    int nfrag, final;
    const MPIR_Tnbc_rm_wire_frag_t *wf;
    const char *payload;

    if (MPIR_Tnbc_rm_read_header(buf, len, c->nlocal, &nfrag, &final, &wf, &payload)) {
        note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                           __LINE__, MPI_ERR_INTERN, "**fail", NULL));
        s->done = 1;
        return;
    }
    for (int k = 0; k < nfrag; k++, payload += wf[k - 1].len) {
        int l = (wf[k].dst >= 0 && wf[k].dst < c->size) ? local_index(c, (int) wf[k].dst) : -1;
        if (l < 0) {
            note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                               __LINE__, MPI_ERR_INTERN, "**fail", NULL));
            continue;
        }
        MPII_Rm_slot_t *m = &s->slots[l];
        int mine = (l == c->my_local);
        if (wf[k].off == MPIR_TNBC_RM_DIRECT_OFF) {
            m->direct = (int64_t) wf[k].total + 1;
            if (mine)
                c->own[s->src] = MPII_RM_DIRECT;
            continue;
        }
        if (mine && wf[k].len == wf[k].total && wf[k].total <= c->rbytes[s->src] &&
            c->direct_req[s->src] < 0) {
            unpack_mine(c, s->src, payload, wf[k].len);
            c->own[s->src] = MPII_RM_TAKEN;
            continue;
        }
        if (!m->buf) {
            m->buf = new_buf(c, wf[k].total);
            m->total = wf[k].total;
            if (!m->buf) {
                note_error(c, MPI_ERR_NO_MEM);
                continue;
            }
        }
        if (wf[k].total != m->total || wf[k].off + wf[k].len > m->total) {
            note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                               __LINE__, MPI_ERR_INTERN, "**fail", NULL));
            continue;
        }
        memcpy(m->buf + wf[k].off, payload, wf[k].len);
        m->got += wf[k].len;
        if (mine)
            c->own[s->src] = MPII_RM_MERGED;
        /* a fragment may end inside an element: mine are unpacked whole */
        if (mine && m->got == m->total && m->total <= c->rbytes[s->src] &&
            c->direct_req[s->src] < 0) {
            unpack_mine(c, s->src, m->buf, m->total);
            c->own[s->src] = MPII_RM_TAKEN;
        }
    }
    if (final)
        s->done = 1;
}

/* What came for me from remote source i (merged data, an announcement, or nothing) against
 * what I posted for it (a direct receive when it is above the merge limit). Legal programs
 * agree; otherwise the result is the error stock MPICH gives (a truncation), or an error where
 * stock would wait for ever, never a hang. */
static void reconcile(MPII_Rm_call_t * c, int i, int kind, size_t bytes, const char *data)
{
    int posted = c->direct_req[i];

    if (kind == MPII_RM_TAKEN)
        return;
    if (kind == MPII_RM_DIRECT) {
        if (posted < 0)
            post_direct_recv(c, i);     /* above what I take: it completes as a truncation */
        return;
    }
    if (posted >= 0) {
        /* a direct receive no message will match */
        MPIR_Request *r = c->reqs[posted];
        MPID_Cancel_recv(r);
        MPIR_Wait_impl(r, MPI_STATUS_IGNORE);
        MPIR_Request_free(r);
        c->reqs[posted] = NULL;
        c->direct_req[i] = -1;
    }
    if (kind == MPII_RM_NONE) {
        if (c->rbytes[i])
            note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                               __LINE__, MPI_ERR_OTHER, "**fail", NULL));
    } else if (bytes > c->rbytes[i]) {
        note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                           __LINE__, MPI_ERR_TRUNCATE, "**truncate", NULL));
    } else {
        unpack_mine(c, i, data, bytes);
    }
}

/* Each other process of my node gets one message: the directory of what my sources sent it,
 * then the data, in ascending source order. */
static void forward(MPII_Rm_call_t * c, MPII_Rm_source_t * src, int nsrc)
{
    for (int l = 0; l < c->nlocal; l++) {
        if (l == c->my_local)
            continue;
        int n = 0;
        size_t bytes = 0;
        for (int k = 0; k < nsrc; k++) {
            if (src[k].slots[l].buf || src[k].slots[l].direct) {
                n++;
                bytes += src[k].slots[l].buf ? src[k].slots[l].total : 0;
            }
        }
        char *buf = new_buf(c, MPIR_Tnbc_rm_directory_bytes(n) + bytes);
        MPIR_Request **r = new_req(c);
        if (!buf || !r) {
            note_error(c, MPI_ERR_NO_MEM);
            continue;
        }
        int64_t *dir = (int64_t *) buf;
        char *p = buf + MPIR_Tnbc_rm_directory_bytes(n);
        dir[0] = n;
        n = 0;
        for (int k = 0; k < nsrc; k++) {
            MPII_Rm_slot_t *m = &src[k].slots[l];
            if (!m->buf && !m->direct)
                continue;
            dir[1 + 2 * n] = src[k].src;
            if (!m->buf) {
                dir[2 + 2 * n++] = -m->direct;  /* -(bytes + 1) */
                continue;
            }
            if (m->got != m->total)
                note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                                   __LINE__, MPI_ERR_INTERN, "**fail", NULL));
            dir[2 + 2 * n++] = (int64_t) m->total;
            memcpy(p, m->buf, m->total);
            p += m->total;
        }
        note_error(c, MPIC_Isend(buf, (MPI_Aint) (p - buf), MPI_BYTE, c->local[l],
                                 MPII_RM_FORWARD_TAG, c->comm, r, c->errflag));
    }
}

/* The sources whose streams come to me, in ascending rank order. */
static int my_sources(MPII_Rm_call_t * c, MPII_Rm_source_t ** out)
{
    int n = 0;
    MPII_Rm_source_t *s = MPL_calloc(c->size + 1, sizeof(*s), MPL_MEM_COLL);
    if (!s)
        return -1;
    for (int i = 0; i < c->size; i++)
        if (c->st->node_of[i] != c->my_node && forwarder_of(c, i, c->my_node) == c->rank)
            s[n++].src = i;
    *out = s;
    return n;
}

/* Receive every stream sent to me, then forward. */
static void run_forwarder(MPII_Rm_call_t * c)
{
    MPII_Rm_source_t *src = NULL;
    int nsrc = my_sources(c, &src);
    if (nsrc < 0) {
        note_error(c, MPI_ERR_NO_MEM);
        return;
    }
    if (nsrc == 0) {
        MPL_free(src);
        return;
    }
    for (int k = 0; k < nsrc; k++) {
        src[k].slots = MPL_calloc(c->nlocal, sizeof(MPII_Rm_slot_t), MPL_MEM_COLL);
        if (!src[k].slots) {
            note_error(c, MPI_ERR_NO_MEM);
            src[k].done = 1;
            continue;
        }
        post_aggregate_recv(c, &src[k]);
    }

    MPID_Progress_state progress_state;
    MPID_Progress_start(&progress_state);
    for (;;) {
        int open = 0, made = 0;
        for (int k = 0; k < nsrc; k++) {
            MPII_Rm_source_t *s = &src[k];
            if (s->req && MPIR_Request_is_complete(s->req)) {
                MPI_Status *status = &s->req->status;
                char *buf = s->buf;
                size_t len = MPIR_STATUS_GET_COUNT(*status);
                int err = status->MPI_ERROR;
                if (!err && MPIR_TAG_CHECK_ERROR_BIT(status->MPI_TAG))
                    *c->errflag = MPIR_ERR_OTHER;
                MPIR_Request_free(s->req);
                s->req = NULL;
                s->buf = NULL;
                made = 1;
                if (err) {
                    note_error(c, err);
                    s->done = 1;
                } else {
                    take_aggregate(c, s, buf, len);
                    if (!s->done)
                        post_aggregate_recv(c, s);
                }
                MPL_free(buf);
            }
            open += s->req != NULL;
        }
        if (!open)
            break;
        if (!made) {
            int rc = MPID_Progress_wait(&progress_state);
            if (rc) {
                note_error(c, rc);
                break;
            }
        }
    }
    MPID_Progress_end(&progress_state);

    forward(c, src, nsrc);
    for (int k = 0; k < nsrc; k++) {
        MPII_Rm_slot_t *m = src[k].slots ? &src[k].slots[c->my_local] : NULL;
        int kind = c->own[src[k].src];
        if (kind == MPII_RM_MERGED && m && m->got != m->total)
            kind = MPII_RM_NONE;        /* an incomplete stream: already an error */
        reconcile(c, src[k].src, kind, m ? m->total : 0, m ? m->buf : NULL);
    }
    for (int k = 0; k < nsrc; k++) {
        if (src[k].req) {       /* only after a progress error */
            MPIR_Request_free(src[k].req);
            MPL_free(src[k].buf);
        }
        MPL_free(src[k].slots);
    }
    MPL_free(src);
}

/* ---- receiving forwarded data ---- */

typedef struct {
    int fwd;
    char *buf;
    size_t cap;
    int req;                    /* index into the call's requests */
} MPII_Rm_inbox_t;

/* One message from every other process of my node that forwards for some remote sender. */
static int post_inboxes(MPII_Rm_call_t * c, MPII_Rm_inbox_t ** out)
{
    int n = 0;
    MPII_Rm_inbox_t *in = MPL_calloc(c->nlocal + 1, sizeof(*in), MPL_MEM_COLL);
    if (!in)
        return -1;
    for (int l = 0; l < c->nlocal; l++) {
        int f = c->local[l], nsrc = 0;
        size_t bytes = 0;
        if (l == c->my_local)
            continue;
        for (int i = 0; i < c->size; i++) {
            if (c->st->node_of[i] != c->my_node && forwarder_of(c, i, c->my_node) == f) {
                nsrc++;
                bytes += c->rbytes[i];
            }
        }
        if (nsrc == 0)
            continue;
        in[n].fwd = f;
        in[n].cap = MPIR_Tnbc_rm_directory_bytes(nsrc) + bytes;
        in[n].buf = new_buf(c, in[n].cap);
        MPIR_Request **r = new_req(c);
        if (!in[n].buf || !r) {
            note_error(c, MPI_ERR_NO_MEM);
            continue;
        }
        in[n].req = (int) (r - c->reqs);
        note_error(c, MPIC_Irecv(in[n].buf, (MPI_Aint) in[n].cap, MPI_BYTE, f,
                                 MPII_RM_FORWARD_TAG, c->comm, r));
        n++;
    }
    *out = in;
    return n;
}

/* Unpacks a forwarder's message: every source it forwards for and I expect data from must be
 * there, with no more than I can take. */
static void take_inbox(MPII_Rm_call_t * c, MPII_Rm_inbox_t * in, const MPI_Status * status)
{
    int n;
    const int64_t *dir;
    const char *payload;
    size_t len = MPIR_STATUS_GET_COUNT(*status);

    if (status->MPI_ERROR)
        return; /* reported with its request */
    if (MPIR_Tnbc_rm_read_directory(in->buf, len, &n, &dir, &payload)) {
        note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                           __LINE__, MPI_ERR_INTERN, "**fail", NULL));
        return;
    }
    int k = 0;
    for (int i = 0; i < c->size; i++) {
        if (c->st->node_of[i] == c->my_node || forwarder_of(c, i, c->my_node) != in->fwd)
            continue;
        int have = (k < n && dir[2 * k] == i);
        int64_t b = have ? dir[2 * k + 1] : 0;
        int kind = !have ? MPII_RM_NONE : (b < 0) ? MPII_RM_DIRECT : MPII_RM_MERGED;
        reconcile(c, i, kind, b > 0 ? (size_t) b : 0, payload);
        if (b > 0)
            payload += b;
        k += have;
    }
    if (k != n)
        note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                           __LINE__, MPI_ERR_INTERN, "**fail", NULL));
}

/* ---- the algorithm ---- */

/* Waits for request i and frees it; its status stays readable until the next wait. */
static const MPI_Status *wait_req(MPII_Rm_call_t * c, int i)
{
    static MPI_Status status;   /* under MPICH's lock */
    MPIR_Request *r = c->reqs[i];

    note_error(c, MPIC_Wait(r, c->errflag));
    status = r->status;
    note_error(c, status.MPI_ERROR);
    MPIR_Request_free(r);
    c->reqs[i] = NULL;
    return &status;
}

static int setup_call(MPII_Rm_call_t * c)
{
    MPIR_Comm *comm = c->comm;
    MPI_Aint ssize, rsize;

    c->rank = comm->rank;
    c->size = comm->local_size;
    MPIR_Datatype_get_extent_macro(c->sendtype, c->sext);
    MPIR_Datatype_get_extent_macro(c->recvtype, c->rext);
    MPIR_Datatype_get_size_macro(c->sendtype, ssize);
    MPIR_Datatype_get_size_macro(c->recvtype, rsize);
    MPIR_Datatype_is_contig(c->sendtype, &c->send_contig);
    if (c->send_contig) {
        MPI_Aint true_extent;
        MPIR_Type_get_true_extent_impl(c->sendtype, &c->send_true_lb, &true_extent);
    }
    c->sbytes = MPL_malloc(c->size * sizeof(size_t), MPL_MEM_COLL);
    c->rbytes = MPL_malloc(c->size * sizeof(size_t), MPL_MEM_COLL);
    if (!c->sbytes || !c->rbytes)
        return MPI_ERR_NO_MEM;
    for (int p = 0; p < c->size; p++) {
        c->sbytes[p] = (size_t) c->sendcounts[p] * ssize;
        c->rbytes[p] = (size_t) c->recvcounts[p] * rsize;
    }
    c->my_node = c->st->node_of[c->rank];
    c->local = c->st->node_ranks + c->st->node_start[c->my_node];
    c->nlocal = c->st->node_start[c->my_node + 1] - c->st->node_start[c->my_node];
    for (int l = 0; l < c->nlocal; l++)
        if (c->local[l] == c->rank)
            c->my_local = l;
    c->cap = MPIR_CVAR_TNBC_RM_AGGREGATE_MAX > 0 ? (size_t) MPIR_CVAR_TNBC_RM_AGGREGATE_MAX : 1;
    c->merge_max = MPIR_CVAR_TNBC_RM_MERGE_MAX > 0 ? (size_t) MPIR_CVAR_TNBC_RM_MERGE_MAX : 0;
    c->direct_req = MPL_malloc(c->size * sizeof(int), MPL_MEM_COLL);
    c->own = MPL_calloc(c->size, sizeof(int), MPL_MEM_COLL);
    if (!c->direct_req || !c->own)
        return MPI_ERR_NO_MEM;
    for (int p = 0; p < c->size; p++)
        c->direct_req[p] = -1;
    c->hdr_max = MPIR_Tnbc_rm_header_bytes(c->nlocal);
    return MPI_SUCCESS;
}

static int rm_alltoallv(const void *sendbuf, const MPI_Aint * sendcounts,
                        const MPI_Aint * sdispls, MPI_Datatype sendtype, void *recvbuf,
                        const MPI_Aint * recvcounts, const MPI_Aint * rdispls,
                        MPI_Datatype recvtype, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                        int reorder, int merge)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Rm_call_t c = {.comm = comm_ptr,.sendbuf = sendbuf,.sendcounts = sendcounts,
        .sdispls = sdispls,.sendtype = sendtype,.recvbuf = recvbuf,.recvcounts = recvcounts,
        .rdispls = rdispls,.recvtype = recvtype,.errflag = errflag
    };
    MPII_Rm_inbox_t *inbox = NULL;
    int ninbox = 0;

    MPIR_Assert(sendbuf != MPI_IN_PLACE);
    mpi_errno = get_state(comm_ptr, &c.st);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = setup_call(&c);
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**nomem");

    uint64_t refresh = MPIR_CVAR_TNBC_RM_REFRESH > 0 ? MPIR_CVAR_TNBC_RM_REFRESH : 0;
    if (c.st->calls == 0 || (refresh && c.st->calls % refresh == 0)) {
        mpi_errno = refresh_graph(&c);
        MPIR_ERR_CHECK(mpi_errno);
    }
    c.st->calls++;
    MPIR_Tnbc_rm_order_t order = !reorder ? MPIR_TNBC_RM_ORDER_RING :
        (MPIR_CVAR_TNBC_RM_DISTANCE == MPIR_CVAR_TNBC_RM_DISTANCE_far_first) ?
        MPIR_TNBC_RM_ORDER_FAR_FIRST : MPIR_TNBC_RM_ORDER_NEAR_FIRST;
    mpi_errno = make_plan(&c, order);
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**nomem");

    /* receives first, so that no message arrives unexpected */
    for (int k = 1; k < c.size; k++) {
        int p = (c.rank - k + c.size) % c.size;
        if (c.rbytes[p] && (!merge || c.st->node_of[p] == c.my_node ||
                            c.rbytes[p] > c.merge_max))
            post_direct_recv(&c, p);
    }
    if (merge) {
        ninbox = post_inboxes(&c, &inbox);
        MPIR_ERR_CHKANDJUMP(ninbox < 0, mpi_errno, MPI_ERR_OTHER, "**nomem");
    }
    if (c.sbytes[c.rank] || c.rbytes[c.rank])
        note_error(&c, MPIR_Localcopy(c.sendbuf + sdispls[c.rank] * c.sext, sendcounts[c.rank],
                                      sendtype, c.recvbuf + rdispls[c.rank] * c.rext,
                                      recvcounts[c.rank], recvtype));
    mpi_errno = post_sends(&c, merge);
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**nomem");
    if (merge)
        run_forwarder(&c);

    /* what the forwarders of my node send me first: it may withdraw or add direct receives */
    for (int k = 0; k < ninbox; k++)
        take_inbox(&c, &inbox[k], wait_req(&c, inbox[k].req));
    /* then one by one: MPIC_Waitall ignores the caller's statuses beyond 64 requests, and
     * stops at the first failed one, leaving the rest to the caller */
    for (int i = 0; i < c.nreq; i++)
        if (c.reqs[i])
            wait_req(&c, i);

  fn_exit:
    for (int i = 0; i < c.nbuf; i++)
        MPL_free(c.bufs[i]);
    MPL_free(c.bufs);
    MPL_free(c.reqs);
    MPL_free(inbox);
    MPL_free(c.sbytes);
    MPL_free(c.rbytes);
    MPL_free(c.direct_req);
    MPL_free(c.own);
    if (c.mpi_errno_ret)
        mpi_errno = c.mpi_errno_ret;
    else if (*errflag != MPIR_ERR_NONE)
        MPIR_ERR_SET(mpi_errno, *errflag, "**coll_fail");
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Alltoallv_intra_reorder(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                 const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                                 MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                                 MPIR_Errflag_t * errflag)
{
    return rm_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                        recvtype, comm_ptr, errflag, 1, 0);
}

int MPIR_Alltoallv_intra_merge(const void *sendbuf, const MPI_Aint sendcounts[],
                               const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                               const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                               MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                               MPIR_Errflag_t * errflag)
{
    return rm_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                        recvtype, comm_ptr, errflag, 0, 1);
}

int MPIR_Alltoallv_intra_reorder_merge(const void *sendbuf, const MPI_Aint sendcounts[],
                                       const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                       void *recvbuf, const MPI_Aint recvcounts[],
                                       const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                       MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    return rm_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                        recvtype, comm_ptr, errflag, 1, 1);
}
