/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A receive buffer on the stack, left unread when its function returns while its data is still
 * coming (rank 1 enters late): the next deep calls push their frames onto the guarded
 * pages. They must wait for the data and go on, in the main thread and in a second thread. */

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define LATE 1                  /* a middle block: the end ones touch partial pages */
#define MAX_SIZE 8
#define DEPTH 400               /* 1 KiB frames: below both arrays */

static int rank, size, errs;

static void __attribute__ ((noinline)) exchange_unread(MPI_Comm comm)
{
    int sbuf[MAX_SIZE * COUNT], rbuf[MAX_SIZE * COUNT];
    for (int i = 0; i < size * COUNT; i++)
        sbuf[i] = rank + i;
    if (rank == LATE)
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
    if (size < 3 || size > MAX_SIZE) {
        printf("3 to %d processes\n", MAX_SIZE);
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

    int all;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
