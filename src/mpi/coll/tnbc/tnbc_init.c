/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

#include "mpiimpl.h"
#include "tnbc_impl.h"

#include <limits.h>
#include <malloc.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

categories :
    - name        : TNBC
      description : Transparent non-blocking collectives (mpich-tnbc)

cvars:
    - name        : MPIR_CVAR_TNBC_ENABLE
      category    : TNBC
      type        : boolean
      default     : false
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        If true, blocking collectives are offered to the T-NBC family, which returns early and
        finishes the communication in the background, or declines and leaves the call to the
        stock algorithms. Must be the same on every process.

    - name        : MPIR_CVAR_TNBC_COLLECTIVES
      category    : TNBC
      type        : string
      default     : "all"
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Comma-separated list of the collectives T-NBC may take when MPIR_CVAR_TNBC_ENABLE is
        set: "all", "none", collective names such as "alltoall,alltoallv,bcast", and "-name" to
        remove one ("all,-bcast"). Later items override earlier ones. An unknown name makes
        MPI_Init fail.

    - name        : MPIR_CVAR_TNBC_MIN_BYTES
      category    : TNBC
      type        : int
      default     : 4096
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        T-NBC declines a call whose largest sub-message (the data one process moves to or from one
        peer) is smaller than this many bytes: below a few KiB, protecting pages costs more than
        the overlap hides. 0 offers every size.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

MPIR_Tnbc_policy_t MPII_Tnbc_policy;

/* Collectives with a T-NBC schedule builder. */
#define MPII_TNBC_SUPPORTED_COLLS (MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLTOALL) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLTOALLV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLTOALLW) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_BCAST) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLGATHER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLGATHERV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_GATHER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_GATHERV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_SCATTER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_SCATTERV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLREDUCE) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_REDUCE) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_REDUCE_SCATTER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_REDUCE_SCATTER_BLOCK) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_SCAN) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_EXSCAN) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLGATHER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLGATHERV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLW))

/* glibc's default mmap threshold of free()d chunks */
#define MPII_TNBC_MMAP_THRESHOLD (128 * 1024)

static void tune_malloc(void)
{
    /* our free() waits for a send buffer's data and forgets a receive buffer's before the
     * memory goes back to the allocator (src/util/mpir_pageguard/pageguard_alloc.c) */
    if (MPIR_Pageguard_alloc_interposed())
        return;
#ifdef M_MMAP_THRESHOLD
    /* another free() comes first: send-guarded buffers (> MPIR_CVAR_TNBC_SEND_COPY_MAX) must
     * be unmapped by free() outside the allocator's lock, so keep them mmap'd chunks (a fixed
     * threshold; glibc's dynamic one would move them into the heap), and never trim the heap
     * if guards can be smaller */
    mallopt(M_MMAP_THRESHOLD, MPII_TNBC_MMAP_THRESHOLD);
    if (MPIR_CVAR_TNBC_SEND_COPY_MAX < MPII_TNBC_MMAP_THRESHOLD)
        mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

int MPIR_Tnbc_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    char bad_item[64];
    uint32_t mask;

    if (MPIR_Tnbc_parse_coll_list(MPIR_CVAR_TNBC_COLLECTIVES, &mask, bad_item,
                                  sizeof(bad_item)) != 0) {
        MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**cvar_val", "**cvar_val %s %s",
                             "MPIR_CVAR_TNBC_COLLECTIVES", bad_item);
    }
    MPIR_ERR_CHKANDJUMP2(MPIR_CVAR_TNBC_MIN_BYTES < 0, mpi_errno, MPI_ERR_OTHER, "**cvar_val",
                         "**cvar_val %s %s", "MPIR_CVAR_TNBC_MIN_BYTES", "negative");

    MPII_Tnbc_policy.enabled_colls = mask;
    MPII_Tnbc_policy.supported_colls = MPII_TNBC_SUPPORTED_COLLS;
    MPII_Tnbc_policy.min_bytes = (size_t) MPIR_CVAR_TNBC_MIN_BYTES;
    MPII_Tnbc_pvars_register();
    mpi_errno = MPII_Tnbc_access_init();
    MPIR_ERR_CHECK(mpi_errno);
    if (MPIR_CVAR_TNBC_ENABLE)
        tune_malloc();  /* before the application allocates its buffers */

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_finalize(void)
{
    /* the operations were drained and the helper stopped by MPIR_Tnbc_finalize_drain */
    int mpi_errno = MPII_Tnbc_access_finalize();
    int engine_errno = MPII_Tnbc_engine_finalize();
    return mpi_errno ? mpi_errno : engine_errno;
}
