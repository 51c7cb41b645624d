/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Persistent and partitioned requests on the buffers of a collective still in flight.
 * MPI_Start(all) and MPI_Pready name no buffer, yet MPICH reads or writes the one the request
 * was made with, under its lock. The last rank enters each Alltoall late, so its block is still
 * coming when the others start their requests; every received int is checked against what
 * blocking calls give:
 *   start     MPI_Send_init from the pending receive block, MPI_Recv_init elsewhere, Startall
 *   sendbuf   MPI_Recv_init into the send buffer whose data is still leaving, MPI_Start
 *   pready    MPI_Psend_init from the pending receive block, MPI_Pready_range */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define PARTS 4

static int rank, size, late, errs;

static void fill(int *sbuf)
{
    tnbc_fill(sbuf, COUNT, rank, size);
}

static void alltoall_late(int *sbuf, int *rbuf)
{
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
}

static void expect(const char *what, const int *got, int from, int to)
{
    for (int i = 0; i < COUNT; i++)
        if (got[i] != tnbc_value(from, to, i)) {
            if (errs++ < 5)
                printf("rank %d %s: int %d is %d, want %d\n", rank, what, i, got[i],
                       tnbc_value(from, to, i));
            return;
        }
}

static void check_alltoall(const char *what, const int *rbuf)
{
    for (int p = 0; p < size; p++)
        expect(what, rbuf + p * COUNT, p, rank);
}

int main(int argc, char **argv)
{
    MPI_Request req[2];
    MPI_Status st[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    late = size - 1;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int *sbuf = malloc((size_t) size * COUNT * sizeof(int));
    int *rbuf = malloc((size_t) size * COUNT * sizeof(int));
    int *other = malloc(COUNT * sizeof(int));

    /* start: forward the late rank's block to the next rank */
    fill(sbuf);
    MPI_Send_init(rbuf + late * COUNT, COUNT, MPI_INT, next, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Recv_init(other, COUNT, MPI_INT, prev, 1, MPI_COMM_WORLD, &req[1]);
    alltoall_late(sbuf, rbuf);
    MPI_Startall(2, req);
    MPI_Waitall(2, req, st);
    expect("start: forwarded", other, late, prev);
    check_alltoall("start", rbuf);
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);

    /* sendbuf: receive into the block still being sent to the late rank */
    fill(sbuf);
    for (int i = 0; i < COUNT; i++)
        other[i] = tnbc_value(size + rank, next, i);
    MPI_Recv_init(sbuf + late * COUNT, COUNT, MPI_INT, prev, 2, MPI_COMM_WORLD, &req[0]);
    alltoall_late(sbuf, rbuf);
    MPI_Start(&req[0]);
    MPI_Send(other, COUNT, MPI_INT, next, 2, MPI_COMM_WORLD);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    expect("sendbuf: received", sbuf + late * COUNT, size + prev, rank);
    check_alltoall("sendbuf", rbuf);
    MPI_Request_free(&req[0]);

    /* pready: a partitioned send of the late rank's block */
    fill(sbuf);
    MPI_Psend_init(rbuf + late * COUNT, PARTS, COUNT / PARTS, MPI_INT, next, 3, MPI_COMM_WORLD,
                   MPI_INFO_NULL, &req[0]);
    MPI_Precv_init(other, PARTS, COUNT / PARTS, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_INFO_NULL,
                   &req[1]);
    MPI_Startall(2, req);
    alltoall_late(sbuf, rbuf);
    MPI_Pready_range(0, PARTS - 1, req[0]);
    MPI_Waitall(2, req, st);
    expect("pready: forwarded", other, late, prev);
    check_alltoall("pready", rbuf);
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);

    free(sbuf);
    free(rbuf);
    free(other);
    MTest_Finalize(errs);
    return 0;
}
