/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Read a T-NBC performance variable by name through MPI_T (tests of test/mpi/tnbc). */

#ifndef TNBC_TEST_PVAR_H_INCLUDED
#define TNBC_TEST_PVAR_H_INCLUDED

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TNBC_PVAR_MISSING ((unsigned long long) -1)

/* static inline: a program that includes this header may use only some of its helpers */

/* The value of pvar want in session, or TNBC_PVAR_MISSING. */
static inline unsigned long long tnbc_read_pvar(MPI_T_pvar_session session, const char *want)
{
    int n, found = -1;
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n && found < 0; i++) {
        char name[128], desc[256];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro, &cont,
                            &atomic);
        if (strcmp(name, want) == 0)
            found = i;
    }
    if (found < 0)
        return TNBC_PVAR_MISSING;
    MPI_T_pvar_handle h;
    int count;
    unsigned long long v = 0;
    MPI_T_pvar_handle_alloc(session, found, NULL, &h, &count);
    MPI_T_pvar_read(session, h, &v);
    MPI_T_pvar_handle_free(session, &h);
    return v;
}

/* A test's late-rank collective proves something only if it returned early: with
 * MPIR_CVAR_TNBC_ENABLE=1 in the environment, returns 1 (one error) on rank 0 when
 * tnbc_returned_early has not grown since the value before. */
static inline int tnbc_missed_early(MPI_T_pvar_session session, unsigned long long before, int rank,
                                    const char *what)
{
    const char *on = getenv("MPIR_CVAR_TNBC_ENABLE");
    if (rank != 0 || !on || atoi(on) != 1 ||
        tnbc_read_pvar(session, "tnbc_returned_early") != before)
        return 0;
    printf("rank %d %s: the collective did not return early\n", rank, what);
    return 1;
}

#endif /* TNBC_TEST_PVAR_H_INCLUDED */
