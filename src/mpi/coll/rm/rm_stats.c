/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What the reorder + merge algorithms did with this process's calls: counters, read by
 * MPIR_Rm_get_stats and as MPI_T performance variables (category COLLECTIVE). */

#include "mpiimpl.h"
#include "reorder_merge.h"
#include "rm_impl.h"

static MPIR_Rm_stats_t counters;

void MPII_Rm_count(MPII_Rm_event_t event)
{
    uint64_t *c = event == MPII_RM_EXCHANGE ? &counters.exchanges : &counters.stock;
    __atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

void MPIR_Rm_get_stats(MPIR_Rm_stats_t * stats)
{
    stats->exchanges = __atomic_load_n(&counters.exchanges, __ATOMIC_RELAXED);
    stats->stock = __atomic_load_n(&counters.stock, __ATOMIC_RELAXED);
}

static void get_counter(void *addr, void *obj, int count, void *buf)
{
    *(unsigned long long *) buf = __atomic_load_n((uint64_t *) addr, __ATOMIC_RELAXED);
}

static void pvar(const char *name, uint64_t * counter, const char *desc)
{
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, name, counter, 1,
                              MPI_T_ENUM_NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                              get_counter, NULL, "COLLECTIVE", desc);
}

int MPIR_Rm_init(void)
{
    pvar("rm_exchanges", &counters.exchanges, "calls the reorder / merge algorithms ran");
    pvar("rm_stock", &counters.stock,
         "calls the reorder / merge algorithms handed to MPICH's own algorithm");
    return MPI_SUCCESS;
}
