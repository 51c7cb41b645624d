/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Counts that disagree across processes (erroneous). Rank 0 passes one count to Alltoall, the
 * others another, both sides of T-NBC's size threshold alike, and some straddle the edge split
 * (a pair of more than two edges travels as head, tail and body; a smaller one as its bytes in
 * the head and an empty tail and body).
 * Stock MPICH returns MPI_ERR_TRUNCATE on the processes that receive more than they expect and
 * never hangs; with T-NBC the truncation must come back from the call or a later collective on
 * the communicator, the run must not hang, and the communicator must go on working. (Counts
 * on both sides of MPIR_CVAR_TNBC_MIN_BYTES are a documented limitation: README.tnbc.) */

#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TRIES 50
#define BIG 4096                /* ints per pair of the largest case */

/* ints per pair on rank 0 and on the others */
static const int cases[][2] = {
    {4096, 2048},               /* 16 KiB vs 8 KiB: split vs whole in the head */
    {2048, 4096},
    {1536, 1024},               /* 6 KiB vs 4 KiB: both at most two edges */
    {1024, 3072},               /* 4 KiB vs 12 KiB */
};

static int run_case(int c, int rank, int size)
{
    int errs = 0, n = cases[c][rank == 0 ? 0 : 1];
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int *sbuf = calloc((size_t) size * BIG, sizeof(int));
    int *rbuf = calloc((size_t) size * BIG, sizeof(int));

    int rc = MPI_Alltoall(sbuf, n, MPI_INT, rbuf, n, MPI_INT, comm);
    /* The truncation comes from this call (stock) or, found after the early return, from a
     * later early-returning collective on comm: every process runs the same correct calls
     * until one has seen it. */
    int seen = (rc != MPI_SUCCESS), any = 0, cls = MPI_SUCCESS;
    if (seen)
        MPI_Error_class(rc, &cls);
    for (int t = 0; t < TRIES; t++) {
        MPI_Allreduce(&seen, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any)
            break;
        usleep(10 * 1000);
        rc = MPI_Alltoall(sbuf, BIG, MPI_INT, rbuf, BIG, MPI_INT, comm);
        if (!seen && rc != MPI_SUCCESS) {
            seen = 1;
            MPI_Error_class(rc, &cls);
        }
    }
    if (!any) {
        errs++;
        printf("case %d: no process reported the truncation\n", c);
    }
    /* the communicator goes on: a process whose error was still due gets it here, once, and
     * then every process makes one more call */
    rc = MPI_Alltoall(sbuf, BIG, MPI_INT, rbuf, BIG, MPI_INT, comm);
    int due = (rc != MPI_SUCCESS && !seen), again = 0;
    if (due) {
        seen = 1;
        MPI_Error_class(rc, &cls);
    }
    MPI_Allreduce(&due, &again, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (again)
        rc = MPI_Alltoall(sbuf, BIG, MPI_INT, rbuf, BIG, MPI_INT, comm);
    if (rc != MPI_SUCCESS) {
        errs++;
        printf("case %d rank %d: a correct Alltoall after the mismatch failed\n", c, rank);
    }
    if (seen && cls != MPI_ERR_TRUNCATE) {
        errs++;
        printf("case %d rank %d: error class %d, want MPI_ERR_TRUNCATE\n", c, rank, cls);
    }
    MPI_Comm_free(&comm);
    free(sbuf);
    free(rbuf);
    return errs;
}

/* A fresh communicator after the erroneous calls: the data is right. */
static int check_world(int rank, int size)
{
    int errs = 0;
    int *sbuf = malloc((size_t) size * BIG * sizeof(int));
    int *rbuf = malloc((size_t) size * BIG * sizeof(int));
    for (int i = 0; i < size * BIG; i++)
        sbuf[i] = rank * 1000000 + i;
    MPI_Alltoall(sbuf, BIG, MPI_INT, rbuf, BIG, MPI_INT, MPI_COMM_WORLD);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < BIG; i++)
            if (rbuf[p * BIG + i] != p * 1000000 + rank * BIG + i) {
                errs++;
                printf("rank %d: element %d from %d wrong after the mismatches\n", rank, i, p);
                break;
            }
    free(sbuf);
    free(rbuf);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;

    MPI_Init(&argc, &argv);
    /* T-NBC also reports a late error on stderr, which runtests would count as output */
    if (!freopen("/dev/null", "w", stderr))
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int c = 0; c < (int) (sizeof(cases) / sizeof(cases[0])); c++)
        errs += run_case(c, rank, size);
    errs += check_world(rank, size);
    MTest_Finalize(errs);
    return 0;
}
