/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The MPI part of the linkage tests: an Alltoall whose rank 0 comes late, so that the others
 * return early when T-NBC takes the call, then every received element checked. The first
 * round hands the receive buffer, data still on the way, to write(2) first (the kernel does
 * not fault: without the hooks it fails with EFAULT) and checks what the file got; the last
 * frees a buffer whose data may not have come. Built into a shared library (the program
 * reaches libmpi only through it), into a program of its own, or compiled against Debian's
 * mpich headers (a binary not built against our MPICH). */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TNBC_LINK_COUNT (256 * 1024)    /* ints per pair: 1 MiB */

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

/* The received bytes as a file gets them from write(2) straight out of the buffer: read back
 * into recvbuf. Returns the number of failed system calls. */
static int through_a_file(int *recvbuf, size_t bytes)
{
    char path[] = "/tmp/tnbc-link-XXXXXX";
    int fd = mkstemp(path), errs = 0;
    if (fd < 0)
        return 1;
    unlink(path);
    if (write(fd, recvbuf, bytes) != (ssize_t) bytes) {
        perror("write of the receive buffer");
        errs++;
    }
    memset(recvbuf, 0, bytes);
    if (pread(fd, recvbuf, bytes, 0) != (ssize_t) bytes) {
        perror("pread into the receive buffer");
        errs++;
    }
    close(fd);
    return errs;
}

/* Collective; returns the number of wrong elements on this process. */
int tnbc_link_exchange(MPI_Comm comm, int round)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t n = (size_t) size * TNBC_LINK_COUNT;
    int *sendbuf = malloc(n * sizeof(int)), *recvbuf = malloc(n * sizeof(int));
    if (!sendbuf || !recvbuf)
        return 1;
    for (int dst = 0; dst < size; dst++)
        for (int i = 0; i < TNBC_LINK_COUNT; i++)
            sendbuf[(size_t) dst * TNBC_LINK_COUNT + i] = value(rank, dst, i);
    for (size_t k = 0; k < n; k++)
        recvbuf[k] = -1;
    if (rank == 0)
        usleep(200 * 1000);
    MPI_Alltoall(sendbuf, TNBC_LINK_COUNT, MPI_INT, recvbuf, TNBC_LINK_COUNT, MPI_INT, comm);
    if (round == 0)
        errs += through_a_file(recvbuf, n * sizeof(int));
    if (round == 3) {
        free(recvbuf);  /* unread */
        free(sendbuf);
        return errs;
    }
    for (int src = size - 1; src >= 0; src--)
        for (int i = 0; i < TNBC_LINK_COUNT; i++)
            if (recvbuf[(size_t) src * TNBC_LINK_COUNT + i] != value(src, rank, i) &&
                errs++ < 5)
                fprintf(stderr, "rank %d: from %d [%d]: got %d expected %d\n", rank, src, i,
                        recvbuf[(size_t) src * TNBC_LINK_COUNT + i], value(src, rank, i));
    free(sendbuf);
    free(recvbuf);
    return errs;
}

/* Between MPI_Init and MPI_Finalize: every round, the verdict printed by rank 0. Returns 1 on
 * errors. */
int tnbc_link_rounds(void)
{
    int errs = 0, all_errs = 0, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int round = 0; round < 4; round++)
        errs += tnbc_link_exchange(MPI_COMM_WORLD, round);
    MPI_Reduce(&errs, &all_errs, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all_errs ? " Found %d errors\n" : " No Errors\n", all_errs);
    return all_errs != 0;
}

/* The whole program's MPI life, for a main() that never names an MPI symbol itself. */
int tnbc_link_run(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    int rc = tnbc_link_rounds();
    MPI_Finalize();
    return rc;
}

#ifndef TNBC_LINK_LIBRARY
int main(int argc, char *argv[])
{
    return tnbc_link_run(&argc, &argv);
}
#endif
