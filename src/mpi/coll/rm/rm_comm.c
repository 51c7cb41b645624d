/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What a communicator keeps for the reorder + merge algorithms (an attribute, freed with it):
 * its nodes, the node graph learnt by an Allreduce every MPIR_CVAR_REORDER_MERGE_GRAPH_REFRESH
 * calls, and the last plan with the key it was made for. */

#include "mpiimpl.h"
#include "coll_peers.h"
#include "reorder_merge.h"
#include "rm_impl.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_REORDER_MERGE_GRAPH_REFRESH
      category    : COLLECTIVE
      alt-env     : MPIR_CVAR_TNBC_RM_REFRESH
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

static int rm_keyval = MPI_KEYVAL_INVALID;


static int rm_delete_fn(MPI_Comm comm, int keyval, void *attr_val, void *extra)
{
    MPII_Rm_comm_t *st = attr_val;
    MPL_free(st->node_of);
    MPL_free(st->node_start);
    MPL_free(st->node_ranks);
    MPL_free(st->graph);
    MPL_free(st->msgs);
    MPIR_Rm_cache_free(&st->cache);
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

/* Dense node indices in order of first appearance along the ranks. A process knows no node id
 * for the processes of another world (spawn, connect/accept), and each would map differently:
 * when any id is unknown, every rank is a node of its own, alike on every process. */
static int map_nodes(MPIR_Comm * comm, MPII_Rm_comm_t * st)
{
    int size = comm->local_size, all_known = 1;
    int *ids = MPL_malloc(size * sizeof(int), MPL_MEM_COLL);
    st->node_of = MPL_malloc(size * sizeof(int), MPL_MEM_COLL);
    if (!ids || !st->node_of) {
        MPL_free(ids);
        return MPI_ERR_NO_MEM;
    }
    for (int r = 0; r < size && all_known; r++)
        all_known = MPIR_Coll_node_of(comm, r) >= 0;
    st->nnodes = 0;
    for (int r = 0; r < size; r++) {
        int id = all_known ? MPIR_Coll_node_of(comm, r) : -1 - r, k;
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
    int k = 0;
    for (int b = 0; b < st->nnodes; b++) {
        st->node_start[b] = k;
        for (int r = 0; r < size; r++)
            if (st->node_of[r] == b)
                st->node_ranks[k++] = r;
    }
    st->node_start[st->nnodes] = k;
    return MPI_SUCCESS;
}

int MPII_Rm_comm_get(MPIR_Comm * comm, MPII_Rm_comm_t ** out)
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
        st->nbrs_simple = -1;
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

/* The node graph: every process adds its row; an Allreduce sums them. */
static int learn_graph(MPII_Rm_call_t * c)
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

/* Learns the node graph on the first call on the communicator and every
 * MPIR_CVAR_REORDER_MERGE_GRAPH_REFRESH calls: a count every process agrees on, so all take
 * part. */
int MPII_Rm_update_graph(MPII_Rm_call_t * c)
{
    int mpi_errno = MPI_SUCCESS;
    uint64_t refresh = MPIR_CVAR_REORDER_MERGE_GRAPH_REFRESH > 0 ?
        MPIR_CVAR_REORDER_MERGE_GRAPH_REFRESH : 0;

    if (c->st->calls == 0 || (refresh && c->st->calls % refresh == 0))
        mpi_errno = learn_graph(c);
    c->st->calls++;
    return mpi_errno;
}

/* The ordered list of the messages of rank (self excluded), kept in st while the counts and the
 * graph stay the same; without reordering, in ring order. Before the graph is known a message
 * weighs what its sender sends in all, so the order is by node distance alone. */
static int plan(MPII_Rm_comm_t * st, int rank, int size, const size_t * sbytes,
                const size_t * rbytes, int reorder)
{
    MPIR_Rm_order_t order = !reorder ? MPIR_RM_ORDER_RING :
        (MPIR_CVAR_REORDER_MERGE_DISTANCE == MPIR_CVAR_REORDER_MERGE_DISTANCE_far_first) ?
        MPIR_RM_ORDER_FAR_FIRST : MPIR_RM_ORDER_NEAR_FIRST;
    uint64_t sig = MPIR_Rm_signature(sbytes, rbytes, size) ^ (uint64_t) order;

    if (MPIR_Rm_cache_lookup(&st->cache, sig, st->graph_gen, sbytes, rbytes, size))
        return MPI_SUCCESS;
    MPIR_Rm_msg_t *m = MPL_realloc(st->msgs, size * sizeof(*m), MPL_MEM_COLL);
    if (!m) {
        st->cache.valid = 0;
        return MPI_ERR_NO_MEM;
    }
    st->msgs = m;
    st->nmsg = 0;
    int64_t sent = 0;
    for (int p = 0; p < size; p++)
        sent += (int64_t) sbytes[p];
    for (int p = 0; p < size; p++) {
        if (p == rank || sbytes[p] == 0)
            continue;
        int64_t recv = st->graph ? st->graph[p] : 0;
        m[st->nmsg++] = (MPIR_Rm_msg_t) {.peer = p,.node = st->node_of[p],
            .bytes = sbytes[p],.weight = sent > recv ? sent : recv
        };
    }
    MPIR_Rm_order(m, st->nmsg, st->node_of[rank], rank, size, order);
    return MPI_SUCCESS;
}

int MPII_Rm_plan(MPII_Rm_call_t * c, int reorder)
{
    return plan(c->st, c->rank, c->size, c->sbytes, c->rbytes, reorder);
}

/* T-NBC's Alltoall(v) schedule posts its sends in the plan's order as the blocking algorithm
 * would (merging stays the blocking algorithm's); see reorder_merge.h. */
const int *MPIR_Rm_send_order(MPIR_Rm_form_t form, MPIR_Comm * comm, const size_t * sbytes,
                              const size_t * rbytes, int *send_pos)
{
    MPII_Rm_comm_t *st;
    int reorder = 0;

    if (form == MPIR_RM_FORM_ALLTOALL)
        reorder = (MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM ==
                   MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM_reorder ||
                   MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM ==
                   MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM_reorder_merge);
    else if (form == MPIR_RM_FORM_ALLTOALLV)
        reorder = (MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM ==
                   MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM_reorder ||
                   MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM ==
                   MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM_reorder_merge);
    if (!reorder || MPII_Rm_comm_get(comm, &st) ||
        plan(st, comm->rank, comm->local_size, sbytes, rbytes, 1))
        return NULL;    /* the order never changes what matches what */
    for (int p = 0; p < comm->local_size; p++)
        send_pos[p] = comm->local_size;
    for (int i = 0; i < st->nmsg; i++)
        send_pos[st->msgs[i].peer] = i;
    return send_pos;
}
