/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The reductions with T-NBC: Allreduce, Reduce (every root), Reduce_scatter,
 * Reduce_scatter_block, Scan and Exscan, with and without MPI_IN_PLACE, on int, long, double
 * and MPI_2INT (MINLOC), at sizes around the edge and chunk boundaries (fewer elements than
 * processes too). The result is read right after the call in forward, reverse or scattered
 * order, and the input is overwritten at once (it must already be safe). A user-defined op and
 * MPI_DOUBLE_INT are declined by T-NBC and must still be right. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>

static int rank, size, errs;

enum { FORWARD, REVERSE, SCATTERED, NORDERS };

/* Input element i of process q, and the sum of it over processes lo..hi. */
static long input(int q, long i)
{
    return (long) (q + 1) * (i % 1000 + 1);
}

static long input_sum(int lo, int hi, long i)
{
    return (long) ((hi + 1) * (hi + 2) / 2 - lo * (lo + 1) / 2) * (i % 1000 + 1);
}

/* The j-th index to read in the given order: a stride coprime with n scatters the reads. */
static long nth(long j, long n, int order)
{
    if (order == FORWARD)
        return j;
    if (order == REVERSE)
        return n - 1 - j;
    long stride = 7919;
    while (n % stride == 0)
        stride += 2;
    return (j * stride) % n;
}

static void report(const char *what, long count, long i, double got, double want)
{
    if (errs < 10)
        fprintf(stderr, "rank %d %s count %ld [%ld]: got %g expected %g\n", rank, what, count,
                i, got, want);
    errs++;
}

/* ---- one typed vector: fill, overwrite, check ---- */

typedef struct {
    MPI_Datatype type;
    size_t elem;
    const char *name;
} type_t;

static const type_t types[] = {
    {MPI_INT, sizeof(int), "int"},
    {MPI_LONG, sizeof(long), "long"},
    {MPI_DOUBLE, sizeof(double), "double"},
};

static void put(const type_t * t, void *buf, long i, long v)
{
    if (t->type == MPI_INT)
        ((int *) buf)[i] = (int) v;
    else if (t->type == MPI_LONG)
        ((long *) buf)[i] = v;
    else
        ((double *) buf)[i] = (double) v;
}

static double get(const type_t * t, const void *buf, long i)
{
    if (t->type == MPI_INT)
        return ((const int *) buf)[i];
    if (t->type == MPI_LONG)
        return (double) ((const long *) buf)[i];
    return ((const double *) buf)[i];
}

/* elements [0, n) of buf hold input_sum(lo, hi, first + i), read in the given order */
static void check_sums(const type_t * t, const void *buf, long n, long first, int lo, int hi,
                       int order, const char *what, long count)
{
    for (long j = 0; j < n; j++) {
        long i = nth(j, n, order);
        double want = (double) input_sum(lo, hi, first + i);
        if (get(t, buf, i) != want)
            report(what, count, i, get(t, buf, i), want);
    }
}

static void *alloc_vec(const type_t * t, long n)
{
    return malloc((n + 1) * t->elem);
}

/* ---- the collectives ---- */

static void allreduce(const type_t * t, long count, int in_place, int order)
{
    void *s = alloc_vec(t, count), *r = alloc_vec(t, count);
    for (long i = 0; i < count; i++) {
        put(t, s, i, input(rank, i));
        put(t, r, i, in_place ? input(rank, i) : -1);
    }
    MPI_Allreduce(in_place ? MPI_IN_PLACE : s, r, (int) count, t->type, MPI_SUM, MPI_COMM_WORLD);
    for (long i = 0; i < count; i++)
        put(t, s, i, -5);
    check_sums(t, r, count, 0, 0, size - 1, order, "allreduce", count);
    free(s);
    free(r);
}

static void reduce(const type_t * t, long count, int root, int in_place, int order)
{
    int me_root = (rank == root), ip = in_place && me_root;
    void *s = alloc_vec(t, count), *r = alloc_vec(t, count);
    for (long i = 0; i < count; i++) {
        put(t, s, i, input(rank, i));
        put(t, r, i, ip ? input(rank, i) : -1);
    }
    MPI_Reduce(ip ? MPI_IN_PLACE : s, r, (int) count, t->type, MPI_SUM, root, MPI_COMM_WORLD);
    for (long i = 0; i < count; i++)
        put(t, s, i, -5);
    if (me_root)
        check_sums(t, r, count, 0, 0, size - 1, order, "reduce", count);
    else
        for (long i = 0; i < count; i++)        /* untouched off the root */
            if (get(t, r, i) != -1)
                report("reduce (non-root buffer)", count, i, get(t, r, i), -1);
    free(s);
    free(r);
}

