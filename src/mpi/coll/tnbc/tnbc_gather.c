/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Allgather(v), Gather(v) and Scatter(v) on the pairwise engine (tnbc_alltoall.c): each call
 * is described as per-peer counts and displacements. Allgather sends the same piece to every
 * peer (packed once); Gather sends one piece to the root, which receives from everyone;
 * Scatter the other way round. MPI_IN_PLACE keeps the process's own piece where it is (Gather,
 * Scatter) or sends it from the receive buffer, copied first (Allgather). Arguments a process
 * does not use (recvbuf at a non-root of Gather, ...) are never looked at. */

#include "mpiimpl.h"
#include "tnbc_entry.h"
#include "tnbc_pairwise.h"

/* One call of the family: its arguments as the entry point got them (the v-forms' counts
 * and displacements, or NULL), turned into the pairwise engine's sides by describe. */
typedef struct {
    MPII_Tnbc_pairwise_t pw;    /* first: the pairwise steps take the call as theirs */
    const void *sendbuf;
    MPI_Aint sendcount;
    const MPI_Aint *sendcounts, *sdispls;
    MPI_Datatype sendtype;
    void *recvbuf;
    MPI_Aint recvcount;
    const MPI_Aint *recvcounts, *rdispls;
    MPI_Datatype recvtype;
    int root;
} MPII_Tnbc_gather_t;

/* A side's buffer where n pieces of count, or the v-form's pieces, lie. */
static int settle_pieces(const void *buf, MPI_Aint count, const MPI_Aint * counts,
                         const MPI_Aint * displs, MPI_Datatype type, int n)
{
    if (counts)
        return MPII_Tnbc_settle_v(buf, counts, displs, type, n);
    return MPIR_Tnbc_settle_buf(buf, count * n, type);
}

/* The v-form's pieces (counts, displs), or n pieces of count one after the other, as per-peer
 * counts c and displacements d. */
static void pieces(MPI_Aint count, const MPI_Aint * counts, const MPI_Aint * displs, int n,
                   MPI_Aint * c, MPI_Aint * d)
{
    for (int p = 0; p < n; p++) {
        c[p] = counts ? counts[p] : count;
        d[p] = counts ? displs[p] : p * count;
    }
}

/* regular: Allgather, Gather, Scatter, whose piece sizes every process knows alike (a v-form's
 * counts are only read where they count, and may be NULL elsewhere) */
static int finish_describe(MPII_Tnbc_gather_t * g, MPII_Tnbc_start_t * args,
                           MPIR_Tnbc_call_facts_t * facts, int regular)
{
    MPIR_Coll_vlayout_t *l = &g->pw.layout;
    g->pw.send.counts = l->sc;
    g->pw.send.displs = l->sd;
    g->pw.recv.counts = l->rc;
    g->pw.recv.displs = l->rd;
    g->pw.flags |= regular ? MPII_TNBC_SIZE_IS_GLOBAL : 0;
    return MPII_Tnbc_pairwise_describe(&g->pw, args, facts);
}

/* ---- Allgather, Allgatherv ---- */

static int settle_allgather(const void *call, MPIR_Comm * comm_ptr)
{
    const MPII_Tnbc_gather_t *g = call;
    int mpi_errno = MPIR_Tnbc_settle_buf(g->sendbuf, g->sendcount, g->sendtype);
    return mpi_errno ? mpi_errno : settle_pieces(g->recvbuf, g->recvcount, g->recvcounts,
                                                 g->rdispls, g->recvtype, comm_ptr->local_size);
}

static int describe_allgather(void *call, MPII_Tnbc_start_t * args,
                              MPIR_Tnbc_call_facts_t * facts)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_gather_t *g = call;
    MPIR_Coll_vlayout_t *l = &g->pw.layout;
    int n = args->comm->local_size, rank = args->comm->rank;
    const void *sendbuf = g->sendbuf;
    MPI_Aint sendcount = g->sendcount, rext;
    MPI_Datatype sendtype = g->sendtype;

    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    pieces(g->recvcount, g->recvcounts, g->rdispls, n, l->rc, l->rd);
    if (sendbuf == MPI_IN_PLACE) {
        /* our piece is already in the receive buffer: send it from a copy */
        MPIR_Datatype_get_extent_macro(g->recvtype, rext);
        sendbuf = (const char *) g->recvbuf + l->rd[rank] * rext;
        sendcount = l->rc[rank];
        sendtype = g->recvtype;
        g->pw.flags |= MPII_TNBC_PACK_SEND;
    }
    for (int p = 0; p < n; p++)
        l->sc[p] = sendcount;
    g->pw.send = (MPII_Tnbc_side_t) {.buf = sendbuf,.type = sendtype };
    g->pw.recv = (MPII_Tnbc_side_t) {.buf = g->recvbuf,.type = g->recvtype };
    mpi_errno = finish_describe(g, args, facts, args->coll == MPIR_TNBC_COLL_ALLGATHER);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static const MPII_Tnbc_form_t allgather_form = {
    .settle = settle_allgather,.describe = describe_allgather,
    .build = MPII_Tnbc_pairwise_build,.finish = MPII_Tnbc_pairwise_finish,
    .hold = MPII_Tnbc_pairwise_hold,.release = MPII_Tnbc_pairwise_release
};

