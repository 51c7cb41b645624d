/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* An error travels down a tree (MPICH's errflag). A Bcast whose count is too small at an inner
 * process of the tree (erroneous): that process gets MPI_ERR_TRUNCATE and forwards fewer bytes
 * than its children expect, which they receive without an error of their own. Stock MPICH
 * sets the error bit in the tags of what the failed process forwards, so its children fail
 * too; T-NBC's messages must carry it the same way. What is checked: no process keeps wrong
 * data without learning of an error (from the call, or from a later collective on the
 * communicator when the call returned early), the run does not hang, and the communicator
 * goes on working. */

#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TRIES 50
#define COUNT 2048              /* ints: 8 KiB, a binomial tree for stock MPICH too */

static void fill(int *buf, int n, int seed)
{
    for (int i = 0; i < n; i++)
        buf[i] = seed * 1000000 + i;
}

static int wrong(const int *buf, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != seed * 1000000 + i)
            return 1;
    return 0;
}

/* Later correct calls on comm until some process has seen an error (a late error is reported
 * by the next collective on the communicator that returns early). */
static int learn(MPI_Comm comm, int seen, int *buf)
{
    int any = 0;
    for (int t = 0; t < TRIES; t++) {
        MPI_Allreduce(&seen, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any)
            break;
        usleep(10 * 1000);
        if (MPI_Bcast(buf, COUNT, MPI_INT, 0, comm) != MPI_SUCCESS)
            seen = 1;
    }
    /* one more call: a process whose error was still due gets it here */
    int due = (MPI_Bcast(buf, COUNT, MPI_INT, 0, comm) != MPI_SUCCESS), again = 0;
    MPI_Allreduce(&due, &again, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (again)
        MPI_Bcast(buf, COUNT, MPI_INT, 0, comm);
    return seen || due;
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
    int inner = size / 2;       /* in a binomial tree from rank 0, the parent of size/2 + 1 */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int *buf = malloc(COUNT * sizeof(int));

    if (rank == 0)
        fill(buf, COUNT, 7);
    int n = (rank == inner) ? COUNT / 2 : COUNT;
    int seen = (MPI_Bcast(buf, n, MPI_INT, 0, comm) != MPI_SUCCESS);
    int bad = (rank != 0 && wrong(buf, n, 7));
    seen = learn(comm, seen, buf);
    if (bad && !seen) {
        errs++;
        printf("rank %d: wrong data and no error reported\n", rank);
    }
    int bad_any = 0;
    MPI_Allreduce(&bad, &bad_any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !bad_any)
        printf("no process got wrong data: the tree did not pass through rank %d\n", inner);

    /* the communicator goes on */
    if (rank == 0)
        fill(buf, COUNT, 9);
    if (MPI_Bcast(buf, COUNT, MPI_INT, 0, comm) != MPI_SUCCESS || wrong(buf, COUNT, 9)) {
        errs++;
        printf("rank %d: a correct Bcast after the mismatch failed\n", rank);
    }
    MPI_Comm_free(&comm);
    free(buf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
