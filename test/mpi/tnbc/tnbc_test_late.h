/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The late-rank Alltoall of the tests of test/mpi/tnbc: every process sends count ints to each
 * one, the last rank enters 200 ms late, so the others return early with its block still
 * coming (on whole pages when the receive buffer is page aligned and count fills pages). */

#ifndef TNBC_TEST_LATE_H_INCLUDED
#define TNBC_TEST_LATE_H_INCLUDED

#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

/* Element i of the block from rank from to rank to. */
static inline int tnbc_value(int from, int to, int i)
{
    return from * 1000003 + to * 101 + i;
}

static inline void tnbc_fill(int *sbuf, int count, int rank, int size)
{
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            sbuf[p * count + i] = tnbc_value(rank, p, i);
}

/* A receive buffer whose blocks are whole pages when count fills pages: none of the late
 * rank's block then completes in the call. */
static inline int *tnbc_page_aligned(size_t len)
{
    void *p;
    if (posix_memalign(&p, 4096, len) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    return p;
}

static inline void tnbc_alltoall_late(const int *sbuf, int *rbuf, int count, int rank, int size)
{
    if (rank == size - 1)
        usleep(200 * 1000);
    MPI_Alltoall(sbuf, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD);
}

#endif /* TNBC_TEST_LATE_H_INCLUDED */
