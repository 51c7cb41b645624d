/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

#include "mpiimpl.h"
#include "tnbc_impl.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_STATS
      category    : TNBC
      type        : boolean
      default     : false
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        If true, every process prints its T-NBC statistics at MPI_Finalize: per collective, the
        calls T-NBC handled and the calls it declined, with the reason.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* Updated under the global critical section held by every collective binding. */
static unsigned long decisions[MPIR_TNBC_COLL_COUNT][MPIR_TNBC_DECISION_COUNT];

void MPII_Tnbc_stats_count(MPIR_Tnbc_coll_t coll, MPIR_Tnbc_decision_t decision)
{
    decisions[coll][decision]++;
}

int MPII_Tnbc_stats_report(void *unused)
{
    if (!MPIR_CVAR_TNBC_STATS)
        return MPI_SUCCESS;

    int rank = MPIR_Process.rank;
    unsigned long handled = 0, declined = 0;
    for (int c = 0; c < MPIR_TNBC_COLL_COUNT; c++) {
        for (int d = 0; d < MPIR_TNBC_DECISION_COUNT; d++) {
            if (d == MPIR_TNBC_ACCEPT)
                handled += decisions[c][d];
            else
                declined += decisions[c][d];
        }
    }
    fprintf(stderr, "[tnbc %d] enabled=%d collectives handled=%lu declined=%lu\n", rank,
            MPIR_CVAR_TNBC_ENABLE, handled, declined);
    for (int c = 0; c < MPIR_TNBC_COLL_COUNT; c++) {
        for (int d = 0; d < MPIR_TNBC_DECISION_COUNT; d++) {
            if (decisions[c][d] == 0)
                continue;
            fprintf(stderr, "[tnbc %d]   %-20s %-9s %8lu%s%s\n", rank, MPIR_Tnbc_coll_name(c),
                    d == MPIR_TNBC_ACCEPT ? "handled" : "declined", decisions[c][d],
                    d == MPIR_TNBC_ACCEPT ? "" : "  reason: ",
                    d == MPIR_TNBC_ACCEPT ? "" : MPIR_Tnbc_decision_name(d));
        }
    }
    fflush(stderr);
    return MPI_SUCCESS;
}
