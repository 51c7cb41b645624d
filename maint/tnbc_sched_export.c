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
 *   summary SIZE REPORTS PRIORITIES NNODES  as alltoallv, with each rank's node (SIZE ints)
 *                                          after the counts
 *   merge NNODES FIRST CAP                 then the node graph (NNODES rows of NNODES bytes,
 *                                          row = source node), then NSTREAMS, then per stream
 *                                          of merged messages: SRC_NODE DST_NODE N DIRECT
 *                                          BYTES x N (DIRECT: the sender's messages to that
 *                                          node sent directly, which its first aggregate
 *                                          announces)
 * With PRIORITIES 0 no order reaches the builder (ring order, first in first out) and none is
 * read; with 1 each rank posts its receives in its access order and its sends in its readers'
 * (the steady state of online learning, where every reader's order has been reported).
 *
 * Prints, per rank:
 *   rank R ENTRIES BODY_PRIO BODY_WINDOW
 *   e INDEX KIND PEER OFF LEN PRIO AFTER AFTER2 TAG BLOCK SUB     (in posting order)
 * KIND is send, recv, copy or reduce; OFF the offset in the entry's space; BLOCK the block of
 * the access order a receive fills (-1: the peer's); SUB the receive sub-message it fills (-1:
 * none). A summary (for the node-level replay, where a line per entry would not fit) prints
 * instead of the e lines:
 *   E BYTES...         what the rank sends besides bodies (edges, reports), per node
 *   N SENDS BODIES     how many messages it sends besides bodies, and bodies
 *   B PEER LEN ...     its body sends, in posting order
 *   L PEER ...         its body receives, in posting order
 * A merge job prints, per stream, the aggregates reorder + merge's planner (rm_plan.c) splits
 * it into: NAGG, then each aggregate's bytes on the wire (header, descriptors, payload). */

#include "tnbc_sched.h"
#include "tnbc_priority.h"
#include "rm_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Each rank's node in a summary job (NULL: print every entry). */
static const int *summary_node;
static int summary_nnodes;

static void print_summary(int rank, const MPIR_Tnbc_sched_t * s)
{
    size_t *edge_bytes = calloc((size_t) summary_nnodes, sizeof(size_t));
    int sends = 0, bodies = 0;
    for (int i = 0; i < s->n; i++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        if (e->kind != MPIR_TNBC_SEND)
            continue;
        if (MPIR_Tnbc_entry_is_body(s, e)) {
            bodies++;
        } else {
            sends++;
            edge_bytes[summary_node[e->peer]] += e->len;
        }
    }
    printf("rank %d %d %d %d\nE", rank, s->n, s->body_prio, s->body_window);
    for (int nd = 0; nd < summary_nnodes; nd++)
        printf(" %zu", edge_bytes[nd]);
    printf("\nN %d %d\nB", sends, bodies);
    for (int k = 0; k < s->n; k++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[s->order[k]];
        if (e->kind == MPIR_TNBC_SEND && MPIR_Tnbc_entry_is_body(s, e))
            printf(" %d %zu", e->peer, e->len);
    }
    printf("\nL");
    for (int k = 0; k < s->n; k++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[s->order[k]];
        if (e->kind == MPIR_TNBC_RECV && MPIR_Tnbc_entry_is_body(s, e))
            printf(" %d", e->peer);
    }
    printf("\n");
    free(edge_bytes);
}

/* Print what a builder made for rank (rc: its result) and free it; nonzero when it failed. */
static int emit_sched(int rank, MPIR_Tnbc_sched_t * s, int rc, const char *what)
{
    if (rc == MPIR_TNBC_SCHED_OK && summary_node)
        print_summary(rank, s);
    else if (rc == MPIR_TNBC_SCHED_OK)
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

static int export_alltoallv(int summary)
{
    int size, reports, prio;
    if (scanf("%d %d %d", &size, &reports, &prio) != 3 || size < 1)
        return 1;
    if (summary && (scanf("%d", &summary_nnodes) != 1 || summary_nnodes < 1))
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
    if (summary) {
        int *node = malloc(n * sizeof(int));
        if (!read_ints(node, size))
            return 1;
        for (int r = 0; r < size; r++)
            if (node[r] < 0 || node[r] >= summary_nnodes)
                return 1;
        summary_node = node;
    }
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

static int export_merge(void)
{
    int nnodes, nstreams;
    size_t first, cap;
    if (scanf("%d %zu %zu", &nnodes, &first, &cap) != 3 || nnodes < 1)
        return 1;
    int64_t *graph = malloc((size_t) nnodes * nnodes * sizeof(int64_t));
    for (int i = 0; i < nnodes * nnodes; i++) {
        long long v;
        if (scanf("%lld", &v) != 1)
            return 1;
        graph[i] = v;
    }
    if (scanf("%d", &nstreams) != 1)
        return 1;
    for (int k = 0; k < nstreams; k++) {
        int a, b, n, direct;
        if (scanf("%d %d %d %d", &a, &b, &n, &direct) != 4 || a < 0 || b < 0 || a >= nnodes ||
            b >= nnodes || n < 0 || direct < 0)
            return 1;
        size_t *bytes = malloc(((size_t) n + 1) * sizeof(size_t));
        for (int i = 0; i < n; i++)
            if (scanf("%zu", &bytes[i]) != 1)
                return 1;
        MPIR_Rm_split_t split;
        if (MPIR_Rm_split(bytes, n, first, MPIR_Rm_alpha(graph, nnodes, a, b), cap, &split))
            return 1;
        printf("%d", split.nagg);
        for (int g = 0; g < split.nagg; g++) {
            size_t payload = 0;
            for (int f = split.first[g]; f < split.first[g + 1]; f++)
                payload += split.frags[f].len;
            int nfrag = split.first[g + 1] - split.first[g] + (g == 0 ? direct : 0);
            printf(" %zu", MPIR_Rm_header_bytes(nfrag) + payload);
        }
        printf("\n");
        MPIR_Rm_split_free(&split);
        free(bytes);
    }
    free(graph);
    return 0;
}

int main(void)
{
    char what[32];
    if (scanf("%31s", what) != 1)
        return 1;
    if (!strcmp(what, "alltoallv") || !strcmp(what, "summary"))
        return export_alltoallv(what[0] == 's');
    if (!strcmp(what, "bcast"))
        return export_bcast();
    if (!strcmp(what, "merge"))
        return export_merge();
    fprintf(stderr, "tnbc_sched_export: unknown job %s\n", what);
    return 1;
}
