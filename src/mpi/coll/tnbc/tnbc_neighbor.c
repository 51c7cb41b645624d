/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The neighbour collectives of topology communicators (Cartesian, graph, distributed graph):
 * Neighbor_alltoall(v/w) and Neighbor_allgather(v) on the pairwise engine with the topology's
 * neighbour lists, in the order MPI defines (tnbc_sched.c: MPIR_Tnbc_sched_neighbor).
 * MPI_PROC_NULL neighbours move nothing; repeated neighbours match as in MPICH's own
 * algorithms. Piece sizes may differ between processes, so every call is taken and a process
 * whose pieces are all small waits for them inside the call. */

#include "mpiimpl.h"
#include "tnbc_entry.h"
#include "tnbc_pairwise.h"

/* One call: counts and displacements in elements, one per neighbour; sendcounts NULL: the
 * same sendcount from the start of sendbuf to every neighbour (allgather); recvcounts NULL:
 * recvcount per neighbour, one after the other. With sendtypes/recvtypes
 * (Neighbor_alltoallw), one datatype per neighbour and displacements in bytes. */
typedef struct {
    MPII_Tnbc_pairwise_t pw;    /* first: the pairwise steps take the call as theirs */
    MPI_Aint sendcount, recvcount;
    const MPI_Aint *sendcounts, *sdispls, *recvcounts, *rdispls;
} MPII_Tnbc_neighbor_t;

static int describe(void *call, MPII_Tnbc_start_t * args, MPIR_Tnbc_call_facts_t * facts)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_neighbor_t *c = call;
    MPIR_Coll_nbrs_t *nbrs = &c->pw.nbrs;
    MPIR_Coll_vlayout_t *l = &c->pw.layout;
    int alltoall = (args->coll == MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL);

    mpi_errno = MPIR_Coll_get_nbrs(args->comm, nbrs);
    MPIR_ERR_CHECK(mpi_errno);
    c->pw.by_nbrs = 1;
    nbrs->recv_reversed = alltoall;     /* as the stock path */
    int n = MPL_MAX(nbrs->indegree, nbrs->outdegree);
    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int k = 0; k < nbrs->outdegree; k++) {
        l->sc[k] = c->sendcounts ? c->sendcounts[k] : c->sendcount;
        /* allgather: one piece for everyone (packed once) */
        l->sd[k] = c->sendcounts ? c->sdispls[k] : (alltoall ? k * c->sendcount : 0);
    }
    for (int k = 0; k < nbrs->indegree; k++) {
        l->rc[k] = c->recvcounts ? c->recvcounts[k] : c->recvcount;
        l->rd[k] = c->recvcounts ? c->rdispls[k] : k * c->recvcount;
    }
    c->pw.send.counts = l->sc;
    c->pw.send.displs = l->sd;
    c->pw.recv.counts = l->rc;
    c->pw.recv.displs = l->rd;
    mpi_errno = MPII_Tnbc_pairwise_describe(&c->pw, args, facts);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* settle: NULL, every buffer T-NBC holds (finding the pieces needs the neighbour lists) */
static const MPII_Tnbc_form_t neighbor_form = {
    .needs_topology = 1,.describe = describe,.build = MPII_Tnbc_pairwise_build,
    .finish = MPII_Tnbc_pairwise_finish,
    .hold = MPII_Tnbc_pairwise_hold,.release = MPII_Tnbc_pairwise_release
};

int MPIR_Tnbc_Neighbor_alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                                MPIR_Comm * comm_ptr, MPIR_Request ** tnbc_request,
                                int *tnbc_handled)
{
    MPII_Tnbc_neighbor_t c = {.pw = {.send = {.buf = sendbuf,.type = sendtype},
                                     .recv = {.buf = recvbuf,.type = recvtype}},
        .sendcount = sendcount,.recvcount = recvcount
    };
    return MPII_Tnbc_enter(&neighbor_form, &c, MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL, comm_ptr, NULL,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_alltoallv(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                 const MPI_Aint recvcounts[], const MPI_Aint rdispls[],
                                 MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                                 MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_neighbor_t c = {.pw = {.send = {.buf = sendbuf,.type = sendtype},
                                     .recv = {.buf = recvbuf,.type = recvtype}},
        .sendcounts = sendcounts,.sdispls = sdispls,.recvcounts = recvcounts,.rdispls = rdispls
    };
    return MPII_Tnbc_enter(&neighbor_form, &c, MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLV, comm_ptr, NULL,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_allgather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                                 MPIR_Comm * comm_ptr, MPIR_Request ** tnbc_request,
                                 int *tnbc_handled)
{
    MPII_Tnbc_neighbor_t c = {.pw = {.send = {.buf = sendbuf,.type = sendtype},
                                     .recv = {.buf = recvbuf,.type = recvtype}},
        .sendcount = sendcount,.recvcount = recvcount
    };
    return MPII_Tnbc_enter(&neighbor_form, &c, MPIR_TNBC_COLL_NEIGHBOR_ALLGATHER, comm_ptr, NULL,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_allgatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, const MPI_Aint recvcounts[],
                                  const MPI_Aint displs[], MPI_Datatype recvtype,
                                  MPIR_Comm * comm_ptr, MPIR_Request ** tnbc_request,
                                  int *tnbc_handled)
{
    MPII_Tnbc_neighbor_t c = {.pw = {.send = {.buf = sendbuf,.type = sendtype},
                                     .recv = {.buf = recvbuf,.type = recvtype}},
        .sendcount = sendcount,.recvcounts = recvcounts,.rdispls = displs
    };
    return MPII_Tnbc_enter(&neighbor_form, &c, MPIR_TNBC_COLL_NEIGHBOR_ALLGATHERV, comm_ptr, NULL,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Neighbor_alltoallw(const void *sendbuf, const MPI_Aint sendcounts[],
                                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                 void *recvbuf, const MPI_Aint recvcounts[],
                                 const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                 MPIR_Comm * comm_ptr, MPIR_Request ** tnbc_request,
                                 int *tnbc_handled)
{
    MPII_Tnbc_neighbor_t c = {.pw = {.send = {.buf = sendbuf,.types = sendtypes},
                                     .recv = {.buf = recvbuf,.types = recvtypes}},
        .sendcounts = sendcounts,.sdispls = sdispls,.recvcounts = recvcounts,.rdispls = rdispls
    };
    return MPII_Tnbc_enter(&neighbor_form, &c, MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLW, comm_ptr, NULL,
                           tnbc_request, tnbc_handled);
}
