/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The schedules T-NBC's own builders make, printed for maint/tnbc-predict: the replay posts
 * what the library would post, in the library's order, instead of deriving it again. Links the
 * pure builders (tnbc_sched*.c, tnbc_priority.c); maint/tnbc_replay.py compiles it on demand.
 *
 * Reads one job from stdin, whitespace-separated:
 *   alltoallv SIZE REPORTS PRIORITIES      then SIZE rows of SIZE byte counts (row = sender),
 *                                          then SIZE access orders (row r: the source ranks in
 *                                          the order rank r reads their blocks)
 *   bcast SIZE ROOT NBYTES NSEG PRIORITIES then the tree's order of ranks (SIZE ranks, the
 *                                          root first), then SIZE access orders of the pieces
 * With PRIORITIES 0 no order reaches the builder (ring order, first in first out) and none is
 * read; with 1 each rank posts its receives in its access order and its sends in its readers'
 * (the steady state of online learning, where every reader's order has been reported).
 *
 * Prints, per rank:
 *   rank R ENTRIES BODY_PRIO BODY_WINDOW
 *   e INDEX KIND PEER OFF LEN PRIO AFTER AFTER2 TAG BLOCK SUB     (in posting order)
 * KIND is send, recv, copy or reduce; OFF the offset in the entry's space; BLOCK the block of
 * the access order a receive fills (-1: the peer's); SUB the receive sub-message it fills (-1:
 * none). */

#include "tnbc_sched.h"
#include "tnbc_priority.h"

#include <stdio.h>
#include <stdlib.h>

static const char *kind_name[] = { "send", "recv", "copy", "reduce" };

static int read_ints(int *v, int n)
{
    for (int i = 0; i < n; i++)
        if (scanf("%d", &v[i]) != 1)
            return 0;
    return 1;
}

static void print_sched(int rank, const MPIR_Tnbc_sched_t * s)
{
    int *block = malloc(((size_t) s->nrecv_sub + 1) * sizeof(int));
    MPIR_Tnbc_sched_recv_sub_blocks(s, block);
    printf("rank %d %d %d %d\n", rank, s->n, s->body_prio, s->body_window);
    for (int k = 0; k < s->n; k++) {
        int i = s->order[k];
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        int fills = MPIR_Tnbc_entry_fills_recv(e) && e->sub >= 0;
        int b = fills ? (e->block >= 0 ? e->block : block[e->sub]) : -1;
        printf("e %d %s %d %zu %zu %d %d %d %d %d %d\n", i, kind_name[e->kind], e->peer, e->off,
               e->len, e->prio, e->after, e->after2, e->tag, b, fills ? e->sub : -1);
    }
    free(block);
}

/* Print what a builder made for rank (rc: its result) and free it; nonzero when it failed. */
static int emit_sched(int rank, MPIR_Tnbc_sched_t * s, int rc, const char *what)
{
    if (rc == MPIR_TNBC_SCHED_OK)
        print_sched(rank, s);
    else
        fprintf(stderr, "tnbc_sched_export: %s builder failed (%d)\n", what, rc);
    MPIR_Tnbc_sched_free(s);
    return rc != MPIR_TNBC_SCHED_OK;
}

/* pos[b] = where the reader reads block b, from the blocks in reading order */
static void positions(const int *blocks, int n, int *pos)
{
    for (int b = 0; b < n; b++)
        pos[b] = -1;
    for (int i = 0; i < n; i++)
        if (blocks[i] >= 0 && blocks[i] < n)
            pos[blocks[i]] = i;
}

static int export_alltoallv(void)
{
    int size, reports, prio;
    if (scanf("%d %d %d", &size, &reports, &prio) != 3 || size < 1)
        return 1;
    size_t n = (size_t) size;
    size_t *counts = malloc(n * n * sizeof(size_t));
    int *orders = malloc(n * n * sizeof(int)), *pos = malloc(n * n * sizeof(int));
    size_t *sb = malloc(n * sizeof(size_t)), *so = malloc(n * sizeof(size_t));
    size_t *rb = malloc(n * sizeof(size_t)), *ro = malloc(n * sizeof(size_t));
    int *reader_pos = malloc(n * sizeof(int)), *send_pos = malloc(n * sizeof(int));
    for (size_t i = 0; i < n * n; i++)
        if (scanf("%zu", &counts[i]) != 1)
            return 1;
    if (prio && !read_ints(orders, size * size))
        return 1;
    for (int r = 0; prio && r < size; r++)
        positions(&orders[r * n], size, &pos[r * n]);
    for (int r = 0; r < size; r++) {
        size_t at = 0;
        for (int p = 0; p < size; p++) {
            sb[p] = counts[r * n + p];
            so[p] = at;
            at += sb[p];
        }
        at = 0;
        for (int p = 0; p < size; p++) {
            rb[p] = counts[p * n + r];
            ro[p] = at;
            at += rb[p];
        }
        for (int p = 0; p < size; p++)
            reader_pos[p] = prio ? pos[p * n + r] : -1; /* where reader p reads our block */
        MPIR_Tnbc_send_order_by_readers(reader_pos, r, size, send_pos);
        MPIR_Tnbc_sched_t s;
        MPIR_Tnbc_sched_init(&s);
        int rc = MPIR_Tnbc_sched_alltoallv_ordered(&s, r, size, sb, so, rb, ro,
                                                   prio ? &pos[r * n] : NULL,
                                                   prio ? send_pos : NULL, reports);
        if (emit_sched(r, &s, rc, "alltoallv"))
            return 1;
    }
    return 0;
}

static int export_bcast(void)
{
    int size, root, nseg, prio;
    size_t nbytes;
    if (scanf("%d %d %zu %d %d", &size, &root, &nbytes, &nseg, &prio) != 5 || size < 1)
        return 1;
    int npieces = MPIR_Tnbc_bcast_pieces(nbytes, nseg);
    int *ranks = malloc((size_t) size * sizeof(int));
    int *orders = malloc((size_t) size * npieces * sizeof(int));
    int *pos = malloc((size_t) size * npieces * sizeof(int));
    if (!read_ints(ranks, size) || (prio && !read_ints(orders, size * npieces)))
        return 1;
    for (int r = 0; prio && r < size; r++)
        positions(&orders[r * npieces], npieces, &pos[r * npieces]);
    for (int r = 0; r < size; r++) {
        int parent, children[MPIR_TNBC_BCAST_MAX_CHILDREN];
        const int *child_pos[MPIR_TNBC_BCAST_MAX_CHILDREN];
        int nchildren = MPIR_Tnbc_bcast_tree(r, size, root, ranks, &parent, children);
        for (int c = 0; c < nchildren; c++)
            child_pos[c] = prio ? &pos[children[c] * npieces] : NULL;
        MPIR_Tnbc_bcast_order_t order = {
            prio ? &pos[r * npieces] : NULL, child_pos, ranks
        };
        MPIR_Tnbc_sched_t s;
        MPIR_Tnbc_sched_init(&s);
        int rc = MPIR_Tnbc_sched_bcast(&s, r, size, root, nbytes, nseg, &order);
        if (emit_sched(r, &s, rc, "bcast"))
            return 1;
    }
    return 0;
}

int main(void)
{
    char what[32];
    if (scanf("%31s", what) != 1)
        return 1;
    if (what[0] == 'a')
        return export_alltoallv();
    if (what[0] == 'b')
        return export_bcast();
    fprintf(stderr, "tnbc_sched_export: unknown job %s\n", what);
    return 1;
}
