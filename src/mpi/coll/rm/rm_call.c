/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* One call of the reorder + merge algorithms: its view of the exchange, the requests and
 * buffers it frees at the end, the errors it collects (a failed piece is recorded and the rest
 * goes on, so that no process waits for a message that will not come). */

#include "mpiimpl.h"
#include "rm_impl.h"

void MPII_Rm_note_error(MPII_Rm_call_t * c, int mpi_errno)
{
    if (!mpi_errno)
        return;
    *c->errflag = (MPIR_ERR_GET_CLASS(mpi_errno) == MPIX_ERR_PROC_FAILED) ?
        MPIR_ERR_PROC_FAILED : MPIR_ERR_OTHER;
    MPIR_ERR_ADD(c->mpi_errno_ret, mpi_errno);
}

/* Errors found in what came (each with its own literal class: MPICH's error-message extraction
 * needs one) */
void MPII_Rm_note_malformed(MPII_Rm_call_t * c)
{
    MPII_Rm_note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                               __LINE__, MPI_ERR_INTERN, "**fail", NULL));
}

void MPII_Rm_note_truncated(MPII_Rm_call_t * c)
{
    MPII_Rm_note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                               __LINE__, MPI_ERR_TRUNCATE, "**truncate",
                                               NULL));
}

/* data expected from a sender that sent none (stock MPICH would wait for ever) */
void MPII_Rm_note_missing(MPII_Rm_call_t * c)
{
    MPII_Rm_note_error(c, MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__,
                                               __LINE__, MPI_ERR_OTHER, "**fail", NULL));
}

MPIR_Request **MPII_Rm_new_req(MPII_Rm_call_t * c)
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

char *MPII_Rm_new_buf(MPII_Rm_call_t * c, size_t bytes)
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
int MPII_Rm_forwarder_of(MPII_Rm_call_t * c, int sender, int node)
{
    const int *start = c->st->node_start;
    return c->st->node_ranks[start[node] + sender % (start[node + 1] - start[node])];
}

/* The position of rank in my node's ranks, or -1 if it is not on my node. */
int MPII_Rm_local_index(MPII_Rm_call_t * c, int rank)
{
    for (int l = 0; l < c->nlocal; l++)
        if (c->local[l] == rank)
            return l;
    return -1;
}

/* Whether process f of my node forwards the stream of sender i. */
int MPII_Rm_forwards_for(MPII_Rm_call_t * c, int f, int i)
{
    return c->st->node_of[i] != c->my_node && MPII_Rm_forwarder_of(c, i, c->my_node) == f;
}

void MPII_Rm_post_direct_recv(MPII_Rm_call_t * c, int p)
{
    MPIR_Request **r = MPII_Rm_new_req(c);
    if (!r) {
        MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
        return;
    }
    c->direct_req[p] = (int) (r - c->reqs);
    MPII_Rm_note_error(c, MPIC_Irecv(c->recvbuf + c->rdispls[p] * c->rext,
                                     c->recvcounts[p], c->recvtype, p, c->tag_direct,
                                     c->comm, r));
}

void MPII_Rm_post_direct_send(MPII_Rm_call_t * c, int p)
{
    MPIR_Request **r = MPII_Rm_new_req(c);
    if (!r) {
        MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
        return;
    }
    MPII_Rm_note_error(c, MPIC_Isend(c->sendbuf + c->sdispls[p] * c->sext,
                                     c->sendcounts[p], c->sendtype, p, c->tag_direct,
                                     c->comm, r, c->errflag));
}

/* Waits for request i, frees it and returns its status. */
MPI_Status MPII_Rm_wait_req(MPII_Rm_call_t * c, int i)
{
    MPI_Status status = {.MPI_ERROR = MPI_ERR_OTHER };
    MPIR_Request *r = c->reqs[i];

    if (!r)
        return status;          /* never posted: its error is already noted */
    MPII_Rm_note_error(c, MPIC_Wait(r, c->errflag));
    status = r->status;
    MPII_Rm_note_error(c, status.MPI_ERROR);
    MPIR_Request_free(r);
    c->reqs[i] = NULL;
    return status;
}

int MPII_Rm_setup_call(MPII_Rm_call_t * c)
{
    MPIR_Comm *comm = c->comm;
    MPI_Aint ssize, rsize;

    c->rank = comm->rank;
    c->size = comm->local_size;
    if (MPIR_Sched_next_tag(comm, &c->tag_direct) || MPIR_Sched_next_tag(comm, &c->tag_aggregate)
        || MPIR_Sched_next_tag(comm, &c->tag_forward))
        return MPI_ERR_OTHER;
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
    c->my_local = MPII_Rm_local_index(c, c->rank);
    c->cap = MPIR_CVAR_REORDER_MERGE_AGGREGATE_MAX > 0 ?
        (size_t) MPIR_CVAR_REORDER_MERGE_AGGREGATE_MAX : 1;
    c->merge_max = MPIR_CVAR_REORDER_MERGE_MSG_MAX > 0 ?
        (size_t) MPIR_CVAR_REORDER_MERGE_MSG_MAX : 0;
    c->direct_req = MPL_malloc(c->size * sizeof(int), MPL_MEM_COLL);
    c->own = MPL_calloc(c->size, sizeof(int), MPL_MEM_COLL);
    if (!c->direct_req || !c->own)
        return MPI_ERR_NO_MEM;
    for (int p = 0; p < c->size; p++)
        c->direct_req[p] = -1;
    c->hdr_max = MPIR_Rm_header_bytes(c->nlocal);
    return MPI_SUCCESS;
}

void MPII_Rm_free_call(MPII_Rm_call_t * c)
{
    for (int i = 0; i < c->nbuf; i++)
        MPL_free(c->bufs[i]);
    MPL_free(c->bufs);
    MPL_free(c->reqs);
    MPL_free(c->sbytes);
    MPL_free(c->rbytes);
    MPL_free(c->direct_req);
    MPL_free(c->own);
}
