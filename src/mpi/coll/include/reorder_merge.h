/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The reorder + merge family (src/mpi/coll/rm): what the rest of MPICH sees of it. Its
 * collective entry points (MPIR_Alltoallv_intra_reorder, ..._merge, ..._reorder_merge, and the
 * same for Alltoall and Neighbor_alltoallv) are declared in coll_algos.h, which
 * maint/gen_coll.py generates with their call sites (maint/patches/0015). */

#ifndef REORDER_MERGE_H_INCLUDED
#define REORDER_MERGE_H_INCLUDED

int MPIR_Rm_init(void);

/* The forms whose send order another algorithm may borrow. */
typedef enum {
    MPIR_RM_FORM_ALLTOALL,
    MPIR_RM_FORM_ALLTOALLV
} MPIR_Rm_form_t;

/* When MPIR_CVAR_<FORM>_INTRA_ALGORITHM names reorder or reorder_merge: the order in which the
 * reorder plan sends an exchange of these byte counts (send_pos[p]: the position of the message
 * to p, 0 first; self and empty ones last), filled into send_pos (comm's size) and returned.
 * NULL: ring order. Plans with the node graph the algorithm last learnt on comm, if any, and
 * never learns it itself (that takes an Allreduce), so it may be called by an operation that
 * returns before its data moves. */
const int *MPIR_Rm_send_order(MPIR_Rm_form_t form, MPIR_Comm * comm, const size_t * sbytes,
                              const size_t * rbytes, int *send_pos);

/* What the family did with this process's calls (also MPI_T performance variables
 * rm_exchanges and rm_stock). */
typedef struct {
    uint64_t exchanges;         /* calls that ran the exchange */
    uint64_t stock;             /* calls handed to MPICH's own algorithm (in place, a repeated
                                 * neighbour) */
} MPIR_Rm_stats_t;
void MPIR_Rm_get_stats(MPIR_Rm_stats_t * stats);

#endif /* REORDER_MERGE_H_INCLUDED */
