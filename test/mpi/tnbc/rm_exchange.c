/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI_Alltoallv through whichever algorithm the environment selects (the testlist runs the
 * reorder, merge and reorder_merge algorithms on fake nodes, MPIR_CVAR_NUM_CLIQUES): uniform,
 * skewed, stencil, random sparse, many small, all-zero and large exchanges, counts that change
 * from call to call, send and receive types with holes, MPI_IN_PLACE (a fallback), the same
 * exchange on a split communicator, and a sender that sends more than its receiver takes
 * (MPI_ERR_TRUNCATE at that receiver, as stock gives; the next call is clean), and one that
 * sends fewer than its receiver takes (accepted, as stock does). */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { UNIFORM, SKEWED, STENCIL, SPARSE, SMALL, ZERO, LARGE, NPATTERNS };
static const char *names[] = { "uniform", "skewed", "stencil", "sparse", "small", "zero",
    "large"
};

static unsigned mix(unsigned x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    return x ^ (x >> 16);
}

static int count_of(int pattern, int src, int dst, int size, int iter)
{
    unsigned h = mix((unsigned) (src * 131 + dst * 7 + iter * 1009));
    switch (pattern) {
        case UNIFORM:
            return 100;
        case SKEWED:
            return (src + dst) % 5 == 0 ? 20000 : 10;
        case STENCIL:
            return ((dst - src + size) % size == 1 || (src - dst + size) % size == 1) ? 3000 : 0;
        case SPARSE:
            return h % 4 == 0 ? (int) (h % 5000) : 0;
        case SMALL:
            return 2;
        case LARGE:
            return src != dst && (src + dst) % 3 == 0 ? 70000 : 5;
        default:
            return 0;
    }
}

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

/* One exchange. holes & 1: the receive type puts element i at int 2i and must leave the odd
 * ints alone; holes & 2: the send type takes element i from int 2i */
static int exchange(MPI_Comm comm, int pattern, int iter, int holes)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    int stot = 0, rtot = 0;
    for (int p = 0; p < size; p++) {
        sc[p] = count_of(pattern, rank, p, size, iter);
        rc[p] = count_of(pattern, p, rank, size, iter);
        sd[p] = stot;
        stot += sc[p];
    }
    for (int p = size - 1; p >= 0; p--) {       /* receive pieces in reverse rank order */
        rd[p] = rtot;
        rtot += rc[p];
    }
    int sstride = (holes & 2) ? 2 : 1;
    int *sbuf = malloc((2 * stot + 1) * sizeof(int)), *rbuf = malloc((2 * rtot + 1) * sizeof(int));
    for (int i = 0; i < 2 * stot + 1; i++)
        sbuf[i] = -9;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < sc[p]; i++)
            sbuf[sstride * (sd[p] + i)] = value(rank, p, i);
    for (int i = 0; i < 2 * rtot + 1; i++)
        rbuf[i] = -7;

    MPI_Datatype strided, rtype = MPI_INT, stype = MPI_INT;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    if (holes & 1)
        rtype = strided;
    if (holes & 2)
        stype = strided;
    MPI_Alltoallv(sbuf, sc, sd, stype, rbuf, rc, rd, rtype, comm);

    int stride = (holes & 1) ? 2 : 1;
    for (int p = 0; p < size; p++) {
        for (int i = 0; i < rc[p]; i++) {
            int got = rbuf[stride * (rd[p] + i)], want = value(p, rank, i);
            if (got != want && errs++ < 5)
                fprintf(stderr, "rank %d %s iter %d: from %d int %d is %d, want %d\n", rank,
                        names[pattern], iter, p, i, got, want);
        }
    }
    if (holes & 1)
        for (int i = 1; i < 2 * rtot; i += 2)
            if (rbuf[i] != -7 && errs++ < 5)
                fprintf(stderr, "rank %d %s: hole %d written\n", rank, names[pattern], i);
    MPI_Type_free(&strided);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sbuf);
    free(rbuf);
    return errs;
}

static int in_place(MPI_Comm comm)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *c = malloc(size * sizeof(int)), *d = malloc(size * sizeof(int));
    int *buf = malloc(size * 50 * sizeof(int));
    for (int p = 0; p < size; p++) {
        c[p] = 50;
        d[p] = 50 * p;
        for (int i = 0; i < 50; i++)
            buf[d[p] + i] = value(rank, p, i);
    }
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, buf, c, d, MPI_INT, comm);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 50; i++)
            if (buf[d[p] + i] != value(p, rank, i) && errs++ < 5)
                fprintf(stderr, "rank %d in place: from %d int %d wrong\n", rank, p, i);
    free(c);
    free(d);
    free(buf);
    return errs;
}

