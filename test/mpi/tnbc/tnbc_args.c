/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Arguments other than buffers taken from a receive buffer whose collective is still in flight
 * (the last rank enters late and sends them): the counts and displacements of an Alltoallv (as
 * when an Alltoall of counts precedes it), the arrays of MPI_Type_indexed, the ranks of
 * MPI_Group_incl, the name of MPI_Comm_set_name, and counts whose first element comes from
 * another rank: those of a neighbourhood Alltoallv (in- and out-degrees differ) and of an
 * intercommunicator's Reduce_scatter (one per local process; the halves differ in size on 3
 * processes). MPICH reads them from its argument checks on, under its lock; each call must
 * see the late rank's values. */

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
#define MAX_PROCS 8

static int rank, size, late, errs;
static MPI_T_pvar_session pvars;

/* What the late rank sends to rank to, at the start of its block: [0, size) Alltoallv counts,
 * [size, 2 size) displacements, then NBLOCKS block lengths and NBLOCKS displacements, then size
 * ranks in reverse order, then NAME. */
enum { AT_COUNTS = 0 };
#define AT_DISPLS (size)
#define AT_BLOCKLENS (2 * size)
#define AT_BLOCKDISPLS (2 * size + NBLOCKS)
#define AT_RANKS (2 * size + 2 * NBLOCKS)
#define AT_NAME (3 * size + 2 * NBLOCKS)

/* An array that straddles two sub-messages: its first element is the last int rank late - 1
 * sends (set by first_of_straddle, for rank to), the others are the late rank's counts. Its
 * span must be known exactly: a settle of the first element alone does not wait for the late
 * rank. */
static int (*first_of_straddle) (int to);

static const int *straddling(const int *rbuf)
{
    return &rbuf[late * COUNT - 1];
}

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
    for (int p = 0; rank == late - 1 && first_of_straddle && p < size; p++)
        sbuf[p * COUNT + COUNT - 1] = first_of_straddle(p);
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
    errs += tnbc_missed_early(pvars, early, rank, "Alltoall");
    first_of_straddle = NULL;
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

/* A ring with one extra edge 0 -> 2, so that in- and out-degrees differ (needs 3 processes) */
static int ring_out(int r, int *destinations)
{
    int n = 0;
    destinations[n++] = (r + 1) % size;
    if (r == 0)
        destinations[n++] = 2;
    return n;
}

static int ring_in(int r, int *sources)
{
    int n = 0;
    sources[n++] = (r + size - 1) % size;
    if (r == 2)
        sources[n++] = 0;
    return n;
}

static int vcount(int to)
{
    return VCOUNT;
}

/* Neighbourhood counts: the send counts (one per out-neighbour) or the receive counts (one per
 * in-neighbour) straddle the late rank's block */
static void neighbor_alltoallv(int *sbuf, int *rbuf, int straddle_recvcounts)
{
    MPI_Comm ring;
    int sources[2], destinations[2], counts[2] = { VCOUNT, VCOUNT }, displs[2] = { 0, VCOUNT };
    int indegree = ring_in(rank, sources), outdegree = ring_out(rank, destinations);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indegree, sources, MPI_UNWEIGHTED, outdegree,
                                   destinations, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    int vs[2 * VCOUNT], vr[2 * VCOUNT];
    for (int i = 0; i < 2 * VCOUNT; i++) {
        vs[i] = tnbc_value(rank, i / VCOUNT, i % VCOUNT);
        vr[i] = -1;
    }
    first_of_straddle = vcount;
    alltoall_late(sbuf, rbuf);
    const int *counts_late = straddling(rbuf);
    MPI_Neighbor_alltoallv(vs, straddle_recvcounts ? counts : counts_late, displs, MPI_INT, vr,
                           straddle_recvcounts ? counts_late : counts, displs, MPI_INT, ring);
    int bad = 0;
    for (int j = 0; j < indegree; j++) {
        int from_out[2], k = 0, nout = ring_out(sources[j], from_out);
        while (k < nout && from_out[k] != rank)
            k++;
        for (int i = 0; i < VCOUNT; i++)
            if (vr[j * VCOUNT + i] != tnbc_value(sources[j], k, i) && bad++ < 3)
                printf("rank %d Neighbor_alltoallv: from %d [%d] = %d, want %d\n", rank,
                       sources[j], i, vr[j * VCOUNT + i], tnbc_value(sources[j], k, i));
    }
    errs += bad != 0;
    MPI_Comm_free(&ring);
}

/* An intercommunicator's Reduce_scatter between the even and the odd ranks: one count per
 * process of the local group, GROUP_TOTAL elements in all on both sides (the halves differ in
 * size when the number of processes is odd) */
#define GROUP_TOTAL (MAX_PROCS * VCOUNT)

static int half_size(int p)
{
    return (size + 1 - p % 2) / 2;
}

static int first_group_count(int to)
{
    return GROUP_TOTAL - (half_size(to) - 1) * VCOUNT;
}

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
    first_of_straddle = first_group_count;
    alltoall_late(sbuf, rbuf);
    const int *counts = straddling(rbuf);
    MPI_Reduce_scatter(ones, v, counts, MPI_INT, MPI_SUM, inter);
    int n = local_rank == 0 ? first_group_count(rank) : VCOUNT;
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
    int *sbuf = malloc(len), *rbuf = tnbc_page_aligned(len);

    alltoallv_counts(sbuf, rbuf);
    type_indexed(sbuf, rbuf);
    group_incl(sbuf, rbuf);
    comm_set_name(sbuf, rbuf);
    if (size >= 3) {
        neighbor_alltoallv(sbuf, rbuf, 0);
        neighbor_alltoallv(sbuf, rbuf, 1);
    }
    intercomm_reduce_scatter(sbuf, rbuf);

    free(sbuf);
    free(rbuf);
    MPI_T_pvar_session_free(&pvars);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return 0;
}