static void reduce_scatter(const type_t * t, long count, int block, int in_place, int order)
{
    int *rc = malloc(size * sizeof(int));
    long total = 0, mine = 0;
    for (int k = 0; k < size; k++) {
        rc[k] = block ? (int) count : (int) (count + (k * 5) % 3);
        if (k < rank)
            mine += rc[k];
        total += rc[k];
    }
    void *s = alloc_vec(t, total), *r = alloc_vec(t, in_place ? total : rc[rank]);
    for (long i = 0; i < total; i++)
        put(t, s, i, input(rank, i));
    if (in_place)
        for (long i = 0; i < total; i++)
            put(t, r, i, input(rank, i));
    const void *sb = in_place ? MPI_IN_PLACE : s;
    if (block)
        MPI_Reduce_scatter_block(sb, r, (int) count, t->type, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Reduce_scatter(sb, r, rc, t->type, MPI_SUM, MPI_COMM_WORLD);
    for (long i = 0; i < total; i++)
        put(t, s, i, -5);
    check_sums(t, r, rc[rank], mine, 0, size - 1, order,
               block ? "reduce_scatter_block" : "reduce_scatter", count);
    free(s);
    free(r);
    free(rc);
}

static void scan(const type_t * t, long count, int exclusive, int in_place, int order)
{
    void *s = alloc_vec(t, count), *r = alloc_vec(t, count);
    for (long i = 0; i < count; i++) {
        put(t, s, i, input(rank, i));
        put(t, r, i, in_place ? input(rank, i) : -1);
    }
    if (exclusive)
        MPI_Exscan(in_place ? MPI_IN_PLACE : s, r, (int) count, t->type, MPI_SUM,
                   MPI_COMM_WORLD);
    else
        MPI_Scan(in_place ? MPI_IN_PLACE : s, r, (int) count, t->type, MPI_SUM, MPI_COMM_WORLD);
    for (long i = 0; i < count; i++)
        put(t, s, i, -5);
    if (!exclusive || rank > 0)
        check_sums(t, r, count, 0, 0, rank - exclusive, order, exclusive ? "exscan" : "scan",
                   count);
    free(s);
    free(r);
}

/* MINLOC on MPI_2INT (taken), MAXLOC on MPI_DOUBLE_INT (declined: padded) */
static void loc_pairs(long count, int order)
{
    struct {
        int v, k;
    } *s = malloc((count + 1) * sizeof(*s)), *r = malloc((count + 1) * sizeof(*r));
    struct {
        double v;
        int k;
    } *ds = malloc((count + 1) * sizeof(*ds)), *dr = malloc((count + 1) * sizeof(*dr));
    for (long i = 0; i < count; i++) {
        s[i].v = (int) ((i * 7 + rank * 13) % 17);
        s[i].k = rank;
        ds[i].v = (double) s[i].v;
        ds[i].k = rank;
    }
    MPI_Allreduce(s, r, (int) count, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    MPI_Allreduce(ds, dr, (int) count, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    for (long j = 0; j < count; j++) {
        long i = nth(j, count, order);
        int minv = 1 << 30, mink = -1, maxv = -1, maxk = -1;
        for (int q = 0; q < size; q++) {
            int v = (int) ((i * 7 + q * 13) % 17);
            if (v < minv) {
                minv = v;
                mink = q;
            }
            if (v > maxv) {
                maxv = v;
                maxk = q;
            }
        }
        if (r[i].v != minv || r[i].k != mink)
            report("minloc 2int", count, i, r[i].v, minv);
        if (dr[i].v != maxv || dr[i].k != maxk)
            report("maxloc double_int", count, i, dr[i].v, maxv);
    }
    free(s);
    free(r);
    free(ds);
    free(dr);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype * type)
{
    for (int i = 0; i < *len; i++)
        ((int *) inout)[i] += ((int *) in)[i];
}

static void user_op(long count)
{
    MPI_Op op;
    int *s = malloc((count + 1) * sizeof(int)), *r = malloc((count + 1) * sizeof(int));
    MPI_Op_create(user_sum, 1, &op);
    for (long i = 0; i < count; i++)
        s[i] = (int) input(rank, i);
    MPI_Allreduce(s, r, (int) count, MPI_INT, op, MPI_COMM_WORLD);
    check_sums(&types[0], r, count, 0, 0, size - 1, FORWARD, "user op", count);
    MPI_Op_free(&op);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* elements: fewer than processes, one edge, two edges and a bit, about 1.2 MB of ints */
    const long counts[] = { 3, 1000, 2 * 4096 / 4 + 1, 300007 };
    int ncounts = sizeof(counts) / sizeof(counts[0]);
    int step = 0;
    for (int c = 0; c < ncounts; c++) {
        for (unsigned ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
            const type_t *t = &types[ti];
            long n = counts[c];
            if (t->elem > sizeof(int) && n > 100000)
                n /= 2;
            for (int in_place = 0; in_place <= 1; in_place++) {
                int order = step++ % NORDERS;
                allreduce(t, n, in_place, order);
                reduce(t, n, (int) (step % size), in_place, order);
                reduce_scatter(t, n / size + 1, 0, in_place, order);
                reduce_scatter(t, n / size + 1, 1, in_place, order);
                scan(t, n, 0, in_place, order);
                scan(t, n, 1, in_place, order);
            }
        }
        for (int root = 0; root < size; root++)
            reduce(&types[0], counts[c], root, 0, (root + c) % NORDERS);
        loc_pairs(counts[c], c % NORDERS);
        user_op(counts[c]);
    }

    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
