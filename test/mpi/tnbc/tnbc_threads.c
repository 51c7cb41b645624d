/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Threads and early-returned collectives:
 *  - one thread calls MPI_Alltoall, then several threads read different parts of the receive
 *    buffer at once (concurrent faults on different and on the same pages);
 *  - with MPI_THREAD_MULTIPLE, every thread runs its own collectives on its own communicator
 *    at the same time. */

#include "mpitest.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3

static int rank, size;

static int value(int src, int dst, int i, int tag)
{
    return src * 1000003 + dst * 7919 + i + tag * 101;
}

typedef struct {
    const int *rbuf;
    int count, first, step, tag;
    int errs;
} reader_t;

static void *reader(void *arg)
{
    reader_t *r = arg;
    for (int p = r->first; p < size; p += r->step)
        for (int i = r->count - 1; i >= 0; i--)
            if (r->rbuf[(size_t) p * r->count + i] != value(p, rank, i, r->tag))
                r->errs++;
    return NULL;
}

typedef struct {
    MPI_Comm comm;
    int tag, count, errs;
} runner_t;

static void *runner(void *arg)
{
    runner_t *t = arg;
    size_t n = (size_t) size * t->count;
    int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
    for (int round = 0; round < 4; round++) {
        int tag = t->tag * 10 + round;
        for (int p = 0; p < size; p++)
            for (int i = 0; i < t->count; i++)
                s[(size_t) p * t->count + i] = value(rank, p, i, tag);
        MPI_Alltoall(s, t->count, MPI_INT, r, t->count, MPI_INT, t->comm);
        for (int p = size - 1; p >= 0; p--)
            for (int i = 0; i < t->count; i++)
                if (r[(size_t) p * t->count + i] != value(p, rank, i, tag))
                    t->errs++;
    }
    free(s);
    free(r);
    return NULL;
}

int main(int argc, char *argv[])
{
    int errs = 0, provided;
    MTest_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* concurrent readers of one early-returned collective */
    const int count = 50000;
    size_t n = (size_t) size * count;
    int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
    for (int round = 0; round < 3; round++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < count; i++)
                s[(size_t) p * count + i] = value(rank, p, i, round);
        MPI_Alltoall(s, count, MPI_INT, r, count, MPI_INT, MPI_COMM_WORLD);
        pthread_t th[NTHREADS];
        reader_t rd[NTHREADS];
        for (int t = 0; t < NTHREADS; t++) {
            /* round 2: every thread reads everything (same pages at once) */
            rd[t] = (reader_t) {.rbuf = r,.count = count,.first = round == 2 ? 0 : t,
                .step = round == 2 ? 1 : NTHREADS,.tag = round,.errs = 0 };
            pthread_create(&th[t], NULL, reader, &rd[t]);
        }
        for (int t = 0; t < NTHREADS; t++) {
            pthread_join(th[t], NULL);
            errs += rd[t].errs;
        }
    }
    free(s);
    free(r);

    if (provided == MPI_THREAD_MULTIPLE) {
        pthread_t th[NTHREADS];
        runner_t rn[NTHREADS];
        for (int t = 0; t < NTHREADS; t++) {
            MPI_Comm_dup(MPI_COMM_WORLD, &rn[t].comm);
            rn[t].tag = t;
            rn[t].count = 4000 * (t + 1);
            rn[t].errs = 0;
        }
        for (int t = 0; t < NTHREADS; t++)
            pthread_create(&th[t], NULL, runner, &rn[t]);
        for (int t = 0; t < NTHREADS; t++) {
            pthread_join(th[t], NULL);
            errs += rn[t].errs;
            MPI_Comm_free(&rn[t].comm);
        }
    }
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
