/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* User callbacks that MPICH runs, reading a buffer whose collective is still in flight (the last
 * rank enters late): an attribute copy function run by MPI_Comm_dup, and a user-defined op of a
 * blocking MPI_Allreduce among the other processes (T-NBC declines it; needs 3 processes or
 * more). MPICH releases its lock around both, so they can wait for the data; each must see the
 * collective's result. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include <stdio.h>
#include <stdlib.h>

#define COUNT 4096              /* ints per pair: 4 pages */

static int rank, size, errs;
static int *rbuf;
static long seen_sum;

static long late_block_sum(void)
{
    long sum = 0;
    for (int i = 0; i < COUNT; i++)
        sum += rbuf[(size - 1) * COUNT + i];
    return sum;
}

static long expected_sum(void)
{
    long sum = 0;
    for (int i = 0; i < COUNT; i++)
        sum += tnbc_value(size - 1, rank, i);
    return sum;
}

static void alltoall_late(int *sbuf)
{
    tnbc_fill(sbuf, COUNT, rank, size);
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
}

static int copy_reading(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    seen_sum = late_block_sum();
    *(void **) out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static void sum_reading(void *in, void *inout, int *len, MPI_Datatype * type)
{
    seen_sum = late_block_sum();
    for (int i = 0; i < *len; i++)
        ((long *) inout)[i] += ((long *) in)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *sbuf = malloc((size_t) size * COUNT * sizeof(int));
    rbuf = tnbc_page_aligned((size_t) size * COUNT * sizeof(int));

    /* attribute copy function */
    int keyval;
    MPI_Comm dup;
    MPI_Comm_create_keyval(copy_reading, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, &keyval);
    alltoall_late(sbuf);
    seen_sum = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (seen_sum != expected_sum()) {
        errs++;
        printf("rank %d copy function: late block sums to %ld, want %ld\n", rank, seen_sum,
               expected_sum());
    }
    MPI_Comm_free(&dup);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
    MPI_Comm_free_keyval(&keyval);

    /* user-defined op, in an Allreduce among the processes that are not late: it runs while
     * the late block is still coming */
    MPI_Op op;
    MPI_Comm early;
    long one = 1, total = 0;
    MPI_Op_create(sum_reading, 1, &op);
    MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1, rank, &early);
    alltoall_late(sbuf);
    seen_sum = expected_sum();
    if (rank != size - 1 && size > 2) {
        MPI_Allreduce(&one, &total, 1, MPI_LONG, op, early);
        if (total != size - 1 || seen_sum != expected_sum()) {
            errs++;
            printf("rank %d user op: total %ld, late block sums to %ld, want %ld\n", rank,
                   total, seen_sum, expected_sum());
        }
    }
    MPI_Comm_free(&early);
    MPI_Op_free(&op);

    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
