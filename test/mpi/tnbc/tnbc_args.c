/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Arguments other than buffers taken from a receive buffer whose collective is still in flight
 * (the last rank enters late and sends them): the counts and displacements of an Alltoallv (as
 * when an Alltoall of counts precedes it), the arrays of MPI_Type_indexed, the ranks of
 * MPI_Group_incl, and the name of MPI_Comm_set_name. MPICH reads them from its argument checks
 * on, under its lock; each call must see the late rank's values. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define VCOUNT 7                /* elements per pair of the Alltoallv */
#define NBLOCKS 8               /* blocks of the indexed type */
#define NAME "a name that came late"

static int rank, size, late, errs;

/* What the late rank sends to rank to, at the start of its block: [0, size) Alltoallv counts,
 * [size, 2 size) displacements, then NBLOCKS block lengths and NBLOCKS displacements, then size
 * ranks in reverse order, then NAME. */
enum { AT_COUNTS = 0 };
#define AT_DISPLS (size)
#define AT_BLOCKLENS (2 * size)
#define AT_BLOCKDISPLS (2 * size + NBLOCKS)
#define AT_RANKS (2 * size + 2 * NBLOCKS)
#define AT_NAME (3 * size + 2 * NBLOCKS)

static void fill_late_block(int *block)
{
    for (int p = 0; p < size; p++) {
        block[AT_COUNTS + p] = VCOUNT;
        block[AT_DISPLS + p] = p * VCOUNT;
        block[AT_RANKS + p] = size - 1 - p;
    }
    for (int b = 0; b < NBLOCKS; b++) {
        block[AT_BLOCKLENS + b] = b + 1;
        block[AT_BLOCKDISPLS + b] = 3 * b * NBLOCKS;
    }
    strcpy((char *) &block[AT_NAME], NAME);
}

/* Returns the late rank's block in rbuf, still in flight where T-NBC returned early. */
static const int *alltoall_late(int *sbuf, int *rbuf)
{
    tnbc_fill(sbuf, COUNT, rank, size);
    for (int p = 0; rank == late && p < size; p++)
        fill_late_block(&sbuf[p * COUNT]);
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
    return &rbuf[late * COUNT];
}

static void alltoallv_counts(int *sbuf, int *rbuf)
{
    int *vs = malloc(size * VCOUNT * sizeof(int)), *vr = malloc(size * VCOUNT * sizeof(int));
    for (int i = 0; i < size * VCOUNT; i++) {
        vs[i] = tnbc_value(rank, i / VCOUNT, i % VCOUNT);
        vr[i] = -1;
    }
    const int *block = alltoall_late(sbuf, rbuf);
    MPI_Alltoallv(vs, &block[AT_COUNTS], &block[AT_DISPLS], MPI_INT, vr, &block[AT_COUNTS],
                  &block[AT_DISPLS], MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < size * VCOUNT; i++)
        if (vr[i] != tnbc_value(i / VCOUNT, rank, i % VCOUNT) && bad++ < 3)
            printf("rank %d Alltoallv: [%d] = %d, want %d\n", rank, i, vr[i],
                   tnbc_value(i / VCOUNT, rank, i % VCOUNT));
    errs += bad != 0;
    free(vs);
    free(vr);
}

static void type_indexed(int *sbuf, int *rbuf)
{
    MPI_Datatype t;
    int tsize, want = 0;
    MPI_Aint lb, extent;
    const int *block = alltoall_late(sbuf, rbuf);
    MPI_Type_indexed(NBLOCKS, &block[AT_BLOCKLENS], &block[AT_BLOCKDISPLS], MPI_INT, &t);
    MPI_Type_size(t, &tsize);
    MPI_Type_get_extent(t, &lb, &extent);
    for (int b = 0; b < NBLOCKS; b++)
        want += (b + 1) * (int) sizeof(int);
    if (tsize != want || lb != 0 ||
        extent != (MPI_Aint) (3 * (NBLOCKS - 1) * NBLOCKS + NBLOCKS) * (MPI_Aint) sizeof(int)) {
        errs++;
        printf("rank %d MPI_Type_indexed: size %d lb %ld extent %ld\n", rank, tsize, (long) lb,
               (long) extent);
    }
    MPI_Type_free(&t);
}

static void group_incl(int *sbuf, int *rbuf)
{
    MPI_Group world, reversed;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    const int *block = alltoall_late(sbuf, rbuf);
    MPI_Group_incl(world, size, &block[AT_RANKS], &reversed);
    int r0 = 0, in_world;
    MPI_Group_translate_ranks(reversed, 1, &r0, world, &in_world);
    if (in_world != size - 1) {
        errs++;
        printf("rank %d MPI_Group_incl: rank 0 of the new group is %d, want %d\n", rank,
               in_world, size - 1);
    }
    MPI_Group_free(&reversed);
    MPI_Group_free(&world);
}

static void comm_set_name(int *sbuf, int *rbuf)
{
    MPI_Comm dup;
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    const int *block = alltoall_late(sbuf, rbuf);
    MPI_Comm_set_name(dup, (const char *) &block[AT_NAME]);
    MPI_Comm_get_name(dup, name, &len);
    if (strcmp(name, NAME) != 0) {
        errs++;
        printf("rank %d MPI_Comm_set_name: name \"%s\", want \"%s\"\n", rank, name, NAME);
    }
    MPI_Comm_free(&dup);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    late = size - 1;
    size_t len = (size_t) size * COUNT * sizeof(int);
    int *sbuf = malloc(len), *rbuf;
    /* page aligned: the late block (the last) is whole pages, none completed in the call */
    if (posix_memalign((void **) &rbuf, 4096, len) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);

    alltoallv_counts(sbuf, rbuf);
    type_indexed(sbuf, rbuf);
    group_incl(sbuf, rbuf);
    comm_set_name(sbuf, rbuf);

    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
