/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Nonblocking collectives with T-NBC under MPI_THREAD_MULTIPLE: two threads each start
 * MPI_Ialltoall on a communicator of their own and wait for it, while the main thread waits
 * for a call it started on a third; then one thread waits for a request another thread
 * started, and a generalized request completes beside them in MPI_Waitall. Data checked. */

#include "mpitest.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 20

static int rank, size, errs;
static pthread_mutex_t errs_lock = PTHREAD_MUTEX_INITIALIZER;

static int value(int src, int dst, int i, int round)
{
    return src * 1000003 + dst * 7919 + i + round * 17;
}

static void add_errors(int n)
{
    pthread_mutex_lock(&errs_lock);
    errs += n;
    pthread_mutex_unlock(&errs_lock);
}

typedef struct {
    MPI_Comm comm;
    int n, salt;
} exchange_t;

static int check(const int *r, int n, int round, int salt)
{
    int bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            bad += r[(long) p * n + i] != value(p, rank, i, round) + salt;
    return bad;
}

static void *exchanges(void *arg)
{
    exchange_t *x = arg;
    int n = x->n, bad = 0;
    int *s = malloc((size_t) size * n * sizeof(int)), *r = malloc((size_t) size * n * 4);
    for (int round = 0; round < ROUNDS; round++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                s[(long) p * n + i] = value(rank, p, i, round) + x->salt;
        MPI_Request req;
        MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, x->comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        bad += check(r, n, round, x->salt);
    }
    if (bad)
        fprintf(stderr, "rank %d salt %d: %d wrong elements\n", rank, x->salt, bad);
    add_errors(bad);
    free(s);
    free(r);
    return NULL;
}

static void *wait_for(void *arg)
{
    MPI_Wait((MPI_Request *) arg, MPI_STATUS_IGNORE);
    return NULL;
}

static int query_fn(void *extra, MPI_Status * status)
{
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    return MPI_SUCCESS;
}

static void *complete_later(void *arg)
{
    MPI_Grequest_complete(*(MPI_Request *) arg);
    return NULL;
}

int main(int argc, char *argv[])
{
    int provided;
    const int n = 16384;

    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE) {
        printf("MPI_THREAD_MULTIPLE not provided\n");
        MTest_Finalize(1);
        return 1;
    }

    /* two threads and the main thread, each on its own communicator */
    exchange_t x[3];
    pthread_t th[2];
    for (int k = 0; k < 3; k++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &x[k].comm);
        x[k].n = n / (k + 1);
        x[k].salt = 100 * k;
    }
    for (int k = 0; k < 2; k++)
        pthread_create(&th[k], NULL, exchanges, &x[k]);
    exchanges(&x[2]);
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);

    /* a request started here, waited for by another thread */
    int *s = malloc((size_t) size * n * sizeof(int)), *r = malloc((size_t) size * n * 4);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            s[(long) p * n + i] = value(rank, p, i, 0);
    MPI_Request req;
    pthread_t waiter;
    MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, x[0].comm, &req);
    pthread_create(&waiter, NULL, wait_for, &req);
    pthread_join(waiter, NULL);
    add_errors(check(r, n, 0, 0));

    /* a generalized request beside a collective one in MPI_Waitall */
    MPI_Request reqs[2], greq;
    MPI_Status sts[2];
    pthread_t completer;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, NULL, &reqs[0]);
    greq = reqs[0];
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            s[(long) p * n + i] = value(rank, p, i, 1);
    MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, x[1].comm, &reqs[1]);
    pthread_create(&completer, NULL, complete_later, &greq);
    MPI_Waitall(2, reqs, sts);
    pthread_join(completer, NULL);
    add_errors(check(r, n, 1, 0));

    free(s);
    free(r);
    for (int k = 0; k < 3; k++)
        MPI_Comm_free(&x[k].comm);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
