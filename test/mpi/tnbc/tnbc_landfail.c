/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A release that fails: rank 0's Alltoall returns early, then rank 0 uses up the kernel's
 * mappings (vm.max_map_count), so opening the pages of the block that arrives first, between
 * two blocks still coming, cannot split its mapping (mprotect: ENOMEM). The reader touching
 * that block must not wait for ever: every page is opened and the collective's error is
 * returned by a later collective on the communicator (MPI_ERRORS_RETURN). Ranks 1 and 3 come
 * last, rank 2 only once rank 0 is out of mappings. Needs T-NBC on (with it off, rank 0
 * would wait in its first Alltoall for rank 2, which waits for rank 0). */

#define _GNU_SOURCE
#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_MAPS 262144         /* over this vm.max_map_count, filling it costs too much: skip */

static char **filler;
static size_t nfiller;

static long max_map_count(void)
{
    long n = -1;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &n) != 1)
            n = -1;
        fclose(f);
    }
    return n;
}

/* Map single pages, every other one read-only so that none merge, until the kernel refuses. */
static void use_up_mappings(void)
{
    size_t ps = (size_t) sysconf(_SC_PAGESIZE), cap = MAX_MAPS + 1024;
    filler = malloc(cap * sizeof(char *));
    while (nfiller < cap) {
        char *p = mmap(NULL, ps, (nfiller % 2) ? PROT_READ : PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            break;
        filler[nfiller++] = p;
    }
}

static void give_back_mappings(void)
{
    size_t ps = (size_t) sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < nfiller; i++)
        munmap(filler[i], ps);
    free(filler);
}

/* A collective's return code: the late error at most once, on rank 0 only. */
static int late_error(int rc, int rank, int round, int *seen)
{
    int class;
    if (rc == MPI_SUCCESS)
        return 0;
    MPI_Error_class(rc, &class);
    if (rank == 0 && class == MPI_ERR_OTHER && !(*seen)++)
        return 0;
    printf("rank %d round %d: error class %d\n", rank, round, class);
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, token = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0)
        freopen("/dev/null", "w", stderr);      /* the late error is also reported there */
    if (size != 4) {
        printf("run with 4 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long maps = max_map_count();
    if (maps < 0 || maps > MAX_MAPS) {
        MTest_Finalize(0);      /* cannot use up the mappings here: nothing to test */
        return 0;
    }
    size_t ps = (size_t) sysconf(_SC_PAGESIZE);
    const int count = (int) (4 * ps / sizeof(int));     /* ints per pair: 4 pages */
    size_t len = (size_t) size * count * sizeof(int);
    int *sbuf = malloc(len), *rbuf = NULL;
    if (posix_memalign((void **) &rbuf, ps, len) != 0)  /* every block on whole pages */
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < len / sizeof(int); i++)
        sbuf[i] = rank;

    if (rank != 0)
        MPI_Recv(&token, 1, MPI_INT, 0, rank == 2 ? 1 : 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Alltoall(sbuf, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD);
    if (rank == 0) {
        use_up_mappings();
        MPI_Send(&token, 1, MPI_INT, 2, 1, MPI_COMM_WORLD);
        volatile int seen = rbuf[2 * count];    /* waits for block 2, whose release fails */
        (void) seen;
        give_back_mappings();
        MPI_Send(&token, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
        MPI_Send(&token, 1, MPI_INT, 3, 2, MPI_COMM_WORLD);
    }

    /* The failed Alltoall's error comes back, on rank 0 only, from a later T-NBC collective
     * on the communicator once the operation is over (the collective itself is done, with the
     * right data); every other call succeeds with the right data. */
    int seen = 0, again = 1;
    for (int round = 1; round < 50 && again; round++) {
        for (size_t i = 0; i < len / sizeof(int); i++)
            sbuf[i] = rank + 1000 * round;  /* a late landing of round 0 would show */
        int rc = MPI_Alltoall(sbuf, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD);
        errs += late_error(rc, rank, round, &seen);
        if (rc == MPI_SUCCESS) {
            for (int p = 0; p < size; p++)
                if (rbuf[p * count] != p + 1000 * round ||
                    rbuf[p * count + count - 1] != p + 1000 * round) {
                    errs++;
                    printf("rank %d round %d: block %d is %d\n", rank, round, p, rbuf[p * count]);
                    break;
                }
        }
        usleep(10 * 1000);
        int mine = (rank == 0 && !seen);
        rc = MPI_Allreduce(&mine, &again, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        errs += late_error(rc, rank, round, &seen);
    }
    if (rank == 0 && !seen) {
        errs++;
        printf("rank 0: the failed release was never reported\n");
    }

    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
