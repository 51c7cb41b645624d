/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What the page guards' libc hooks cost a program that never hands them a guarded buffer:
 * read(2) of 4 KiB from /dev/zero and malloc + free of 64 B, per call, after MPI_Init. With
 * MPIR_CVAR_TNBC_ENABLE=0 nothing is installed (the C library's functions); with 1 the calls
 * go through the hooks. "pending" repeats the loops while an Alltoall that returned early
 * still has data on the way (its rank 0 comes late), so every hook looks for guarded pages.
 * Prints one line per loop for rank 1: name, ns per call (best of 5 runs). maint/bench-hooks
 * runs it both ways. */

#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CALLS 200000
#define PAIR_INTS (1 << 20)     /* 4 MiB per pair: still on the way during the loops */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double read_ns(int fd, char *buf)
{
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
        double t0 = now_ns();
        for (int i = 0; i < CALLS; i++)
            if (read(fd, buf, 4096) != 4096)
                abort();
        double t = (now_ns() - t0) / CALLS;
        best = t < best ? t : best;
    }
    return best;
}

static double free_ns(void)
{
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
        double t0 = now_ns();
        for (int i = 0; i < CALLS; i++) {
            void *volatile p = malloc(64);
            free(p);
        }
        double t = (now_ns() - t0) / CALLS;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char *argv[])
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int fd = open("/dev/zero", O_RDONLY);
    char *buf = malloc(4096);
    if (fd < 0 || !buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    double idle_read = read_ns(fd, buf), idle_free = free_ns();

    int *send = malloc((size_t) size * PAIR_INTS * sizeof(int));
    int *recv = malloc((size_t) size * PAIR_INTS * sizeof(int));
    memset(send, 1, (size_t) size * PAIR_INTS * sizeof(int));
    memset(recv, 0, (size_t) size * PAIR_INTS * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        usleep(500 * 1000);
    MPI_Alltoall(send, PAIR_INTS, MPI_INT, recv, PAIR_INTS, MPI_INT, MPI_COMM_WORLD);
    double pending_read = read_ns(fd, buf), pending_free = free_ns();
    volatile int sink = recv[(size_t) size * PAIR_INTS - 1];
    (void) sink;

    if (rank == 1) {
        printf("read 4 KiB, idle    %.1f\n", idle_read);
        printf("free 64 B, idle     %.1f\n", idle_free);
        printf("read 4 KiB, pending %.1f\n", pending_read);
        printf("free 64 B, pending  %.1f\n", pending_free);
    }
    free(send);
    free(recv);
    free(buf);
    close(fd);
    MPI_Finalize();
    return 0;
}
