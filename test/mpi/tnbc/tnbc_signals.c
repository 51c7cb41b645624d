/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A program's own signal handling around buffers still in flight (rank 1 enters each Alltoall
 * late, so its block is still coming when the others read theirs):
 *   handler   the program installs its own SIGSEGV handler after MPI_Init (one that leaves
 *             with siglongjmp), runs collectives and reads the buffers; its own faults still
 *             reach its handler, every time
 *   masked    a worker thread created with every signal blocked reads a pending buffer, and
 *             the main thread reads one with every signal blocked too
 * Every int is checked. */

#include <mpi.h>
#include "mpitest.h"
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define LATE 1

static int rank, size, errs;
static int *sbuf, *rbuf;

static int value(int from, int to, int i, int call)
{
    return from * 1000003 + to * 101 + i + call;
}

static void alltoall_late(int call)
{
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++)
            sbuf[p * COUNT + i] = value(rank, p, i, call);
    if (rank == LATE)
        usleep(200 * 1000);
    MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
}

static void check(const char *what, int call)
{
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++)
            if (rbuf[p * COUNT + i] != value(p, rank, i, call)) {
                if (errs++ < 5)
                    printf("rank %d %s: from %d int %d is %d\n", rank, what, p, i,
                           rbuf[p * COUNT + i]);
                break;
            }
}

static sigjmp_buf jump_back;
static volatile sig_atomic_t own_faults;

static void own_handler(int sig, siginfo_t * info, void *uctx)
{
    own_faults++;
    siglongjmp(jump_back, 1);
}

static void *masked_reader(void *arg)
{
    check("masked thread", *(int *) arg);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sbuf = malloc((size_t) size * COUNT * sizeof(int));
    rbuf = malloc((size_t) size * COUNT * sizeof(int));

    /* handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = own_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int call = 0; call < 3; call++) {
        alltoall_late(call);
        check("handler", call);
        if (!sigsetjmp(jump_back, 1))
            ((volatile char *) page)[0] = 1;
    }
    if (own_faults != 3) {
        errs++;
        printf("rank %d: the program's handler saw %d of its 3 faults\n", rank, (int) own_faults);
    }

    /* masked */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    if (provided == MPI_THREAD_MULTIPLE) {
        int call = 3;
        pthread_t t;
        alltoall_late(call);
        pthread_create(&t, NULL, masked_reader, &call);
        pthread_join(t, NULL);
    }
    alltoall_late(4);
    check("masked main", 4);
    pthread_sigmask(SIG_UNBLOCK, &all, NULL);

    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
