/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The reductions: Allreduce, Reduce, Reduce_scatter(_block), Scan and Exscan on the schedules
 * of tnbc_sched_reduce.c. The progress engine applies the op (MPIR_Reduce_local) as partial
 * results arrive, so it may run on the helper thread after the call returned: only predefined
 * ops (all commutative, no application code) on one predefined, gap-free datatype are taken;
 * a user-defined op or a derived or padded datatype (e.g. MPI_DOUBLE_INT) is declined, which
 * every process decides alike because op, datatype and count are the same everywhere. With
 * MPI_IN_PLACE the input is copied first: the receive buffer is overwritten by the result. */

#include "mpiimpl.h"
#include "tnbc_entry.h"
#include "tnbc_op.h"
#include "tnbc_util.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_SCAN_SEGMENTS
      category    : TNBC
      type        : int
      default     : 4
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        A T-NBC Scan or Exscan passes its prefix along the ranks in this many segments, so rank
        k + 1 works on a segment while rank k computes the next. Must be the same on every
        process.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* One reduction call: the input (count elements at sendbuf, or at recvbuf with MPI_IN_PLACE;
 * Reduce_scatter(_block): the sum of the blocks) and where the result goes. */
typedef struct {
    const void *sendbuf;
    void *recvbuf;
    MPI_Aint count;
    const MPI_Aint *recvcounts; /* Reduce_scatter; NULL: blockcount each (_block) */
    MPI_Aint blockcount;
    MPI_Datatype datatype;
    MPI_Op op;
    int root;                   /* Reduce */
    /* found by describe */
    MPI_Aint typesize;
    size_t nbytes;              /* of the input */
    size_t *block_bytes;        /* Reduce_scatter(_block): per process */
    int no_result;              /* this process receives nothing (Reduce off the root, Exscan
                                 * on rank 0) */
} MPII_Tnbc_reduction_t;

/* Can the schedules apply this op to this datatype from the progress engine? */
static int op_type_unsupported(MPI_Datatype datatype, MPI_Op op)
{
    return !HANDLE_IS_BUILTIN(op) || !HANDLE_IS_BUILTIN(datatype) ||
        !MPII_Tnbc_is_flat(datatype);
}

static int settle_in_out(const void *call, MPIR_Comm * comm_ptr)
{
    const MPII_Tnbc_reduction_t *r = call;
    int mpi_errno = MPIR_Tnbc_settle_buf(r->sendbuf, r->count, r->datatype);
    return mpi_errno ? mpi_errno : MPIR_Tnbc_settle_buf(r->recvbuf, r->count, r->datatype);
}

static int describe(void *call, MPII_Tnbc_start_t * args, MPIR_Tnbc_call_facts_t * facts)
{
    MPII_Tnbc_reduction_t *r = call;
    MPIR_Datatype_get_size_macro(r->datatype, r->typesize);
    r->nbytes = r->count > 0 ? (size_t) r->count * r->typesize : 0;
    facts->size_is_global = 1;
    facts->largest_submsg_bytes = r->nbytes;
    facts->op_type_unsupported = op_type_unsupported(r->datatype, r->op);
    return MPI_SUCCESS;
}

/* The input and the result, for the schedule a build put in args->sched (sched_rc: what the
 * schedule builder returned). */
static int place_buffers(MPII_Tnbc_start_t * args, const MPII_Tnbc_reduction_t * r,
                         int sched_rc)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_ERR_CHKANDJUMP(sched_rc != MPIR_TNBC_SCHED_OK, mpi_errno, MPI_ERR_OTHER, "**nomem");
    args->buf.reduce_type = r->datatype;
    args->buf.reduce_op = r->op;
    args->buf.recv_user = r->no_result ? NULL : r->recvbuf;
    if (r->sendbuf == MPI_IN_PLACE) {
        /* the input is the receive buffer, which the result overwrites */
        args->buf.send_packed = MPL_malloc(r->nbytes + 1, MPL_MEM_COLL);
        MPIR_ERR_CHKANDJUMP(!args->buf.send_packed, mpi_errno, MPI_ERR_OTHER, "**nomem");
        memcpy(args->buf.send_packed, r->recvbuf, r->nbytes);
    } else {
        args->buf.send_user = r->sendbuf;
    }
    /* never waits into a temporary space nor traces: nothing to unpack */
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int build_allreduce(void *call, MPII_Tnbc_start_t * args, MPII_Tnbc_launch_t * launch)
{
    MPII_Tnbc_reduction_t *r = call;
    MPIR_Comm *comm = args->comm;
    return place_buffers(args, r, MPIR_Tnbc_sched_allreduce(&args->sched, comm->rank,
                                                            comm->local_size, r->nbytes,
                                                            r->typesize));
}

static const MPII_Tnbc_form_t allreduce_form = {
    .settle = settle_in_out,.describe = describe,.build = build_allreduce
};

