/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A process that accepted a call and cannot run it (memory ran out before its first message)
 * must not leave its peers waiting for messages that never come, nor draw fewer tags than they
 * did. It withdraws: it sends every message its schedule names, empty and with MPICH's error
 * bit raised, and takes every message the schedule expects without keeping the data. Every
 * peer's call then fails as MPICH's algorithms fail after a peer's error, and the next
 * collectives agree on their tags. Withdrawing needs no memory: the sends are empty, and the
 * messages that come in are found by probing the call's own tags, in whatever order they come
 * (a peer may hold one back until an earlier one was taken). Without a schedule (memory ran
 * out while building it) nothing tells this process what its peers expect: the job ends with a
 * message rather than hang. */

#include "mpiimpl.h"
#include "tnbc_withdraw.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_FAULT_INJECT
      category    : TNBC
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_MPIDEV_DETAIL
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        For tests. The next call T-NBC accepts on this process fails as if memory ran out: 1
        after its schedule was built, before its first message; 2 before its schedule was
        built (the job ends). Reset to 0 once used. Set it on one process (MPI_T) to see that
        the others' calls fail with it instead of waiting.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

int MPII_Tnbc_fault_injected(int stage)
{
    if (MPIR_CVAR_TNBC_FAULT_INJECT != stage)
        return 0;
    MPIR_CVAR_TNBC_FAULT_INJECT = 0;
    return 1;
}

void MPII_Tnbc_give_up(MPIR_Comm * comm, MPIR_Tnbc_coll_t coll, int error)
{
    char msg[200];

    /* MPID_Abort adds the error's own text */
    snprintf(msg, sizeof(msg), "T-NBC: %s failed on this process before its schedule existed; "
             "the other processes cannot be told, so the job ends", MPIR_Tnbc_coll_name(coll));
    MPID_Abort(comm, error, 1, msg);
}

static int send_empty(MPIR_Comm * comm, const MPIR_Tnbc_sched_t * s, const int *tags)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_OTHER;    /* MPIC_Send raises the error bit of the tag */

    for (int i = 0; i < s->n; i++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        if (e->kind != MPIR_TNBC_SEND)
            continue;
        int err = MPIC_Send(NULL, 0, MPI_BYTE, e->peer, tags[e->tag], comm, &errflag);
        MPIR_ERR_ADD(mpi_errno, err);
    }
    return mpi_errno;
}

/* A message longer than the empty receive is truncated: the sender's call completes, the data
 * is dropped, and the truncation is the expected outcome here. */
static int take_expected(MPIR_Comm * comm, const MPIR_Tnbc_sched_t * s, const int *tags,
                         int ntags)
{
    int mpi_errno = MPI_SUCCESS, left = 0;
    MPIR_Errflag_t errflag = MPIR_ERR_OTHER;

    for (int i = 0; i < s->n; i++)
        left += (s->entries[i].kind == MPIR_TNBC_RECV);
    while (left > 0) {
        for (int t = 0; t < ntags && left > 0; t++) {
            int found = 0;
            MPI_Status status;
            /* probing makes progress when it finds nothing */
            mpi_errno = MPID_Iprobe(MPI_ANY_SOURCE, tags[t], comm, MPIR_CONTEXT_INTRA_COLL,
                                    &found, &status);
            MPIR_ERR_CHECK(mpi_errno);
            if (!found)
                continue;
            MPIC_Recv(NULL, 0, MPI_BYTE, status.MPI_SOURCE, tags[t], comm, &status, &errflag);
            left--;
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPII_Tnbc_withdraw(MPIR_Comm * comm, MPIR_Tnbc_coll_t coll, const MPIR_Tnbc_sched_t * s,
                       int error)
{
    int mpi_errno = MPI_SUCCESS;
    int tags[MPIR_TNBC_SCHED_MAX_TAGS];
    int ntags = MPL_MAX(s->ntags, 1);

    if (!s->built || ntags > MPIR_TNBC_SCHED_MAX_TAGS)
        MPII_Tnbc_give_up(comm, coll, error);
    for (int t = 0; t < ntags; t++) {
        mpi_errno = MPIR_Sched_next_tag(comm, &tags[t]);
        MPIR_ERR_CHECK(mpi_errno);
    }
    mpi_errno = send_empty(comm, s, tags);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = take_expected(comm, s, tags, ntags);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