/* rank 0 sends 50 ints to the last rank, which takes 10; then 20 where it takes 50 */
static int truncation(MPI_Comm comm)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sc = calloc(size, sizeof(int)), *rc = calloc(size, sizeof(int));
    int *zd = calloc(size, sizeof(int));
    int sbuf[50] = { 0 }, rbuf[50];
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (rank == 0)
        sc[size - 1] = 50;
    if (rank == size - 1)
        rc[0] = 10;
    int rc_call = MPI_Alltoallv(sbuf, sc, zd, MPI_INT, rbuf, rc, zd, MPI_INT, comm);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc_call, &cls);
    if (rank == size - 1 && cls != MPI_ERR_TRUNCATE) {
        fprintf(stderr, "rank %d: truncation gave class %d, want MPI_ERR_TRUNCATE\n", rank, cls);
        errs++;
    } else if (rank != size - 1 && rank != 0 && cls != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: error class %d in a truncation elsewhere\n", rank, cls);
        errs++;
    }

    /* and fewer than it takes (erroneous but accepted by stock MPICH: the data arrives) */
    int short_send[20];
    for (int i = 0; i < 20; i++)
        short_send[i] = value(0, size - 1, i);
    if (rank == 0)
        sc[size - 1] = 20;
    if (rank == size - 1)
        rc[0] = 50;
    rc_call = MPI_Alltoallv(short_send, sc, zd, MPI_INT, rbuf, rc, zd, MPI_INT, comm);
    if (rc_call != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: a short message gave an error\n", rank);
        errs++;
    } else if (rank == size - 1) {
        for (int i = 0; i < 20; i++)
            if (rbuf[i] != value(0, size - 1, i) && errs++ < 5)
                fprintf(stderr, "rank %d: short message int %d is %d\n", rank, i, rbuf[i]);
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    free(sc);
    free(rc);
    free(zd);
    return errs;
}

/* The CVARs' names of earlier releases are still read: with MPIR_CVAR_TNBC_RM_MERGE_MAX set,
 * MPIR_CVAR_REORDER_MERGE_MSG_MAX (MPI_T) has its value. */
static int old_names(void)
{
    const char *old = getenv("MPIR_CVAR_TNBC_RM_MERGE_MAX");
    int provided, index, count, value = -1, errs = 0;
    MPI_T_cvar_handle handle;

    if (!old)
        return 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (MPI_T_cvar_get_index("MPIR_CVAR_REORDER_MERGE_MSG_MAX", &index) != MPI_SUCCESS) {
        fprintf(stderr, "MPIR_CVAR_REORDER_MERGE_MSG_MAX not found\n");
        errs++;
    } else {
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &count);
        MPI_T_cvar_read(handle, &value);
        MPI_T_cvar_handle_free(&handle);
        if (value != atoi(old)) {
            fprintf(stderr, "MPIR_CVAR_REORDER_MERGE_MSG_MAX is %d, the old name said %s\n",
                    value, old);
            errs++;
        }
    }
    MPI_T_finalize();
    return errs;
}

int main(int argc, char **argv)
{
    int errs = 0, rank, size;
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (int iter = 0; iter < 2; iter++)
        for (int pattern = 0; pattern < NPATTERNS; pattern++)
            errs += exchange(MPI_COMM_WORLD, pattern, iter, 0);
    for (int iter = 0; iter < 6; iter++)        /* the same sparse pattern, then new ones */
        errs += exchange(MPI_COMM_WORLD, SPARSE, iter / 2, 0);
    errs += exchange(MPI_COMM_WORLD, SKEWED, 0, 1);
    errs += exchange(MPI_COMM_WORLD, SPARSE, 3, 1);
    errs += exchange(MPI_COMM_WORLD, LARGE, 0, 2);
    errs += exchange(MPI_COMM_WORLD, SPARSE, 2, 3);
    errs += in_place(MPI_COMM_WORLD);

    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    errs += exchange(half, SKEWED, 0, 0);
    errs += exchange(half, LARGE, 1, 0);
    MPI_Comm_free(&half);

    if (size > 1)
        errs += truncation(MPI_COMM_WORLD);
    errs += exchange(MPI_COMM_WORLD, UNIFORM, 0, 0);
    errs += old_names();

    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
