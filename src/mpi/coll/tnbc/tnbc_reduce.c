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
#include "tnbc_engine.h"
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

/* One reduction call: the input (count_in elements at sendbuf, or at recvbuf with
 * MPI_IN_PLACE) and where the result goes. */
typedef struct {
    MPIR_Tnbc_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    MPI_Aint count_in;
    MPI_Datatype datatype;
    MPI_Op op;
    int no_result;              /* this process receives nothing (Reduce off the root, Exscan
                                 * on rank 0) */
} MPII_Tnbc_reduction_t;

/* Can the schedules apply this op to this datatype from the progress engine? */
static int op_type_unsupported(MPI_Datatype datatype, MPI_Op op)
{
    return !HANDLE_IS_BUILTIN(op) || !HANDLE_IS_BUILTIN(datatype) ||
        !MPII_Tnbc_is_flat(datatype);
}

static MPIR_Tnbc_decision_t decide(const MPII_Tnbc_reduction_t * r, MPIR_Comm * comm_ptr,
                                   size_t nbytes)
{
    MPIR_Tnbc_call_facts_t facts = {.coll = r->coll,.size_is_global = 1,
        .largest_submsg_bytes = nbytes,
        .op_type_unsupported = op_type_unsupported(r->datatype, r->op)
    };
    return MPII_Tnbc_decide(&facts, comm_ptr);
}

/* Run the schedule a builder put in args->sched (sched_rc: what it returned) for reduction r;
 * the schedule is freed in any case. */
