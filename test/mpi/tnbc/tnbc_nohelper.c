/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* No helper thread (a pids limit, say): pthread_create fails from MPI_Init on, so T-NBC cannot
 * start its helper at the first collective. The collectives must still work, complete inside
 * their calls (pvars: nothing returned early, every call waited in the call), and MPI_Finalize
 * must return. This program's pthread_create takes the place of the C library's for the MPI
 * library too (it is looked up in the executable first). */

#define _GNU_SOURCE
#include <mpi.h>
#include "mpitest.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tnbc_test_pvar.h"

#define COUNT (64 * 1024)       /* ints per pair: whole pages */
#define CALLS 3

static int refuse_threads;

int pthread_create(pthread_t * thread, const pthread_attr_t * attr,
                   void *(*start)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (refuse_threads)
        return EAGAIN;
    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
            dlsym(RTLD_NEXT, "pthread_create");
    return real ? real(thread, attr, start, arg) : EAGAIN;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, provided;
    MPI_T_pvar_session session;

    MPI_Init(&argc, &argv);
    refuse_threads = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);

    int *sbuf = malloc((size_t) size * COUNT * sizeof(int));
    int *rbuf = malloc((size_t) size * COUNT * sizeof(int));
    for (int call = 0; call < CALLS; call++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                sbuf[p * COUNT + i] = rank * 1000003 + p * 101 + i + call;
        MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (rbuf[p * COUNT + i] != p * 1000003 + rank * 101 + i + call) {
                    if (errs++ < 5)
                        printf("rank %d call %d: from %d int %d is %d\n", rank, call, p, i,
                               rbuf[p * COUNT + i]);
                    break;
                }
    }

    unsigned long long early = tnbc_read_pvar(session, "tnbc_returned_early");
    unsigned long long waited = tnbc_read_pvar(session, "tnbc_waited_in_call");
    if (early == TNBC_PVAR_MISSING || early != 0 || waited < CALLS) {
        printf("rank %d: returned early %llu, waited in call %llu (want 0 and %d)\n", rank,
               early, waited, CALLS);
        errs++;
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();

    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
