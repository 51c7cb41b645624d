/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* One count and displacement per peer: the form both mpich-tnbc families (T-NBC's pairwise
 * engine and the reorder + merge exchange) turn Alltoall and the neighbourhood collectives
 * into, a topology communicator's neighbour lists to build it from, and the node of a peer. */

#ifndef COLL_PEERS_H_INCLUDED
#define COLL_PEERS_H_INCLUDED

/* The node of a rank (MPICH's node id), or -1 for a process of another world (spawn,
 * connect/accept). */
static inline int MPIR_Coll_node_of(MPIR_Comm * comm, int rank)
{
    int id;
    return MPID_Get_node_id(comm, rank, &id) == MPI_SUCCESS ? id : -1;
}

/* Neighbour lists of a topology communicator (MPI_PROC_NULL entries move nothing). */
typedef struct {
    int indegree, outdegree;
    int *srcs, *dsts;
    int recv_reversed;          /* repeated neighbours match in reverse srcs order (as
                                 * Neighbor_alltoall's stock algorithm matches them) */
} MPIR_Coll_nbrs_t;

/* The neighbour lists of a topology communicator, in MPI's order (free with
 * MPL_free(nbrs->srcs)). */
static inline int MPIR_Coll_get_nbrs(MPIR_Comm * comm_ptr, MPIR_Coll_nbrs_t * nbrs)
{
    int mpi_errno = MPI_SUCCESS, weighted;

    nbrs->srcs = nbrs->dsts = NULL;
    nbrs->recv_reversed = 0;
    mpi_errno = MPIR_Topo_canon_nhb_count(comm_ptr, &nbrs->indegree, &nbrs->outdegree,
                                          &weighted);
    MPIR_ERR_CHECK(mpi_errno);
    nbrs->srcs = MPL_malloc((nbrs->indegree + nbrs->outdegree + 1) * sizeof(int), MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!nbrs->srcs, mpi_errno, MPI_ERR_OTHER, "**nomem");
    nbrs->dsts = nbrs->srcs + nbrs->indegree;
    mpi_errno = MPIR_Topo_canon_nhb(comm_ptr, nbrs->indegree, nbrs->srcs, MPI_UNWEIGHTED,
                                    nbrs->outdegree, nbrs->dsts, MPI_UNWEIGHTED);
    MPIR_ERR_CHECK(mpi_errno);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Per-peer send/receive counts and displacements: four arrays of n, zeroed, in one allocation
 * (free with MPL_free(l.sc)). */
typedef struct {
    MPI_Aint *sc, *sd, *rc, *rd;
} MPIR_Coll_vlayout_t;

static inline int MPIR_Coll_vlayout_alloc(MPIR_Coll_vlayout_t * l, int n)
{
    MPI_Aint *v = MPL_calloc(4 * (size_t) n + 1, sizeof(MPI_Aint), MPL_MEM_COLL);
    if (!v)
        return MPI_ERR_NO_MEM;
    l->sc = v;
    l->sd = v + n;
    l->rc = v + 2 * n;
    l->rd = v + 3 * n;
    return MPI_SUCCESS;
}

/* An Alltoall's regular layout as a v-layout: count elements per peer, one after the other. */
static inline int MPIR_Coll_vlayout_regular(MPIR_Coll_vlayout_t * l, int n, MPI_Aint sendcount,
                                            MPI_Aint recvcount)
{
    if (MPIR_Coll_vlayout_alloc(l, n))
        return MPI_ERR_NO_MEM;
    for (int p = 0; p < n; p++) {
        l->sc[p] = sendcount;
        l->sd[p] = p * sendcount;
        l->rc[p] = recvcount;
        l->rd[p] = p * recvcount;
    }
    return MPI_SUCCESS;
}

#endif /* COLL_PEERS_H_INCLUDED */