int MPIR_Tnbc_Allgather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                        MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_gather_t g = {.sendbuf = sendbuf,.sendcount = sendcount,.sendtype = sendtype,
        .recvbuf = recvbuf,.recvcount = recvcount,.recvtype = recvtype
    };
    return MPII_Tnbc_enter(&allgather_form, &g, MPIR_TNBC_COLL_ALLGATHER, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Allgatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                         void *recvbuf, const MPI_Aint recvcounts[], const MPI_Aint displs[],
                         MPI_Datatype recvtype, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                         MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_gather_t g = {.sendbuf = sendbuf,.sendcount = sendcount,.sendtype = sendtype,
        .recvbuf = recvbuf,.recvcounts = recvcounts,.rdispls = displs,.recvtype = recvtype
    };
    return MPII_Tnbc_enter(&allgather_form, &g, MPIR_TNBC_COLL_ALLGATHERV, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

/* ---- Gather, Gatherv ---- */

static int is_root(MPIR_Comm * comm_ptr, int root)
{
    return comm_ptr->rank == root;
}

static int settle_gather(const void *call, MPIR_Comm * comm_ptr)
{
    const MPII_Tnbc_gather_t *g = call;
    int mpi_errno = MPI_SUCCESS, root = is_root(comm_ptr, g->root);
    if (!root || g->sendbuf != MPI_IN_PLACE)
        mpi_errno = MPIR_Tnbc_settle_buf(g->sendbuf, g->sendcount, g->sendtype);
    if (!mpi_errno && root)
        mpi_errno = settle_pieces(g->recvbuf, g->recvcount, g->recvcounts, g->rdispls,
                                  g->recvtype, comm_ptr->local_size);
    return mpi_errno;
}

static int describe_gather(void *call, MPII_Tnbc_start_t * args, MPIR_Tnbc_call_facts_t * facts)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_gather_t *g = call;
    MPIR_Coll_vlayout_t *l = &g->pw.layout;
    int n = args->comm->local_size, root = g->root;
    MPII_Tnbc_side_t send = {.buf = g->sendbuf,.type = g->sendtype };
    MPII_Tnbc_side_t recv = {.buf = g->recvbuf,.type = g->recvtype };

    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    if (is_root(args->comm, root)) {
        pieces(g->recvcount, g->recvcounts, g->rdispls, n, l->rc, l->rd);
        if (send.buf == MPI_IN_PLACE) {
            l->rc[root] = 0;    /* already in place */
            send = (MPII_Tnbc_side_t) {.buf = NULL,.type = g->recvtype };
        } else {
            l->sc[root] = g->sendcount;
        }
    } else {
        l->sc[root] = g->sendcount;
        /* ignored at non-roots: the type may not be a valid handle */
        recv = (MPII_Tnbc_side_t) {.buf = NULL,.type = g->sendtype };
    }
    g->pw.send = send;
    g->pw.recv = recv;
    mpi_errno = finish_describe(g, args, facts, args->coll == MPIR_TNBC_COLL_GATHER);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static const MPII_Tnbc_form_t gather_form = {
    .settle = settle_gather,.describe = describe_gather,
    .build = MPII_Tnbc_pairwise_build,.finish = MPII_Tnbc_pairwise_finish,
    .hold = MPII_Tnbc_pairwise_hold,.release = MPII_Tnbc_pairwise_release
};

int MPIR_Tnbc_Gather(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void *recvbuf,
                     MPI_Aint recvcount, MPI_Datatype recvtype, int root, MPIR_Comm * comm_ptr,
                     MPIR_Errflag_t * errflag, MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_gather_t g = {.sendbuf = sendbuf,.sendcount = sendcount,.sendtype = sendtype,
        .recvbuf = recvbuf,.recvcount = recvcount,.recvtype = recvtype,.root = root
    };
    return MPII_Tnbc_enter(&gather_form, &g, MPIR_TNBC_COLL_GATHER, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Gatherv(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const MPI_Aint recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                      int root, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                      MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_gather_t g = {.sendbuf = sendbuf,.sendcount = sendcount,.sendtype = sendtype,
        .recvbuf = recvbuf,.recvcounts = recvcounts,.rdispls = displs,.recvtype = recvtype,
        .root = root
    };
    return MPII_Tnbc_enter(&gather_form, &g, MPIR_TNBC_COLL_GATHERV, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

/* ---- Scatter, Scatterv ---- */

static int settle_scatter(const void *call, MPIR_Comm * comm_ptr)
{
    const MPII_Tnbc_gather_t *g = call;
    int mpi_errno = MPI_SUCCESS, root = is_root(comm_ptr, g->root);
    if (root)
        mpi_errno = settle_pieces(g->sendbuf, g->sendcount, g->sendcounts, g->sdispls,
                                  g->sendtype, comm_ptr->local_size);
    if (!mpi_errno && (!root || g->recvbuf != MPI_IN_PLACE))
        mpi_errno = MPIR_Tnbc_settle_buf(g->recvbuf, g->recvcount, g->recvtype);
    return mpi_errno;
}

static int describe_scatter(void *call, MPII_Tnbc_start_t * args,
                            MPIR_Tnbc_call_facts_t * facts)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_gather_t *g = call;
    MPIR_Coll_vlayout_t *l = &g->pw.layout;
    int n = args->comm->local_size, root = g->root;
    MPII_Tnbc_side_t send = {.buf = g->sendbuf,.type = g->sendtype };
    MPII_Tnbc_side_t recv = {.buf = g->recvbuf,.type = g->recvtype };

    MPIR_ERR_CHKANDJUMP(MPIR_Coll_vlayout_alloc(l, n), mpi_errno, MPI_ERR_OTHER, "**nomem");
    if (is_root(args->comm, root)) {
        pieces(g->sendcount, g->sendcounts, g->sdispls, n, l->sc, l->sd);
        if (recv.buf == MPI_IN_PLACE) {
            l->sc[root] = 0;    /* the root keeps its piece where it is */
            recv = (MPII_Tnbc_side_t) {.buf = NULL,.type = g->sendtype };
        } else {
            l->rc[root] = g->recvcount;
        }
    } else {
        l->rc[root] = g->recvcount;
        /* ignored at non-roots: the type may not be a valid handle */
        send = (MPII_Tnbc_side_t) {.buf = NULL,.type = g->recvtype };
    }
    g->pw.send = send;
    g->pw.recv = recv;
    mpi_errno = finish_describe(g, args, facts, args->coll == MPIR_TNBC_COLL_SCATTER);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static const MPII_Tnbc_form_t scatter_form = {
    .settle = settle_scatter,.describe = describe_scatter,
    .build = MPII_Tnbc_pairwise_build,.finish = MPII_Tnbc_pairwise_finish,
    .hold = MPII_Tnbc_pairwise_hold,.release = MPII_Tnbc_pairwise_release
};

int MPIR_Tnbc_Scatter(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                      void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype, int root,
                      MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, MPIR_Request ** tnbc_request,
                      int *tnbc_handled)
{
    MPII_Tnbc_gather_t g = {.sendbuf = sendbuf,.sendcount = sendcount,.sendtype = sendtype,
        .recvbuf = recvbuf,.recvcount = recvcount,.recvtype = recvtype,.root = root
    };
    return MPII_Tnbc_enter(&scatter_form, &g, MPIR_TNBC_COLL_SCATTER, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Scatterv(const void *sendbuf, const MPI_Aint sendcounts[], const MPI_Aint displs[],
                       MPI_Datatype sendtype, void *recvbuf, MPI_Aint recvcount,
                       MPI_Datatype recvtype, int root, MPIR_Comm * comm_ptr,
                       MPIR_Errflag_t * errflag, MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_gather_t g = {.sendbuf = sendbuf,.sendcounts = sendcounts,.sdispls = displs,
        .sendtype = sendtype,.recvbuf = recvbuf,.recvcount = recvcount,.recvtype = recvtype,
        .root = root
    };
    return MPII_Tnbc_enter(&scatter_form, &g, MPIR_TNBC_COLL_SCATTERV, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}