int MPIR_Tnbc_Allreduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                        MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                        MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_reduction_t r = {.sendbuf = sendbuf,.recvbuf = recvbuf,.count = count,
        .datatype = datatype,.op = op
    };
    return MPII_Tnbc_enter(&allreduce_form, &r, MPIR_TNBC_COLL_ALLREDUCE, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

static int describe_reduce(void *call, MPII_Tnbc_start_t * args, MPIR_Tnbc_call_facts_t * facts)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_reduction_t *r = call;

    r->no_result = (args->comm->rank != r->root);
    /* erroneous, and the receive buffer off the root need not be memory */
    MPIR_ERR_CHKANDJUMP(r->no_result && r->sendbuf == MPI_IN_PLACE, mpi_errno, MPI_ERR_BUFFER,
                        "**sendbuf_inplace");
    mpi_errno = describe(call, args, facts);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int build_reduce(void *call, MPII_Tnbc_start_t * args, MPII_Tnbc_launch_t * launch)
{
    MPII_Tnbc_reduction_t *r = call;
    MPIR_Comm *comm = args->comm;
    return place_buffers(args, r, MPIR_Tnbc_sched_reduce(&args->sched, comm->rank,
                                                         comm->local_size, r->root, r->nbytes,
                                                         r->typesize));
}

static const MPII_Tnbc_form_t reduce_form = {
    .settle = settle_in_out,.describe = describe_reduce,.build = build_reduce
};

int MPIR_Tnbc_Reduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                     MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_reduction_t r = {.sendbuf = sendbuf,.recvbuf = recvbuf,.count = count,
        .datatype = datatype,.op = op,.root = root
    };
    return MPII_Tnbc_enter(&reduce_form, &r, MPIR_TNBC_COLL_REDUCE, comm_ptr, errflag,
                           tnbc_request, tnbc_handled);
}

/* Reduce_scatter and Reduce_scatter_block: block k of the input goes to process k. */
static int describe_reduce_scatter(void *call, MPII_Tnbc_start_t * args,
                                   MPIR_Tnbc_call_facts_t * facts)
{
    MPII_Tnbc_reduction_t *r = call;
    int size = args->comm->local_size;

    r->count = 0;
    for (int k = 0; k < size; k++)
        r->count += r->recvcounts ? r->recvcounts[k] : r->blockcount;
    return describe(call, args, facts);
}

static int build_reduce_scatter(void *call, MPII_Tnbc_start_t * args,
                                MPII_Tnbc_launch_t * launch)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_reduction_t *r = call;
    int size = args->comm->local_size;

    r->block_bytes = MPL_malloc(size * sizeof(size_t), MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!r->block_bytes, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int k = 0; k < size; k++)
        r->block_bytes[k] = (size_t) (r->recvcounts ? r->recvcounts[k] : r->blockcount) *
            r->typesize;
    mpi_errno = place_buffers(args, r,
                              MPIR_Tnbc_sched_reduce_scatter(&args->sched, args->comm->rank,
                                                             size, r->block_bytes,
                                                             r->typesize));
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static void free_block_bytes(void *call)
{
    MPL_free(((MPII_Tnbc_reduction_t *) call)->block_bytes);
}

/* settle: NULL, the input's and the blocks' spans are not worth finding */
static const MPII_Tnbc_form_t reduce_scatter_form = {
    .describe = describe_reduce_scatter,.build = build_reduce_scatter,.finish = free_block_bytes
};

int MPIR_Tnbc_Reduce_scatter(const void *sendbuf, void *recvbuf, const MPI_Aint recvcounts[],
                             MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                             MPIR_Errflag_t * errflag, MPIR_Request ** tnbc_request,
                             int *tnbc_handled)
{
    MPII_Tnbc_reduction_t r = {.sendbuf = sendbuf,.recvbuf = recvbuf,.recvcounts = recvcounts,
        .datatype = datatype,.op = op
    };
    return MPII_Tnbc_enter(&reduce_scatter_form, &r, MPIR_TNBC_COLL_REDUCE_SCATTER, comm_ptr,
                           errflag, tnbc_request, tnbc_handled);
}

int MPIR_Tnbc_Reduce_scatter_block(const void *sendbuf, void *recvbuf, MPI_Aint recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                                   MPIR_Errflag_t * errflag, MPIR_Request ** tnbc_request,
                                   int *tnbc_handled)
{
    MPII_Tnbc_reduction_t r = {.sendbuf = sendbuf,.recvbuf = recvbuf,.blockcount = recvcount,
        .datatype = datatype,.op = op
    };
    return MPII_Tnbc_enter(&reduce_scatter_form, &r, MPIR_TNBC_COLL_REDUCE_SCATTER_BLOCK, comm_ptr,
                           errflag, tnbc_request, tnbc_handled);
}

static int build_scan(void *call, MPII_Tnbc_start_t * args, MPII_Tnbc_launch_t * launch)
{
    MPII_Tnbc_reduction_t *r = call;
    int exclusive = (args->coll == MPIR_TNBC_COLL_EXSCAN);
    int nseg = MPII_Tnbc_policy.scan_segments;

    r->no_result = (exclusive && args->comm->rank == 0);        /* undefined there: left as it is */
    return place_buffers(args, r, MPIR_Tnbc_sched_scan(&args->sched, args->comm->rank,
                                                       args->comm->local_size, r->nbytes,
                                                       r->typesize, nseg, exclusive));
}

static const MPII_Tnbc_form_t scan_form = {
    .settle = settle_in_out,.describe = describe,.build = build_scan
};

int MPIR_Tnbc_Scan(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                   MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                   MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_reduction_t r = {.sendbuf = sendbuf,.recvbuf = recvbuf,.count = count,
        .datatype = datatype,.op = op
    };
    return MPII_Tnbc_enter(&scan_form, &r, MPIR_TNBC_COLL_SCAN, comm_ptr, errflag, tnbc_request,
                           tnbc_handled);
}

int MPIR_Tnbc_Exscan(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                     MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                     MPIR_Request ** tnbc_request, int *tnbc_handled)
{
    MPII_Tnbc_reduction_t r = {.sendbuf = sendbuf,.recvbuf = recvbuf,.count = count,
        .datatype = datatype,.op = op
    };
    return MPII_Tnbc_enter(&scan_form, &r, MPIR_TNBC_COLL_EXSCAN, comm_ptr, errflag, tnbc_request,
                           tnbc_handled);
}
