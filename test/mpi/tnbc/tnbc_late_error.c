/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* An error after the early return. Rank 0 expects fewer ints from rank 1 than rank 1 sends
 * (erroneous: stock MPICH returns MPI_ERR_TRUNCATE from the call). With MPI_ERRORS_RETURN on
 * the communicator, the truncation must come back from that Alltoallv or, if it was found
 * after the call returned, from a later collective on the communicator; never be lost. */

#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define TRIES 50

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Comm comm;

    MPI_Init(&argc, &argv);
    /* T-NBC also reports the late error on stderr, which runtests would count as output */
    if (!freopen("/dev/null", "w", stderr))
        return 1;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sbuf = calloc((size_t) size * 2 * COUNT, sizeof(int));
    int *rbuf = calloc((size_t) size * 2 * COUNT, sizeof(int));
    int *scounts = malloc(size * sizeof(int)), *rcounts = malloc(size * sizeof(int));
    int *sdispls = malloc(size * sizeof(int)), *rdispls = malloc(size * sizeof(int));
    for (int p = 0; p < size; p++) {
        scounts[p] = rcounts[p] = COUNT;
        sdispls[p] = rdispls[p] = 2 * p * COUNT;
    }
    if (rank == 1)
        scounts[0] = 2 * COUNT;
    if (rank == 1)
        usleep(200 * 1000);     /* the truncation happens after rank 0's call returned */

    int rc = MPI_Alltoallv(sbuf, scounts, sdispls, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, comm);
    /* every process runs the same calls: rank 0 says when it has seen the error */
    int seen = rc, done = 0;
    for (int t = 0; t < TRIES; t++) {
        done = (seen != MPI_SUCCESS);
        MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (done)
            break;
        usleep(10 * 1000);
        rc = MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, comm);
        if (seen == MPI_SUCCESS)
            seen = rc;
    }
    if (rank == 0) {
        int cls = MPI_SUCCESS;
        if (seen != MPI_SUCCESS)
            MPI_Error_class(seen, &cls);
        if (cls != MPI_ERR_TRUNCATE) {
            errs++;
            printf("rank 0: error class %d, want MPI_ERR_TRUNCATE (%d)\n", cls, MPI_ERR_TRUNCATE);
        }
    }

    MPI_Comm_free(&comm);
    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
