/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The program closes descriptors it does not know (as closefrom or close_range do), including
 * the one T-NBC lands data through, while a collective is in flight (rank 1 enters late), and
 * opens a file that takes the same number. The data must still arrive, in the buffer and not
 * in the program's file. */

#define _GNU_SOURCE
#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define LATE 1

/* Close every descriptor open on /proc/<pid>/mem; returns the lowest number closed, or -1. */
static int close_proc_mem(void)
{
    int lowest = -1;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char path[64], target[256];
    while (d && (e = readdir(d))) {
        int fd = atoi(e->d_name);
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        if (strncmp(target, "/proc/", 6) == 0 && strstr(target, "/mem") &&
            fd != dirfd(d)) {
            close(fd);
            if (lowest < 0 || fd < lowest)
                lowest = fd;
        }
    }
    if (d)
        closedir(d);
    return lowest;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *sbuf = malloc((size_t) size * COUNT * sizeof(int));
    int *rbuf = malloc((size_t) size * COUNT * sizeof(int));

    for (int call = 0; call < 2; call++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                sbuf[p * COUNT + i] = tnbc_value(rank, p, i) + call;
        if (rank == LATE)
            usleep(200 * 1000);
        MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);

        int closed = close_proc_mem();
        if (closed < 0) {
            errs++;
            printf("rank %d call %d: no landing descriptor found\n", rank, call);
        }
        char name[] = "/tmp/tnbc_closefd.XXXXXX";
        int file = mkstemp(name);
        unlink(name);
        if (closed >= 0 && file >= 0 && file != closed) {
            dup2(file, closed); /* the program's file under the old number */
            close(file);
            file = closed;
        }
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (rbuf[p * COUNT + i] != tnbc_value(p, rank, i) + call) {
                    if (errs++ < 5)
                        printf("rank %d call %d: from %d int %d is %d\n", rank, call, p, i,
                               rbuf[p * COUNT + i]);
                    break;
                }
        struct stat st;
        if (file >= 0 && fstat(file, &st) == 0 && st.st_size != 0) {
            errs++;
            printf("rank %d call %d: %lld bytes landed in the program's file\n", rank, call,
                   (long long) st.st_size);
        }
        if (file >= 0)
            close(file);
    }

    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
