/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A receive buffer on the stack, left unread when its function returns while its data is still
 * coming (the last rank enters late): the next deep calls push their frames onto the guarded pages.
 * They must wait for the data and go on, in the main thread and in a second thread; and an MPI
 * call made at once, whose frames (under MPICH's lock) land there, must go on too. */

#include <mpi.h>
#include "mpitest.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define MAX_SIZE 8
#define DEPTH 400               /* 1 KiB frames: below the whole array */

static int rank, size, errs;
static int sbuf[MAX_SIZE * COUNT];

/* The receive buffer is page aligned and ends at the top of the array, so that the late block
 * (the last rank's) is whole pages right below the frame's top: the first frames pushed after
 * the return land on it. */
static void __attribute__ ((noinline)) exchange_unread(MPI_Comm comm)
{
    int all[MAX_SIZE * COUNT] __attribute__ ((aligned(4096)));
    int *rbuf = all + (MAX_SIZE - size) * COUNT;
    for (int i = 0; i < size * COUNT; i++)
        sbuf[i] = rank + i;
    if (rank == size - 1)
        usleep(200 * 1000);
    MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, comm);
    __asm__ volatile ("":::"memory");
}

/* Each frame writes its whole array: the frames below cover the pages rbuf had. */
static long __attribute__ ((noinline)) deep(int depth)
{
    volatile char pad[1024];
    memset((char *) pad, depth & 0x7f, sizeof(pad));
    if (depth == 0)
        return pad[17];
    return pad[depth % 1024] + deep(depth - 1);
}

static long expected(int depth)
{
    long sum = 0;
    for (int d = depth; d > 0; d--)
        sum += d & 0x7f;
    return sum;
}

static void run(MPI_Comm comm, const char *who)
{
    exchange_unread(comm);
    MPI_Barrier(comm);
    exchange_unread(comm);
    long got = deep(DEPTH);
    if (got != expected(DEPTH)) {
        errs++;
        printf("rank %d %s: deep calls gave %ld, want %ld\n", rank, who, got, expected(DEPTH));
    }
    MPI_Barrier(comm);
}

static void *thread_main(void *comm)
{
    run(*(MPI_Comm *) comm, "thread");
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size > MAX_SIZE) {
        printf("2 to %d processes\n", MAX_SIZE);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    run(MPI_COMM_WORLD, "main");
    if (provided == MPI_THREAD_MULTIPLE) {
        MPI_Comm dup;
        pthread_t t;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        pthread_create(&t, NULL, thread_main, &dup);
        pthread_join(t, NULL);
        MPI_Comm_free(&dup);
    }

    MTest_Finalize(errs);
    return 0;
}
