/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Send buffers with holes the call never reads: a PROT_NONE page between the pieces that the
 * displacements skip (Alltoallv; Scatterv at the root with MPI_IN_PLACE), and pieces in two
 * separate mappings with an unmapped range between them, named by absolute addresses from
 * MPI_BOTTOM (Neighbor_alltoallw on a ring). MPI reads only the pieces, so the calls are legal;
 * T-NBC must copy or guard the pieces, never the bytes between them. Pieces are below and
 * above the edge size, and the send buffer is overwritten at once after every call. */

#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int rank, size, errs;
static size_t page;

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

/* npieces pieces of `stride` bytes each with a PROT_NONE page after it */
static char *holed(int npieces, size_t stride)
{
    size_t len = npieces * (stride + page);
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    for (int p = 0; p < npieces; p++)
        mprotect(m + p * (stride + page) + stride, page, PROT_NONE);
    return m;
}

static void check(const int *r, int src, int count, const char *what)
{
    for (int i = 0; i < count; i++)
        if (r[i] != value(src, rank, i)) {
            if (errs++ < 10)
                printf("rank %d %s count %d: [%d] from %d is %d, want %d\n", rank, what, count,
                       i, src, r[i], value(src, rank, i));
            return;
        }
}

static void alltoallv(int count)
{
    size_t stride = (count * sizeof(int) + page - 1) / page * page;
    char *s = holed(size, stride);
    int *r = malloc((size_t) size * count * sizeof(int));
    int *sc = malloc(4 * size * sizeof(int)), *sd = sc + size, *rc = sd + size, *rd = rc + size;
    for (int p = 0; p < size; p++) {
        int *piece = (int *) (s + p * (stride + page));
        for (int i = 0; i < count; i++)
            piece[i] = value(rank, p, i);
        sc[p] = rc[p] = count;
        sd[p] = (int) (p * (stride + page) / sizeof(int));
        rd[p] = p * count;
    }
    MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int p = 0; p < size; p++)
        memset(s + p * (stride + page), 0xff, count * sizeof(int));
    for (int p = size - 1; p >= 0; p--)
        check(r + p * count, p, count, "Alltoallv");
    munmap(s, size * (stride + page));
    free(r);
    free(sc);
}

static void scatterv_in_place(int count)
{
    size_t stride = (count * sizeof(int) + page - 1) / page * page;
    int root = size - 1;
    char *s = NULL;
    int *sc = NULL, *sd = NULL;
    int *r = malloc(count * sizeof(int));
    if (rank == root) {
        s = holed(size, stride);
        sc = malloc(2 * size * sizeof(int));
        sd = sc + size;
        for (int p = 0; p < size; p++) {
            int *piece = (int *) (s + p * (stride + page));
            for (int i = 0; i < count; i++)
                piece[i] = value(root, p, i);
            sc[p] = count;
            sd[p] = (int) (p * (stride + page) / sizeof(int));
        }
        MPI_Scatterv(s, sc, sd, MPI_INT, MPI_IN_PLACE, count, MPI_INT, root, MPI_COMM_WORLD);
        check((int *) (s + root * (stride + page)), root, count, "Scatterv in place (root)");
        for (int p = 0; p < size; p++)
            memset(s + p * (stride + page), 0xff, count * sizeof(int));
        munmap(s, size * (stride + page));
        free(sc);
    } else {
        MPI_Scatterv(NULL, NULL, NULL, MPI_INT, r, count, MPI_INT, root, MPI_COMM_WORLD);
        check(r, root, count, "Scatterv in place");
    }
    free(r);
}

/* ring: send piece k to (rank + 1 + k) % size for k = 0, 1; each piece in its own mapping,
 * the two mappings apart (the range between them unmapped) */
static void neighbor_alltoallw_bottom(int count)
{
    int dst[2], src[2];
    for (int k = 0; k < 2; k++) {
        dst[k] = (rank + 1 + k) % size;
        src[k] = (rank - 1 - k + 2 * size) % size;
    }
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    size_t len = (count * sizeof(int) + page - 1) / page * page;
    /* reserve three pieces' room, keep the outer two, unmap the middle */
    char *m = mmap(NULL, 3 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        errs++;
        return;
    }
    munmap(m + len, len);
    int *piece[2] = { (int *) m, (int *) (m + 2 * len) };
    int *r = malloc(2 * (size_t) count * sizeof(int));
    int sc[2], rc[2];
    MPI_Aint sd[2], rd[2];
    MPI_Datatype st[2], rt[2];
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < count; i++)
            piece[k][i] = value(rank, dst[k], i);
        MPI_Get_address(piece[k], &sd[k]);
        sc[k] = rc[k] = count;
        rd[k] = k * (MPI_Aint) count * sizeof(int);
        st[k] = rt[k] = MPI_INT;
    }
    MPI_Neighbor_alltoallw(MPI_BOTTOM, sc, sd, st, r, rc, rd, rt, ring);
    for (int k = 0; k < 2; k++)
        memset(piece[k], 0xff, count * sizeof(int));
    for (int k = 1; k >= 0; k--)
        check(r + k * count, src[k], count, "Neighbor_alltoallw from MPI_BOTTOM");
    munmap(m, len);
    munmap(m + 2 * len, len);
    free(r);
    MPI_Comm_free(&ring);
}

int main(int argc, char **argv)
{
    static const int counts[] = { 100, 1024, 5000, 70000 };

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    page = sysconf(_SC_PAGESIZE);
    for (int c = 0; c < (int) (sizeof(counts) / sizeof(counts[0])); c++) {
        alltoallv(counts[c]);
        scatterv_in_place(counts[c]);
        neighbor_alltoallw_bottom(counts[c]);
    }
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
