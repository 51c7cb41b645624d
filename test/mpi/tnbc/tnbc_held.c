/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A trace run's or a sample's receive buffer stays guarded after its collective completed,
 * until its first touches (access orders). An MPI routine handed that buffer before anything
 * read it must release it first: MPI_Send of the whole received buffer (large: UCX's
 * rendezvous lets the peer read it with process_vm_readv, which would get EFAULT), and
 * MPI_Recv into it. Run with MPIR_CVAR_TNBC_TRACE set (every call is a trace run), and without
 * (the buffer is released by the helper's landing: nothing to hold). */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include <stdio.h>
#include <stdlib.h>

#define COUNT (256 * 1024)      /* ints per pair: 1 MiB */

int main(int argc, char **argv)
{
    int rank, size, errs = 0;

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = (size_t) size * COUNT;
    int *sbuf = malloc(n * sizeof(int)), *rbuf = tnbc_page_aligned(n * sizeof(int));
    int *copy = tnbc_page_aligned(n * sizeof(int));
    int to = (rank + 1) % size, from = (rank + size - 1) % size;

    for (int round = 0; round < 3; round++) {
        tnbc_fill(sbuf, COUNT, rank, size);
        tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
        /* send the untouched buffer on; the previous rank's arrives in another */
        MPI_Sendrecv(rbuf, (int) n, MPI_INT, to, round, copy, (int) n, MPI_INT, from, round,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (copy[(size_t) p * COUNT + i] != tnbc_value(p, from, i) && errs++ < 5)
                    printf("rank %d round %d: forwarded block %d [%d] wrong\n", rank, round,
                           p, i);
        /* and a guarded buffer received into */
        tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
        MPI_Sendrecv(copy, (int) n, MPI_INT, to, 100 + round, rbuf, (int) n, MPI_INT, from,
                     100 + round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                if (rbuf[(size_t) p * COUNT + i] != tnbc_value(p, (from + size - 1) % size, i)
                    && errs++ < 5)
                    printf("rank %d round %d: block %d [%d] received over a held one wrong\n",
                           rank, round, p, i);
    }
    free(sbuf);
    free(rbuf);
    free(copy);
    MTest_Finalize(errs);
    return 0;
}
