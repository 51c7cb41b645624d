/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The exchange of the "reorder", "merge" and "reorder_merge" algorithms (selected as MPICH
 * selects any algorithm; the entry points are rm_forms.c), planned by rm_plan.c.
 *
 * Every process sends its messages in plan order. With merging, its messages of at most
 * MPIR_CVAR_REORDER_MERGE_MSG_MAX bytes for a remote node go as one stream of growing aggregates to
 * that node's forwarder for this sender (rm_forward.c); every sender sends one stream to
 * every other node, empty or not, so a forwarder knows whom to expect without asking, and the
 * stream announces the messages sent directly. Intra-node and larger messages go directly.
 * The node graph and the plan are kept per communicator (rm_comm.c). */

#include "mpiimpl.h"
#include "rm_impl.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_REORDER_MERGE_DISTANCE
      category    : COLLECTIVE
      alt-env     : MPIR_CVAR_TNBC_RM_DISTANCE
      type        : enum
      default     : near_first
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : |-
        Node-pair distance order of the reorder and reorder_merge algorithms
        near_first - messages to nearer nodes (by node number) first
        far_first  - messages to farther nodes first

    - name        : MPIR_CVAR_REORDER_MERGE_FIRST_BYTES
      category    : COLLECTIVE
      alt-env     : MPIR_CVAR_TNBC_RM_FIRST_BYTES
      type        : int
      default     : 4096
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Payload of the first aggregate of a merged stream; each next one is alpha times larger
        (alpha = 1.5 + log2 of the larger node degree of the pair).

    - name        : MPIR_CVAR_REORDER_MERGE_MSG_MAX
      category    : COLLECTIVE
      alt-env     : MPIR_CVAR_TNBC_RM_MERGE_MAX
      type        : int
      default     : 4096
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        The merge algorithms merge messages to other nodes of at most this many bytes; larger
        ones go directly: their wire time outweighs a message's overhead, and forwarding them
        costs a copy and a hop.

    - name        : MPIR_CVAR_REORDER_MERGE_AGGREGATE_MAX
      category    : COLLECTIVE
      alt-env     : MPIR_CVAR_TNBC_RM_AGGREGATE_MAX
      type        : int
      default     : 1048576
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Largest payload of one aggregate of the merge algorithms (receivers size their buffers
        by it, so it must be the same on every process).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

typedef struct {
    int node, fwd;
    int n;                      /* messages, in plan order */
    int *peers;
    size_t *bytes;
    int nd;                     /* messages sent directly, announced in aggregate 0 */
    int *direct_peers;
    size_t *direct_bytes;
    char **staged;              /* non-contiguous send type: each message packed whole */
    MPIR_Rm_split_t split;
} MPII_Rm_stream_t;