static int launch(MPII_Tnbc_start_t * args, const MPII_Tnbc_reduction_t * r, int sched_rc)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint typesize;

    MPIR_ERR_CHKANDJUMP(sched_rc != MPIR_TNBC_SCHED_OK, mpi_errno, MPI_ERR_OTHER, "**nomem");
    MPIR_Datatype_get_size_macro(r->datatype, typesize);
    args->buf.reduce_type = r->datatype;
    args->buf.reduce_op = r->op;
    args->buf.recv_user = r->no_result ? NULL : r->recvbuf;
    if (r->sendbuf == MPI_IN_PLACE) {
        /* the input is the receive buffer, which the result overwrites */
        size_t nbytes = (size_t) r->count_in * typesize;
        args->buf.send_packed = MPL_malloc(nbytes + 1, MPL_MEM_COLL);
        MPIR_ERR_CHKANDJUMP(!args->buf.send_packed, mpi_errno, MPI_ERR_OTHER, "**nomem");
        memcpy(args->buf.send_packed, r->recvbuf, nbytes);
    } else {
        args->buf.send_user = r->sendbuf;
    }
    /* never waits into a temporary space nor traces: nothing to unpack */
    mpi_errno = MPII_Tnbc_run(args, NULL, NULL, NULL);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPL_free(args->buf.send_packed);
    MPIR_Tnbc_sched_free(&args->sched);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Allreduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                        MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                        int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint typesize;
    MPII_Tnbc_reduction_t r = { MPIR_TNBC_COLL_ALLREDUCE, sendbuf, recvbuf, count, datatype, op };
    MPII_Tnbc_start_t args = {.coll = r.coll,.comm = comm_ptr };

    *tnbc_handled = 0;
    MPIR_TNBC_SETTLE_BUF(sendbuf, count, datatype);
    MPIR_TNBC_SETTLE_BUF(recvbuf, count, datatype);
    MPIR_Datatype_get_size_macro(datatype, typesize);
    size_t nbytes = count > 0 ? (size_t) count * typesize : 0;
    if (decide(&r, comm_ptr, nbytes) != MPIR_TNBC_ACCEPT)
        goto fn_exit;
    *tnbc_handled = 1;

    int rc = MPIR_Tnbc_sched_allreduce(&args.sched, comm_ptr->rank, comm_ptr->local_size,
                                       nbytes, typesize);
    mpi_errno = launch(&args, &r, rc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Reduce(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                     int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint typesize;
    int rank = comm_ptr->rank;
    MPII_Tnbc_reduction_t r = { MPIR_TNBC_COLL_REDUCE, sendbuf, recvbuf, count, datatype, op,
        rank != root
    };
    MPII_Tnbc_start_t args = {.coll = r.coll,.comm = comm_ptr };

    *tnbc_handled = 0;
    MPIR_TNBC_SETTLE_BUF(sendbuf, count, datatype);
    MPIR_TNBC_SETTLE_BUF(recvbuf, count, datatype);
    /* erroneous, and the receive buffer off the root need not be memory */
    MPIR_ERR_CHKANDJUMP(rank != root && sendbuf == MPI_IN_PLACE, mpi_errno, MPI_ERR_BUFFER,
                        "**sendbuf_inplace");
    MPIR_Datatype_get_size_macro(datatype, typesize);
    size_t nbytes = count > 0 ? (size_t) count * typesize : 0;
    if (decide(&r, comm_ptr, nbytes) != MPIR_TNBC_ACCEPT)
        goto fn_exit;
    *tnbc_handled = 1;

    int rc = MPIR_Tnbc_sched_reduce(&args.sched, rank, comm_ptr->local_size, root, nbytes,
                                    typesize);
    mpi_errno = launch(&args, &r, rc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Reduce_scatter and Reduce_scatter_block: block k of the input goes to process k. */
static int reduce_scatter(MPIR_Tnbc_coll_t coll, const void *sendbuf, void *recvbuf,
                          const MPI_Aint recvcounts[], MPI_Aint blockcount,
                          MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                          int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint typesize, total = 0;
    int size = comm_ptr->local_size;
    size_t *bytes = NULL;
    MPII_Tnbc_start_t args = {.coll = coll,.comm = comm_ptr };

    *tnbc_handled = 0;
    MPIR_TNBC_SETTLE_ALL();
    MPIR_Datatype_get_size_macro(datatype, typesize);
    for (int k = 0; k < size; k++)
        total += recvcounts ? recvcounts[k] : blockcount;
    MPII_Tnbc_reduction_t r = { coll, sendbuf, recvbuf, total, datatype, op };
    if (decide(&r, comm_ptr, total > 0 ? (size_t) total * typesize : 0) != MPIR_TNBC_ACCEPT)
        goto fn_exit;
    *tnbc_handled = 1;

    bytes = MPL_malloc(size * sizeof(size_t), MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!bytes, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int k = 0; k < size; k++)
        bytes[k] = (size_t) (recvcounts ? recvcounts[k] : blockcount) * typesize;
    int rc = MPIR_Tnbc_sched_reduce_scatter(&args.sched, comm_ptr->rank, size, bytes, typesize);
    mpi_errno = launch(&args, &r, rc);

  fn_exit:
    MPL_free(bytes);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Reduce_scatter(const void *sendbuf, void *recvbuf, const MPI_Aint recvcounts[],
                             MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                             MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    return reduce_scatter(MPIR_TNBC_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcounts, 0,
                          datatype, op, comm_ptr, tnbc_handled);
}

int MPIR_Tnbc_Reduce_scatter_block(const void *sendbuf, void *recvbuf, MPI_Aint recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                                   MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    return reduce_scatter(MPIR_TNBC_COLL_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, NULL,
                          recvcount, datatype, op, comm_ptr, tnbc_handled);
}

static int scan(MPIR_Tnbc_coll_t coll, const void *sendbuf, void *recvbuf, MPI_Aint count,
                MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint typesize;
    int exclusive = (coll == MPIR_TNBC_COLL_EXSCAN);
    MPII_Tnbc_reduction_t r = { coll, sendbuf, recvbuf, count, datatype, op };
    MPII_Tnbc_start_t args = {.coll = coll,.comm = comm_ptr };

    *tnbc_handled = 0;
    MPIR_TNBC_SETTLE_BUF(sendbuf, count, datatype);
    MPIR_TNBC_SETTLE_BUF(recvbuf, count, datatype);
    MPIR_Datatype_get_size_macro(datatype, typesize);
    size_t nbytes = count > 0 ? (size_t) count * typesize : 0;
    if (decide(&r, comm_ptr, nbytes) != MPIR_TNBC_ACCEPT)
        goto fn_exit;
    *tnbc_handled = 1;

    r.no_result = (exclusive && comm_ptr->rank == 0);   /* undefined there: left as it is */
    int nseg = MPL_MIN(MPL_MAX(1, MPIR_CVAR_TNBC_SCAN_SEGMENTS), 1024);
    int rc = MPIR_Tnbc_sched_scan(&args.sched, comm_ptr->rank, comm_ptr->local_size, nbytes,
                                  typesize, nseg, exclusive);
    mpi_errno = launch(&args, &r, rc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_Scan(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                   MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    return scan(MPIR_TNBC_COLL_SCAN, sendbuf, recvbuf, count, datatype, op, comm_ptr,
                tnbc_handled);
}

int MPIR_Tnbc_Exscan(const void *sendbuf, void *recvbuf, MPI_Aint count, MPI_Datatype datatype,
                     MPI_Op op, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    return scan(MPIR_TNBC_COLL_EXSCAN, sendbuf, recvbuf, count, datatype, op, comm_ptr,
                tnbc_handled);
}
