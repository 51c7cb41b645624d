/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Arguments other than buffers taken from a receive buffer whose collective is still in flight
 * (the last rank enters late and sends them): the counts and displacements of an Alltoallv (as
 * when an Alltoall of counts precedes it), the arrays of MPI_Type_indexed, the ranks of
 * MPI_Group_incl, the name of MPI_Comm_set_name, the counts of a neighbourhood Alltoallv and
 * of an intercommunicator's Reduce_scatter. MPICH reads them from its argument checks on, under
 * its lock; each call must see the late rank's values. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include "tnbc_test_pvar.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4096              /* ints per pair: 4 pages */
#define VCOUNT 7                /* elements per pair of the Alltoallv */
#define NBLOCKS 8               /* blocks of the indexed type */
#define NAME "a name that came late"

static int rank, size, late, errs;
static MPI_T_pvar_session pvars;

/* What the late rank sends to rank to, at the start of its block: [0, size) Alltoallv counts,
 * [size, 2 size) displacements, then NBLOCKS block lengths and NBLOCKS displacements, then size
 * ranks in reverse order, then NAME, then Reduce_scatter counts for the processes of to's half
 * (GROUP_TOTAL in all). */
enum { AT_COUNTS = 0 };
#define AT_DISPLS (size)
#define AT_BLOCKLENS (2 * size)
#define AT_BLOCKDISPLS (2 * size + NBLOCKS)
#define AT_RANKS (2 * size + 2 * NBLOCKS)
#define AT_NAME (3 * size + 2 * NBLOCKS)
#define AT_GROUP_COUNTS (AT_NAME + 16)
#define GROUP_TOTAL (2 * VCOUNT)        /* elements each half of the intercommunicator reduces */

/* the processes of p's half of MPI_COMM_WORLD (even or odd ranks) */
static int half_size(int p)
{
    return (size + 1 - p % 2) / 2;
}

static void fill_late_block(int *block, int to)
{
    for (int i = 0; i < half_size(to); i++)
        block[AT_GROUP_COUNTS + i] = i == 0 ? GROUP_TOTAL - (half_size(to) - 1) : 1;
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
        fill_late_block(&sbuf[p * COUNT], p);
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
    errs += tnbc_missed_early(pvars, early, rank, "Alltoall");
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

/* Neighbourhood counts and displacements (one per in- or out-neighbour of a ring) */
static void neighbor_alltoallv(int *sbuf, int *rbuf)
{
    MPI_Comm ring;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int sources[2] = { left, right }, destinations[2] = { right, left };
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, sources, MPI_UNWEIGHTED, 2, destinations,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    int vs[2 * VCOUNT], vr[2 * VCOUNT];
    for (int i = 0; i < 2 * VCOUNT; i++) {
        vs[i] = tnbc_value(rank, i / VCOUNT, i % VCOUNT);
        vr[i] = -1;
    }
    const int *block = alltoall_late(sbuf, rbuf);
    MPI_Neighbor_alltoallv(vs, &block[AT_COUNTS], &block[AT_DISPLS], MPI_INT, vr,
                           &block[AT_COUNTS], &block[AT_DISPLS], MPI_INT, ring);
    int bad = 0;
    for (int i = 0; i < 2 * VCOUNT; i++)
        if (vr[i] != tnbc_value(sources[i / VCOUNT], i / VCOUNT, i % VCOUNT) && bad++ < 3)
            printf("rank %d Neighbor_alltoallv: [%d] = %d, want %d\n", rank, i, vr[i],
                   tnbc_value(sources[i / VCOUNT], i / VCOUNT, i % VCOUNT));
    errs += bad != 0;
    MPI_Comm_free(&ring);
}

/* An intercommunicator's Reduce_scatter: one count per process of the local group (the halves
 * differ in size when the number of processes is odd) */
static void intercomm_reduce_scatter(int *sbuf, int *rbuf)
{
    MPI_Comm half, inter;
    int remote_size, local_rank;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &local_rank);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
    MPI_Comm_remote_size(inter, &remote_size);
    int ones[GROUP_TOTAL], v[GROUP_TOTAL];
    for (int i = 0; i < GROUP_TOTAL; i++)
        ones[i] = 1;
    const int *block = alltoall_late(sbuf, rbuf);
    int n = block[AT_GROUP_COUNTS + local_rank];
    MPI_Reduce_scatter(ones, v, &block[AT_GROUP_COUNTS], MPI_INT, MPI_SUM, inter);
    for (int i = 0; i < n; i++)
        if (v[i] != remote_size) {
            errs++;
            printf("rank %d intercomm Reduce_scatter: [%d] = %d, want %d\n", rank, i, v[i],
                   remote_size);
            break;
        }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &(int) { 0 });
    MPI_T_pvar_session_create(&pvars);
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
    if (size >= 3)      /* a ring without double edges */
        neighbor_alltoallv(sbuf, rbuf);
    intercomm_reduce_scatter(sbuf, rbuf);

    free(sbuf);
    free(rbuf);
    MPI_T_pvar_session_free(&pvars);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return 0;
}