static void send_aggregate(MPII_Rm_call_t * c, MPII_Rm_stream_t * s, int a)
{
    int f0 = s->split.first[a], nf = s->split.first[a + 1] - f0, nd = (a == 0) ? s->nd : 0;
    MPIR_Rm_wire_frag_t wf[nf + nd > 0 ? nf + nd : 1];
    size_t payload = 0;

    for (int k = 0; k < nd; k++)
        wf[nf + k] = (MPIR_Rm_wire_frag_t) {.dst = s->direct_peers[k],
            .total = s->direct_bytes[k],.off = MPIR_RM_DIRECT_OFF,.len = 0
        };
    for (int k = 0; k < nf; k++) {
        const MPIR_Rm_frag_t *f = &s->split.frags[f0 + k];
        wf[k] = (MPIR_Rm_wire_frag_t) {.dst = s->peers[f->msg],.total = s->bytes[f->msg],
            .off = f->off,.len = f->len
        };
        payload += f->len;
    }
    char *buf = MPII_Rm_new_buf(c, MPIR_Rm_header_bytes(nf + nd) + payload);
    MPIR_Request **r = MPII_Rm_new_req(c);
    if (!buf || !r) {
        MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
        return;
    }
    char *p = MPIR_Rm_write_header(buf, nf + nd, a == s->split.nagg - 1, wf);
    for (int k = 0; k < nf; k++) {
        int peer = (int) wf[k].dst, msg = s->split.frags[f0 + k].msg;
        MPI_Aint actual;
        if (c->send_contig) {
            memcpy(p, c->sendbuf + c->sdispls[peer] * c->sext + c->send_true_lb + wf[k].off,
                   wf[k].len);
        } else {
            /* a fragment may end inside an element: pack the message whole once */
            if (!s->staged[msg]) {
                s->staged[msg] = MPII_Rm_new_buf(c, wf[k].total);
                if (!s->staged[msg]) {
                    MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
                    return;
                }
                const char *from = c->sendbuf + c->sdispls[peer] * c->sext;
                MPII_Rm_note_error(c, MPIR_Typerep_pack(from, c->sendcounts[peer],
                                                        c->sendtype, 0, s->staged[msg],
                                                        wf[k].total, &actual));
            }
            memcpy(p, s->staged[msg] + wf[k].off, wf[k].len);
        }
        p += wf[k].len;
    }
    MPII_Rm_note_error(c, MPIC_Isend(buf, (MPI_Aint) (p - buf), MPI_BYTE, s->fwd,
                                     c->tag_aggregate, c->comm, r, c->errflag));
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
    for (int i = 0; i < st->nmsg; i++) {
        int b = st->msgs[i].node;
        if (b != c->my_node && slot[b] < 0) {
            slot[b] = ns;
            s[ns++].node = b;
        }
    }
    for (int k = 1; k < nn; k++) {      /* nodes with no message, in ring order from ours */
        int b = (c->my_node + k) % nn;
        if (slot[b] < 0) {
            slot[b] = ns;
            s[ns++].node = b;
        }
    }
    int rc = MPI_SUCCESS;
    for (int k = 0; k < ns && rc == MPI_SUCCESS; k++) {
        s[k].fwd = MPII_Rm_forwarder_of(c, c->rank, s[k].node);
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
        double alpha = MPIR_Rm_alpha(st->graph + c->size, nn, c->my_node, s[k].node);
        if (MPIR_Rm_split(s[k].bytes, s[k].n, MPIR_CVAR_REORDER_MERGE_FIRST_BYTES > 0 ?
                          (size_t) MPIR_CVAR_REORDER_MERGE_FIRST_BYTES : 1, alpha, c->cap,
                          &s[k].split) != MPIR_RM_OK)
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
        MPIR_Rm_split_free(&s[k].split);
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
            MPII_Rm_post_direct_send(c, st->msgs[i].peer);
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
            MPII_Rm_post_direct_send(c, st->msgs[i].peer);
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

/* Direct receives (from my node, above the merge limit, or all without merging), and one
 * message from every forwarder of my node. */
static int post_recvs(MPII_Rm_call_t * c, int merge, MPII_Rm_inbox_t ** inbox)
{
    for (int k = 1; k < c->size; k++) {
        int p = (c->rank - k + c->size) % c->size;
        if (c->rbytes[p] && (!merge || c->st->node_of[p] == c->my_node ||
                             c->rbytes[p] > c->merge_max))
            MPII_Rm_post_direct_recv(c, p);
    }
    return merge ? MPII_Rm_post_inboxes(c, inbox) : 0;
}

static void copy_to_self(MPII_Rm_call_t * c)
{
    int me = c->rank;
    if (c->sbytes[me] || c->rbytes[me])
        MPII_Rm_note_error(c, MPIR_Localcopy(c->sendbuf + c->sdispls[me] * c->sext,
                                             c->sendcounts[me], c->sendtype,
                                             c->recvbuf + c->rdispls[me] * c->rext,
                                             c->recvcounts[me], c->recvtype));
}

/* What the forwarders of my node sent me first (it may withdraw or add direct receives), then
 * every other request, one by one: MPIC_Waitall ignores the caller's statuses beyond 64
 * requests and stops at the first failed one, leaving the rest to the caller. */
static void complete(MPII_Rm_call_t * c, MPII_Rm_inbox_t * inbox, int ninbox)
{
    for (int k = 0; k < ninbox; k++) {
        MPI_Status status = MPII_Rm_wait_req(c, inbox[k].req);
        MPII_Rm_take_inbox(c, &inbox[k], &status);
    }
    for (int i = 0; i < c->nreq; i++)
        if (c->reqs[i])
            MPII_Rm_wait_req(c, i);
}

/* The exchange of an Alltoallv (the other forms become one, rm_forms.c); not in place. */
int MPII_Rm_exchange(const void *sendbuf, const MPI_Aint * sendcounts,
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

    MPII_Rm_count(MPII_RM_EXCHANGE);
    mpi_errno = MPII_Rm_comm_get(comm_ptr, &c.st);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPII_Rm_setup_call(&c);
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**nomem");
    mpi_errno = MPII_Rm_update_graph(&c);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPII_Rm_plan(&c, reorder);
    MPIR_ERR_CHKANDJUMP(mpi_errno, mpi_errno, MPI_ERR_OTHER, "**nomem");

    /* from the first send on, errors are noted and the call goes on: others wait for our
     * messages, and our buffers must outlive our requests. Sends go first: a large message's
     * rendezvous starts at once, and its receiver finds it when it posts. */
    MPII_Rm_note_error(&c, post_sends(&c, merge));
    ninbox = post_recvs(&c, merge, &inbox);
    if (ninbox < 0) {
        MPII_Rm_note_error(&c, MPI_ERR_NO_MEM);
        ninbox = 0;
    }
    copy_to_self(&c);
    if (merge)
        MPII_Rm_forward(&c);
    complete(&c, inbox, ninbox);

  fn_exit:
    MPL_free(inbox);
    MPII_Rm_free_call(&c);
    if (c.mpi_errno_ret)
        mpi_errno = c.mpi_errno_ret;
    else if (*errflag != MPIR_ERR_NONE)
        MPIR_ERR_SET(mpi_errno, *errflag, "**coll_fail");
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
