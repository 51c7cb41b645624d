/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A call site that returns early at some calls and waits at others (MPIR_CVAR_TNBC_RETURN,
 * default adaptive: the way that cost the application less there): the data must be right
 * whichever way each call went, while an early call of the same site is still in flight, and
 * when the application changes from reading at once to working first and back. Alltoall,
 * Bcast and Allreduce (whose site the launch finds), from 8 KiB to 1 MiB per block. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>

static double value(int src, int dst, size_t i, int round)
{
    return src * 1.0e6 + dst * 1.0e3 + (double) (i % 991) + round * 0.5;
}

static volatile double sink;

/* a few hundred microseconds that touch no MPI buffer */
static void work(void)
{
    double acc = 0;
    for (int i = 0; i < 200000; i++)
        acc += i * 0.5;
    sink += acc;
}

static int phase(size_t count, int rounds, int work_every)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = (size_t) size * count;
    double *sbuf = malloc(n * sizeof(double)), *rbuf = malloc(n * sizeof(double));
    double *bbuf = malloc(count * sizeof(double)), *abuf = malloc(count * sizeof(double));
    double *asum = malloc(count * sizeof(double));
    if (!sbuf || !rbuf || !bbuf || !abuf || !asum)
        MPI_Abort(MPI_COMM_WORLD, 1);

    for (int r = 0; r < rounds; r++) {
        int root = r % size;
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < count; i++)
                sbuf[p * count + i] = value(rank, p, i, r);
        for (size_t i = 0; i < count; i++) {
            bbuf[i] = rank == root ? value(root, 0, i, r) : -1;
            abuf[i] = value(rank, 0, i, r);
        }
        MPI_Alltoall(sbuf, (int) count, MPI_DOUBLE, rbuf, (int) count, MPI_DOUBLE,
                     MPI_COMM_WORLD);
        MPI_Bcast(bbuf, (int) count, MPI_DOUBLE, root, MPI_COMM_WORLD);
        MPI_Allreduce(abuf, asum, (int) count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (work_every && r % work_every == 0)
            work();
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < count; i++)
                if (rbuf[p * count + i] != value(p, rank, i, r) && errs++ < 3)
                    fprintf(stderr, "rank %d round %d: alltoall from %d [%zu] wrong\n", rank, r,
                            p, i);
        for (size_t i = 0; i < count; i++) {
            double want = 0;
            for (int p = 0; p < size; p++)
                want += value(p, 0, i, r);
            if (bbuf[i] != value(root, 0, i, r) && errs++ < 3)
                fprintf(stderr, "rank %d round %d: bcast [%zu] wrong\n", rank, r, i);
            if (asum[i] != want && errs++ < 3)
                fprintf(stderr, "rank %d round %d: allreduce [%zu] wrong\n", rank, r, i);
        }
    }
    free(sbuf);
    free(rbuf);
    free(bbuf);
    free(abuf);
    free(asum);
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0;
    MTest_Init(&argc, &argv);
    for (size_t bytes = 8192; bytes <= (1 << 20); bytes *= 8) {
        size_t count = bytes / sizeof(double);
        int rounds = bytes >= (1 << 20) ? 40 : 80;
        errs += phase(count, rounds, 0);        /* reads at once: waiting should win */
        errs += phase(count, rounds, 1);        /* works first */
        errs += phase(count, rounds, 3);        /* both, in turn */
    }
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
