/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The T-NBC performance variables through MPI_T: after large Alltoalls and Bcasts with T-NBC on,
 * tnbc_returned_early counts them (the calls were handled early, not silently declined), and a
 * small Alltoall below the threshold counts as declined. Run with MPIR_CVAR_TNBC_ENABLE=1 and
 * the default threshold; with T-NBC off both counters stay 0. The job runs on one node: when
 * MPIR_CVAR_TNBC_NODE_MIN_BYTES is -1 (the default) or above the large calls' 400 KB, T-NBC
 * declines them too. */

#include "mpitest.h"
#include "tnbc_test_pvar.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_T_pvar_session session;

#define read_pvar(name_) tnbc_read_pvar(session, name_)

int main(int argc, char *argv[])
{
    int errs = 0, rank, size, provided;
    const int count = 100000;

    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *env = getenv("MPIR_CVAR_TNBC_ENABLE");
    int on = env && strcmp(env, "1") == 0;
    const char *node_env = getenv("MPIR_CVAR_TNBC_NODE_MIN_BYTES");
    long long node_min = node_env ? strtoll(node_env, NULL, 10) : -1;
    int node_declines = on && (node_min < 0 || (long long) (count * sizeof(int)) < node_min);

    unsigned long long early0 = read_pvar("tnbc_returned_early");
    unsigned long long declined0 = read_pvar("tnbc_declined");
    if (early0 == (unsigned long long) -1 || declined0 == (unsigned long long) -1) {
        fprintf(stderr, "tnbc pvars not found\n");
        errs++;
    }
    int *s = malloc((size_t) size * count * sizeof(int));
    int *r = malloc((size_t) size * count * sizeof(int));
    for (size_t i = 0; i < (size_t) size * count; i++)
        s[i] = rank + (int) i;
    for (int k = 0; k < 3; k++) {
        MPI_Alltoall(s, count, MPI_INT, r, count, MPI_INT, MPI_COMM_WORLD);
        MPI_Bcast(s, count, MPI_INT, k % size, MPI_COMM_WORLD);
    }
    MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD);        /* below the threshold */
    volatile int sink = r[0];
    (void) sink;
    unsigned long long early = read_pvar("tnbc_returned_early") - early0;
    unsigned long long declined = read_pvar("tnbc_declined") - declined0;
    /* on one process MPI_Bcast returns in its binding (nothing to move), and an Alltoall is a
     * self copy, made in the call: nothing returns early */
    unsigned long long want_early = on && !node_declines ? (size > 1 ? 6 : 0) : 0;
    unsigned long long want_declined = !on ? 0 : !node_declines ? 1 : size > 1 ? 7 : 4;
    if (early != want_early || declined != want_declined) {
        fprintf(stderr, "rank %d: returned early %llu (want %llu), declined %llu (want %llu)\n",
                rank, early, want_early, declined, want_declined);
        errs++;
    }
    free(s);
    free(r);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
