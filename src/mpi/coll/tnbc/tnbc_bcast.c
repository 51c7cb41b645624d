/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Bcast: a binomial tree over segments (tnbc_sched.c). Each process returns once its edge
 * pieces are in; its children get each segment as soon as it has arrived. The root's buffer
 * is copied or made read-only until sent; a derived datatype is packed (root) or received into
 * a temporary buffer and unpacked in the call (other processes). */

#include "mpiimpl.h"
#include "tnbc_impl.h"

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
        later ones are still on the way. Must be the same on every process.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

int MPIR_Tnbc_Bcast(void *buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                    MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, int *tnbc_handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint typesize, actual;
    MPII_Tnbc_start_t args = {.coll = MPIR_TNBC_COLL_BCAST,.comm = comm_ptr };
    MPII_Tnbc_op_t *op = NULL;

    *tnbc_handled = 0;
    MPII_TNBC_SETTLE(buffer, count, datatype);
    MPIR_Datatype_get_size_macro(datatype, typesize);
    size_t nbytes = count > 0 ? count * typesize : 0;

    MPIR_Tnbc_call_facts_t facts = {.coll = MPIR_TNBC_COLL_BCAST,.size_is_global = 1,
        .largest_submsg_bytes = nbytes
    };
    if (MPII_Tnbc_decide(&facts, comm_ptr) != MPIR_TNBC_ACCEPT)
        goto fn_exit;
    *tnbc_handled = 1;

    int rank = comm_ptr->rank, flat = MPII_Tnbc_is_flat(datatype);
    int nseg = MPL_MIN(MPL_MAX(1, MPIR_CVAR_TNBC_BCAST_SEGMENTS), 1024);
    int rc = MPIR_Tnbc_sched_bcast(&args.sched, rank, comm_ptr->local_size, root, nbytes, nseg);
    MPIR_ERR_CHKANDJUMP(rc != MPIR_TNBC_SCHED_OK, mpi_errno, MPI_ERR_OTHER, "**nomem");

    if (rank == root) {
        if (flat) {
            args.send_user = buffer;
        } else {
            args.send_packed = MPL_malloc(nbytes, MPL_MEM_COLL);
            MPIR_ERR_CHKANDJUMP(!args.send_packed, mpi_errno, MPI_ERR_OTHER, "**nomem");
            mpi_errno = MPIR_Typerep_pack(buffer, count, datatype, 0, args.send_packed, nbytes,
                                          &actual);
            MPIR_ERR_CHECK(mpi_errno);
        }
    } else if (flat) {
        args.recv_user = buffer;
    } else {
        args.recv_packed = 1;
    }
    mpi_errno = MPII_Tnbc_launch(&args, &op);
    MPIR_ERR_CHECK(mpi_errno);
    if (op) {
        if (args.recv_packed)
            mpi_errno = MPIR_Typerep_unpack(MPII_Tnbc_op_packed_recv(op), nbytes, buffer,
                                            count, datatype, 0, &actual);
        MPII_Tnbc_op_free(op);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    MPL_free(args.send_packed);
    MPIR_Tnbc_sched_free(&args.sched);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
