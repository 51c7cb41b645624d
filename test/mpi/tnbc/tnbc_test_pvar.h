/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Read a T-NBC performance variable by name through MPI_T (tests of test/mpi/tnbc). */

#ifndef TNBC_TEST_PVAR_H_INCLUDED
#define TNBC_TEST_PVAR_H_INCLUDED

#include <mpi.h>
#include <string.h>

#define TNBC_PVAR_MISSING ((unsigned long long) -1)

/* The value of pvar want in session, or TNBC_PVAR_MISSING. */
static unsigned long long tnbc_read_pvar(MPI_T_pvar_session session, const char *want)
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

#endif /* TNBC_TEST_PVAR_H_INCLUDED */
