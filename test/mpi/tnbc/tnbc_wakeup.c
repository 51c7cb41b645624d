/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The event-driven helper loses no wake-up: many Alltoalls and Bcasts with random per-rank
 * delays before the call and the received data read at random moments (at once, after some
 * work, or only after the next collective), every byte checked. Then: no helper sleep that
 * ended by its time limit found news (tnbc_helper_rescues: a lost wake-up would show there),
 * an idle helper does at most a handful of rounds, and MPI_Finalize with a collective still in
 * flight completes it. Usage: tnbc_wakeup [iterations] */

#include "mpitest.h"
#include "tnbc_test_pvar.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static MPI_T_pvar_session session;

#define read_pvar(name_) tnbc_read_pvar(session, name_)

static int value(int src, int dst, int iter, size_t i)
{
    return (src * 7919 + dst * 104729 + iter * 31 + (int) i) & 0x7fffffff;
}

/* volatile: the spin is work the compiler must keep */
static void spin_us(int us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

typedef struct {
    int *buf;
    int iter, count, kind, root;        /* kind 0: Alltoall, 1: Bcast */
    int pending;
} slot_t;

static int check(const slot_t * s, int rank, int size)
{
    int errs = 0;
    if (s->kind == 0) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < s->count; i++)
                if (s->buf[(size_t) p * s->count + i] != value(p, rank, s->iter, i) && errs++ < 5)
                    fprintf(stderr, "[%d] iter %d alltoall from %d [%d]: %d\n", rank, s->iter, p,
                            i, s->buf[(size_t) p * s->count + i]);
    } else {
        for (int i = 0; i < s->count; i++)
            if (s->buf[i] != value(s->root, 0, s->iter, i) && errs++ < 5)
                fprintf(stderr, "[%d] iter %d bcast [%d]: %d\n", rank, s->iter, i, s->buf[i]);
    }
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0, rank, size, provided;
    int iters = argc > 1 ? atoi(argv[1]) : 1500;
    const int max_count = 8192;         /* ints per peer: 32 KiB, several pages */
    const int counts[3] = { 1024, 3000, 8192 };

    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *env = getenv("MPIR_CVAR_TNBC_ENABLE");
    const char *wake = getenv("MPIR_CVAR_TNBC_HELPER_WAKEUP");
    int event_driven = env && strcmp(env, "1") == 0 && !(wake && strcmp(wake, "0") == 0);

    size_t n = (size_t) size * max_count;
    int *sendbuf = malloc(n * sizeof(int));
    slot_t slot[2];
    for (int k = 0; k < 2; k++) {
        slot[k].buf = malloc(n * sizeof(int));
        slot[k].pending = 0;
    }
    unsigned shared_seed = 12345, my_seed = 777u + 31u * (unsigned) rank;

    for (int it = 0; it < iters; it++) {
        slot_t *s = &slot[it % 2];
        /* the other slot's data may still be unread from the last iteration */
        if (s->pending) {
            errs += check(s, rank, size);
            s->pending = 0;
        }
        s->iter = it;
        s->count = counts[rand_r(&shared_seed) % 3];
        s->kind = rand_r(&shared_seed) % 4 == 0;
        s->root = rand_r(&shared_seed) % size;
        int delay = rand_r(&my_seed) % 300;
        int read_mode = rand_r(&my_seed) % 3;

        spin_us(delay);
        if (s->kind == 0) {
            for (int p = 0; p < size; p++)
                for (int i = 0; i < s->count; i++)
                    sendbuf[(size_t) p * s->count + i] = value(rank, p, it, i);
            MPI_Alltoall(sendbuf, s->count, MPI_INT, s->buf, s->count, MPI_INT, MPI_COMM_WORLD);
        } else {
            if (rank == s->root)
                for (int i = 0; i < s->count; i++)
                    s->buf[i] = value(s->root, 0, it, i);
            MPI_Bcast(s->buf, s->count, MPI_INT, s->root, MPI_COMM_WORLD);
        }
        if (read_mode == 0) {
            errs += check(s, rank, size);
        } else if (read_mode == 1) {
            spin_us(rand_r(&my_seed) % 200);
            errs += check(s, rank, size);
        } else {
            s->pending = 1;     /* read after the next collective */
        }
    }
    for (int k = 0; k < 2; k++)
        if (slot[k].pending)
            errs += check(&slot[k], rank, size);

    MPI_Barrier(MPI_COMM_WORLD);
    if (event_driven && size > 1) {
        unsigned long long rescues = read_pvar("tnbc_helper_rescues");
        if (rescues == TNBC_PVAR_MISSING) {
            fprintf(stderr, "[%d] pvar tnbc_helper_rescues not found\n", rank);
            errs++;
        } else if (rescues) {
            fprintf(stderr, "[%d] %llu helper sleeps ended by the time limit found news\n", rank,
                    rescues);
            errs++;
        }
        /* idle: nothing in flight after the barrier settled everything */
        unsigned long long r0 = read_pvar("tnbc_helper_rounds");
        usleep(300 * 1000);
        unsigned long long idle_rounds = read_pvar("tnbc_helper_rounds") - r0;
        if (idle_rounds > 5) {
            fprintf(stderr, "[%d] idle helper did %llu rounds in 300 ms\n", rank, idle_rounds);
            errs++;
        }
    }

    /* finalize with a collective in flight: its data must still arrive everywhere */
    for (int p = 0; p < size; p++)
        for (int i = 0; i < max_count; i++)
            sendbuf[(size_t) p * max_count + i] = value(rank, p, iters, i);
    MPI_Alltoall(sendbuf, max_count, MPI_INT, slot[0].buf, max_count, MPI_INT, MPI_COMM_WORLD);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MTest_Finalize(errs);
    /* MPI_Finalize completed it; the memory is still ours to read */
    slot[0].iter = iters;
    slot[0].count = max_count;
    slot[0].kind = 0;
    int late = check(&slot[0], rank, size);
    if (late)
        fprintf(stderr, "[%d] Found %d errors in the collective in flight at MPI_Finalize\n",
                rank, late);
    return MTestReturnValue(errs + late);
}
