/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI_Comm_free runs the communicator's attribute delete callbacks before it returns, as with
 * stock MPICH, even when the last collective on it returned early and the helper finished it
 * since (the finished operation held a reference). The callback makes a collective of its own
 * on another communicator (as libraries that clean up do); every process must have run it when
 * MPI_Comm_free returns. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */

static int deleted;

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    MPI_Barrier(MPI_COMM_WORLD);
    deleted++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, keyval;
    MPI_Comm dup;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &keyval, NULL);
    size_t len = (size_t) size * COUNT * sizeof(int);
    int *sbuf = malloc(len), *rbuf = tnbc_page_aligned(len);

    for (int round = 0; round < 3; round++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_set_attr(dup, keyval, NULL);
        tnbc_fill(sbuf, COUNT, rank, size);
        if (rank == size - 1)
            usleep(200 * 1000);
        MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, dup);
        /* read the data (the helper then finishes the operation), give it time to retire */
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (rbuf[p * COUNT + i] != tnbc_value(p, rank, i) && errs++ < 5)
                    printf("rank %d round %d: from %d [%d] wrong\n", rank, round, p, i);
        usleep(50 * 1000);
        int before = deleted;
        MPI_Comm_free(&dup);
        if (deleted != before + 1 && errs++ < 5)
            printf("rank %d round %d: the delete callback had not run when MPI_Comm_free "
                   "returned\n", rank, round);
        /* point-to-point only: a collective here would run a pending callback late */
        int token = rank;
        MPI_Sendrecv_replace(&token, 1, MPI_INT, (rank + 1) % size, 0,
                             (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Comm_free_keyval(&keyval);
    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
