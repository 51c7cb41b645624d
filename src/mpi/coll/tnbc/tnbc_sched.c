/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* qsort_r */
#endif
#include "tnbc_sched.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void MPIR_Tnbc_sched_init(MPIR_Tnbc_sched_t * s)
{
    memset(s, 0, sizeof(*s));
}

void MPIR_Tnbc_sched_free(MPIR_Tnbc_sched_t * s)
{
    free(s->entries);
    free(s->order);
    free(s->recv_sub_off);
    free(s->recv_sub_len);
    free(s->send_sub_off);
    free(s->send_sub_len);
    MPIR_Tnbc_sched_init(s);
}

MPIR_Tnbc_entry_t MPII_Tnbc_entry(MPIR_Tnbc_kind_t kind, int peer, MPIR_Tnbc_space_t space,
                                  size_t off, size_t len, int prio)
{
    MPIR_Tnbc_entry_t e = {.kind = kind, .peer = peer, .space = space, .off = off,
        .src_space = MPIR_TNBC_SPACE_SEND, .len = len, .after = -1, .after2 = -1,
        .prev_peer = -1, .sub = -1, .prio = prio, .tag = 0, .block = -1
    };
    return e;
}

int MPII_Tnbc_sched_add(MPIR_Tnbc_sched_t * s, const MPIR_Tnbc_entry_t * e)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        MPIR_Tnbc_entry_t *p = realloc(s->entries, cap * sizeof(*p));
        if (!p)
            return MPIR_TNBC_SCHED_ERR_NOMEM;
        s->entries = p;
        s->cap = cap;
    }
    s->entries[s->n] = *e;
    return s->n++;
}

/* Sub-message arrays grow one by one; builders know their final count, so they reserve. */
int MPII_Tnbc_sched_reserve(MPIR_Tnbc_sched_t * s, int nrecv, int nsend)
{
    s->recv_sub_off = malloc((nrecv + 1) * sizeof(size_t));
    s->recv_sub_len = malloc((nrecv + 1) * sizeof(size_t));
    s->send_sub_off = malloc((nsend + 1) * sizeof(size_t));
    s->send_sub_len = malloc((nsend + 1) * sizeof(size_t));
    if (!s->recv_sub_off || !s->recv_sub_len || !s->send_sub_off || !s->send_sub_len)
        return MPIR_TNBC_SCHED_ERR_NOMEM;
    return MPIR_TNBC_SCHED_OK;
}

int MPII_Tnbc_sched_recv_sub(MPIR_Tnbc_sched_t * s, size_t off, size_t len)
{
    s->recv_sub_off[s->nrecv_sub] = off;
    s->recv_sub_len[s->nrecv_sub] = len;
    if (off + len > s->recv_bytes)
        s->recv_bytes = off + len;
    return s->nrecv_sub++;
}

int MPII_Tnbc_sched_send_sub(MPIR_Tnbc_sched_t * s, size_t off, size_t len)
{
    s->send_sub_off[s->nsend_sub] = off;
    s->send_sub_len[s->nsend_sub] = len;
    if (off + len > s->send_bytes)
        s->send_bytes = off + len;
    return s->nsend_sub++;
}

/* Bytes of one edge piece of whole elements. */
static size_t segment_edge(size_t elem)
{
    size_t edge = MPIR_TNBC_SCHED_EDGE / elem * elem;
    return edge ? edge : elem;
}

/* How many edge pieces MPII_Tnbc_sched_segments cuts: 2, or 0 for a small buffer. */
static int segment_edges(size_t nbytes, size_t elem)
{
    return nbytes > 2 * segment_edge(elem) ? 2 : 0;
}

int MPII_Tnbc_sched_segments(size_t nbytes, size_t elem, int nseg, size_t * poff, size_t * plen)
{
    size_t edge = segment_edge(elem);
    int npieces = 0;
    size_t lo = 0, hi = nbytes;

    if (segment_edges(nbytes, elem)) {
        poff[npieces] = 0;
        plen[npieces++] = edge;
        poff[npieces] = nbytes - edge;
        plen[npieces++] = edge;
        lo = edge;
        hi = nbytes - edge;
    }
    size_t nelem = (hi - lo) / elem;
    if ((size_t) nseg > nelem)
        nseg = nelem ? (int) nelem : 1;
    size_t seg = (nelem + nseg - 1) / nseg * elem;
    for (int k = 0; k < nseg && hi > lo; k++) {
        size_t off = lo + k * seg;
        if (off >= hi)
            break;
        poff[npieces] = off;
        plen[npieces++] = (off + seg <= hi) ? seg : hi - off;
    }
    return npieces;
}

/* Pieces of one pair's bytes: head, tail and body, or for a pair of at most two edges all of it
 * in the head and an empty tail and body. Every non-empty pair is three messages whatever its
 * size, so that counts which disagree across processes (an erroneous program) still pair the
 * messages one to one: the receiver sees a truncation or a short message, as with MPICH's
 * algorithms, never a receive that no message matches. */
#define MPII_TNBC_PAIR_PIECES 3
static int split_edges(size_t bytes, size_t * off, size_t * len)
{
    const size_t edge = MPIR_TNBC_SCHED_EDGE;
    if (bytes == 0)
        return 0;
    if (bytes <= 2 * edge) {
        off[0] = 0;
        len[0] = bytes;
        off[1] = off[2] = bytes;
        len[1] = len[2] = 0;
        return MPII_TNBC_PAIR_PIECES;
    }
    off[0] = 0;
    len[0] = edge;
    off[1] = bytes - edge;
    len[1] = edge;
    off[2] = edge;
    len[2] = bytes - 2 * edge;
    return MPII_TNBC_PAIR_PIECES;
}

/* Sub-message of a piece: an empty receive fills nothing; an empty send names its pair's head,
 * which is there as long as the pair is sent (only a pair of at most two edges has empty pieces,
 * and its head is the send sub-message made just before them). */
static int piece_recv_sub(MPIR_Tnbc_sched_t * s, size_t off, size_t len)
{
    return len ? MPII_Tnbc_sched_recv_sub(s, off, len) : -1;
}

static int piece_send_sub(MPIR_Tnbc_sched_t * s, size_t off, size_t len)
{
    return len ? MPII_Tnbc_sched_send_sub(s, off, len) : s->nsend_sub - 1;
}

/* Heads and tails in ring order first, then the bodies in ring order. */
static int piece_prio(int k, int step, int size)
{
    return k == 2 ? size + step : step;
}

int MPIR_Tnbc_sched_alltoallv(MPIR_Tnbc_sched_t * s, int rank, int size,
                              const size_t * sbytes, const size_t * soff,
                              const size_t * rbytes, const size_t * roff)
{
    return MPIR_Tnbc_sched_alltoallv_ordered(s, rank, size, sbytes, soff, rbytes, roff, NULL,
                                             NULL, 0);
}

void MPIR_Tnbc_sched_recv_sub_blocks(const MPIR_Tnbc_sched_t * s, int *block)
{
    for (int k = 0; k < s->nrecv_sub; k++)
        block[k] = -1;
    for (int i = 0; i < s->n; i++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        if (MPIR_Tnbc_entry_fills_recv(e) && e->sub >= 0 && e->kind != MPIR_TNBC_REDUCE)
            block[e->sub] = e->block >= 0 ? e->block : e->peer;
    }
}

size_t MPIR_Tnbc_reports_bytes(int size)
{
    return 2 * (size_t) size * sizeof(int32_t);
}

size_t MPIR_Tnbc_report_out_off(int peer)
{
    return (size_t) peer * sizeof(int32_t);
}

size_t MPIR_Tnbc_report_in_off(int size, int peer)
{
    return ((size_t) size + peer) * sizeof(int32_t);
}

/* A report follows the body to its peer (see the header) and is no body itself: nothing
 * holds it back. */
static int order_reports(MPIR_Tnbc_sched_t * s, int rank, int size, const int *body_to)
{
    int rc;
    for (int step = 1; step < size; step++) {
        int to = (rank + step) % size, from = (rank - step + size) % size;
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, to, MPIR_TNBC_SPACE_WORK,
                                              MPIR_Tnbc_report_out_off(to), sizeof(int32_t),
                                              size - 1);
        e.after = body_to[to];
        e.tag = 1;
        if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
            return rc;
        e = MPII_Tnbc_entry(MPIR_TNBC_RECV, from, MPIR_TNBC_SPACE_WORK,
                            MPIR_Tnbc_report_in_off(size, from), sizeof(int32_t), 0);
        e.tag = 1;
        if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
            return rc;
    }
    s->ntags = 2;
    s->work_bytes = MPIR_Tnbc_reports_bytes(size);
    s->reports = 1;
    return MPIR_TNBC_SCHED_OK;
}

int MPIR_Tnbc_sched_alltoallv_ordered(MPIR_Tnbc_sched_t * s, int rank, int size,
                                      const size_t * sbytes, const size_t * soff,
                                      const size_t * rbytes, const size_t * roff,
                                      const int *recv_pos, const int *send_pos, int reports)
{
    int rc;

    if (size < 1 || rank < 0 || rank >= size)
        return MPIR_TNBC_SCHED_ERR_ARG;
    if (sbytes[rank] != rbytes[rank])
        return MPIR_TNBC_SCHED_ERR_ARG;
    rc = MPII_Tnbc_sched_reserve(s, MPII_TNBC_PAIR_PIECES * size, MPII_TNBC_PAIR_PIECES * size);
    if (rc)
        return rc;
    int *body_to = reports ? malloc((size + 1) * sizeof(int)) : NULL;
    if (reports && !body_to)
        return MPIR_TNBC_SCHED_ERR_NOMEM;

    if (rbytes[rank] > 0) {
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_COPY, rank, MPIR_TNBC_SPACE_RECV,
                                              roff[rank], rbytes[rank], 0);
        e.src_off = soff[rank];
        e.sub = MPII_Tnbc_sched_recv_sub(s, roff[rank], rbytes[rank]);
        if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
            goto fn_exit;
    }
    for (int step = 1; step < size; step++) {
        int to = (rank + step) % size;
        int from = (rank - step + size) % size;
        size_t off[MPII_TNBC_PAIR_PIECES], len[MPII_TNBC_PAIR_PIECES];
        int npieces = split_edges(rbytes[from], off, len);
        for (int k = 0; k < npieces; k++) {
            int order = recv_pos ? recv_pos[from] : step;
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_RECV, from, MPIR_TNBC_SPACE_RECV,
                                                  roff[from] + off[k], len[k],
                                                  piece_prio(k, order, size));
            e.sub = piece_recv_sub(s, e.off, len[k]);
            if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
                goto fn_exit;
        }
        npieces = split_edges(sbytes[to], off, len);
        for (int k = 0; k < npieces; k++) {
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, to, MPIR_TNBC_SPACE_SEND,
                                                  soff[to] + off[k], len[k],
                                                  piece_prio(k, send_pos ? send_pos[to] : step,
                                                             size));
            e.sub = piece_send_sub(s, e.off, len[k]);
            if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
                goto fn_exit;
        }
        if (body_to)    /* the pair's last piece, or none */
            body_to[to] = npieces ? s->n - 1 : -1;
    }
    if (reports && (rc = order_reports(s, rank, size, body_to)) != MPIR_TNBC_SCHED_OK)
        goto fn_exit;
    s->body_prio = size;
    /* the self copy reads the send space too */
    if (sbytes[rank] > 0 && soff[rank] + sbytes[rank] > s->send_bytes)
        s->send_bytes = soff[rank] + sbytes[rank];
    rc = MPIR_Tnbc_sched_finish(s);

  fn_exit:
    free(body_to);
    return rc;
}

int MPIR_Tnbc_sched_neighbor(MPIR_Tnbc_sched_t * s, int nsend, const int *dests,
                             const size_t * sbytes, const size_t * soff, int nrecv,
                             const int *srcs, const size_t * rbytes, const size_t * roff,
                             int recv_reversed)
{
    int rc;

    rc = MPII_Tnbc_sched_reserve(s, MPII_TNBC_PAIR_PIECES * nrecv,
                                 MPII_TNBC_PAIR_PIECES * nsend);
    if (rc)
        return rc;
    /* Edges before bodies; sends in list order, receives in list order or reversed (see the
     * header). */
    for (int j = 0; j < nrecv; j++) {
        int k = recv_reversed ? nrecv - 1 - j : j;
        size_t off[MPII_TNBC_PAIR_PIECES], len[MPII_TNBC_PAIR_PIECES];
        int npieces = srcs[k] < 0 ? 0 : split_edges(rbytes[k], off, len);
        for (int j = 0; j < npieces; j++) {
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_RECV, srcs[k], MPIR_TNBC_SPACE_RECV,
                                                  roff[k] + off[j], len[j],
                                                  piece_prio(j, 0, 1));
            e.sub = piece_recv_sub(s, e.off, len[j]);
            if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
                return rc;
        }
    }
    for (int k = 0; k < nsend; k++) {
        size_t off[MPII_TNBC_PAIR_PIECES], len[MPII_TNBC_PAIR_PIECES];
        int npieces = dests[k] < 0 ? 0 : split_edges(sbytes[k], off, len);
        for (int j = 0; j < npieces; j++) {
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, dests[k], MPIR_TNBC_SPACE_SEND,
                                                  soff[k] + off[j], len[j],
                                                  piece_prio(j, 0, 1));
            e.sub = piece_send_sub(s, e.off, len[j]);
            if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
                return rc;
        }
    }
    return MPIR_Tnbc_sched_finish(s);
}

/* The rank at position v of the tree's order. */
static int tree_rank(int v, int size, int root, const int *ranks)
{
    return ranks ? ranks[v] : (v + root) % size;
}

int MPIR_Tnbc_bcast_tree(int rank, int size, int root, const int *ranks, int *parent,
                         int *children)
{
    int vrank = (rank - root + size) % size, top, n = 0;

    if (ranks) {
        for (vrank = 0; vrank < size && ranks[vrank] != rank; vrank++);
        if (vrank == size || ranks[0] != root)
            return -1;
    }
    /* binomial tree over positions: the parent clears the lowest set bit */
    *parent = -1;
    for (top = 1; top < size; top <<= 1) {
        if (vrank & top) {
            *parent = tree_rank(vrank - top, size, root, ranks);
            break;
        }
    }
    /* children: vrank + mask for every mask below our lowest set bit, largest subtree first */
    for (int mask = top >> 1; mask > 0; mask >>= 1)
        if (vrank + mask < size)
            children[n++] = tree_rank(vrank + mask, size, root, ranks);
    return n;
}

int MPIR_Tnbc_bcast_pieces(size_t nbytes, int nseg)
{
    size_t off[MPII_TNBC_MAX_SEGS + 2], len[MPII_TNBC_MAX_SEGS + 2];
    if (nseg < 1 || nseg > MPII_TNBC_MAX_SEGS)
        return 0;
    return MPII_Tnbc_sched_segments(nbytes, 1, nseg, off, len);
}

int MPIR_Tnbc_bcast_edge_pieces(size_t nbytes)
{
    return segment_edges(nbytes, 1);
}

size_t MPIR_Tnbc_bcast_report_bytes(int npieces)
{
    return npieces > 1 ? (size_t) (npieces + 1) * sizeof(int32_t) : 0;
}

void MPIR_Tnbc_bcast_report_encode(const int *pos, int npieces, void *report)
{
    int32_t *r = report;
    r[0] = pos != NULL;
    for (int k = 0; k < npieces; k++)
        r[k + 1] = pos ? pos[k] : k;
}

int MPIR_Tnbc_bcast_report_decode(const void *report, size_t len, int npieces, int *pos)
{
    const int32_t *r = report;
    int ok = (npieces > 1 && len == MPIR_Tnbc_bcast_report_bytes(npieces) && r[0] == 1);
    char *seen = ok ? calloc(npieces, 1) : NULL;

    if (!seen)
        return 0;
    for (int k = 0; k < npieces && ok; k++) {
        ok = (r[k + 1] >= 0 && r[k + 1] < npieces && !seen[r[k + 1]]);
        if (ok) {
            seen[r[k + 1]] = 1;
            pos[k] = r[k + 1];
        }
    }
    free(seen);
    return ok;
}

/* Edges first (they are what a process waits for before returning), then by position. */
static int bcast_prio(int piece, int nedges, const int *pos)
{
    return piece < nedges ? piece : nedges + (pos ? pos[piece] : piece);
}

static int bcast_reports(MPIR_Tnbc_sched_t * s, int parent, int nchildren,
                         const int *children, int npieces)
{
    int rc;
    size_t report = MPIR_Tnbc_bcast_report_bytes(npieces);

    if (!report)
        return MPIR_TNBC_SCHED_OK;
    if (parent >= 0) {
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, parent, MPIR_TNBC_SPACE_SEND, 0,
                                              report, 0);
        e.tag = npieces + 1;
        e.sub = MPII_Tnbc_sched_send_sub(s, 0, report);
        if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
            return rc;
    }
    for (int c = 0; c < nchildren; c++) {
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_RECV, children[c], MPIR_TNBC_SPACE_WORK,
                                              c * report, report, 0);
        e.tag = npieces + 1;
        if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
            return rc;
    }
    s->work_bytes = nchildren * report;
    return MPIR_TNBC_SCHED_OK;
}

int MPIR_Tnbc_sched_bcast(MPIR_Tnbc_sched_t * s, int rank, int size, int root, size_t nbytes,
                          int nseg, const MPIR_Tnbc_bcast_order_t * order)
{
    int rc, parent, children[MPIR_TNBC_BCAST_MAX_CHILDREN];
    const int *recv_pos = order ? order->recv_pos : NULL;

    if (size < 1 || rank < 0 || rank >= size || root < 0 || root >= size || nseg < 1 ||
        nseg > MPII_TNBC_MAX_SEGS)
        return MPIR_TNBC_SCHED_ERR_ARG;
    rc = MPII_Tnbc_sched_reserve(s, nseg + 2, nseg + 3);
    if (rc)
        return rc;

    int nchildren = MPIR_Tnbc_bcast_tree(rank, size, root, order ? order->ranks : NULL, &parent,
                                         children);
    if (nchildren < 0)
        return MPIR_TNBC_SCHED_ERR_ARG;
    size_t poff[MPII_TNBC_MAX_SEGS + 2], plen[MPII_TNBC_MAX_SEGS + 2];
    int npieces = MPII_Tnbc_sched_segments(nbytes, 1, nseg, poff, plen);
    int nedges = segment_edges(nbytes, 1);

    /* as many tags as the most pieces any byte count makes: the communicator's tag counter
     * stays in step on every process even where an erroneous program's counts differ */
    s->ntags = nseg + 4;
    for (int k = 0; k < npieces; k++) {
        size_t off = poff[k], len = plen[k];
        int got = -1, sub;
        if (parent >= 0) {
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_RECV, parent, MPIR_TNBC_SPACE_RECV,
                                                  off, len, bcast_prio(k, nedges, recv_pos));
            e.tag = k + 1;
            e.block = k;
            e.sub = MPII_Tnbc_sched_recv_sub(s, off, len);
            if ((got = MPII_Tnbc_sched_add(s, &e)) < 0)
                return got;
            sub = e.sub;
        } else {
            sub = MPII_Tnbc_sched_send_sub(s, off, len);
        }
        for (int c = 0; c < nchildren; c++) {
            const int *pos = (order && order->child_pos && order->child_pos[c]) ?
                order->child_pos[c] : recv_pos;
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, children[c],
                                                  parent >= 0 ? MPIR_TNBC_SPACE_RECV :
                                                  MPIR_TNBC_SPACE_SEND, off, len,
                                                  bcast_prio(k, nedges, pos));
            e.tag = k + 1;
            e.after = got;
            e.sub = (parent >= 0) ? -1 : sub;
            if ((rc = MPII_Tnbc_sched_add(s, &e)) < 0)
                return rc;
        }
    }
    if ((rc = bcast_reports(s, parent, nchildren, children, npieces)) != MPIR_TNBC_SCHED_OK)
        return rc;
    s->body_prio = nedges;
    if (parent < 0)
        s->send_bytes = nbytes;
    return MPIR_Tnbc_sched_finish(s);
}

static int cmp_by_key(const void *a, const void *b, void *key)
{
    const size_t *k = key;
    size_t x = k[*(const int *) a], y = k[*(const int *) b];
    if (x != y)
        return x < y ? -1 : 1;
    return *(const int *) a - *(const int *) b;
}

static int cmp_by_prio(const void *a, const void *b, void *entries)
{
    const MPIR_Tnbc_entry_t *sort_entries = entries;
    int i = *(const int *) a, j = *(const int *) b;
    if (sort_entries[i].prio != sort_entries[j].prio)
        return sort_entries[i].prio - sort_entries[j].prio;
    return i - j;
}

/* Sort n (off, len) pairs by offset; newid[old] receives each pair's new index. */
static int sort_subs(int n, size_t * off, size_t * len, int *newid)
{
    int *perm = malloc((n + 1) * sizeof(int));
    size_t *o = malloc((n + 1) * sizeof(size_t)), *l = malloc((n + 1) * sizeof(size_t));
    if (!perm || !o || !l) {
        free(perm);
        free(o);
        free(l);
        return MPIR_TNBC_SCHED_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++)
        perm[i] = i;
    qsort_r(perm, n, sizeof(int), cmp_by_key, off);
    for (int i = 0; i < n; i++) {
        o[i] = off[perm[i]];
        l[i] = len[perm[i]];
        newid[perm[i]] = i;
    }
    memcpy(off, o, n * sizeof(size_t));
    memcpy(len, l, n * sizeof(size_t));
    free(perm);
    free(o);
    free(l);
    return MPIR_TNBC_SCHED_OK;
}

/* Chain the sends to each peer, and the receives from it, in posting order; a message with a
 * tag of its own needs no chain (see the header). */
static int link_peers(MPIR_Tnbc_sched_t * s)
{
    int npeers = 1;
    for (int i = 0; i < s->n; i++)
        if (s->entries[i].peer >= npeers)
            npeers = s->entries[i].peer + 1;
    int *last = malloc(2 * npeers * sizeof(int));       /* [kind][peer] */
    if (!last)
        return MPIR_TNBC_SCHED_ERR_NOMEM;
    for (int k = 0; k < 2 * npeers; k++)
        last[k] = -1;
    for (int j = 0; j < s->n; j++) {
        int i = s->order[j];
        MPIR_Tnbc_entry_t *e = &s->entries[i];
        e->prev_peer = -1;
        if ((e->kind == MPIR_TNBC_SEND || e->kind == MPIR_TNBC_RECV) && e->tag == 0) {
            int *slot = &last[(e->kind == MPIR_TNBC_RECV) * npeers + e->peer];
            e->prev_peer = *slot;
            *slot = i;
        }
    }
    free(last);
    return MPIR_TNBC_SCHED_OK;
}

int MPIR_Tnbc_sched_finish(MPIR_Tnbc_sched_t * s)
{
    int rc = MPIR_TNBC_SCHED_OK;
    int nmax = (s->nrecv_sub > s->nsend_sub ? s->nrecv_sub : s->nsend_sub) + 1;
    int *rid = malloc(nmax * sizeof(int)), *sid = malloc(nmax * sizeof(int));

    s->built = 1;
    free(s->order);
    s->order = malloc((s->n + 1) * sizeof(int));
    if (!rid || !sid || !s->order) {
        rc = MPIR_TNBC_SCHED_ERR_NOMEM;
        goto fn_exit;
    }
    if ((rc = sort_subs(s->nrecv_sub, s->recv_sub_off, s->recv_sub_len, rid)) ||
        (rc = sort_subs(s->nsend_sub, s->send_sub_off, s->send_sub_len, sid)))
        goto fn_exit;
    for (int i = 0; i < s->n; i++) {
        MPIR_Tnbc_entry_t *e = &s->entries[i];
        if (e->sub >= 0)
            e->sub = MPIR_Tnbc_entry_fills_recv(e) ? rid[e->sub] : sid[e->sub];
        s->order[i] = i;
    }
    for (int k = 1; k < s->nrecv_sub; k++) {
        if (s->recv_sub_off[k - 1] + s->recv_sub_len[k - 1] > s->recv_sub_off[k]) {
            rc = MPIR_TNBC_SCHED_ERR_OVERLAP;
            break;
        }
    }
    qsort_r(s->order, s->n, sizeof(int), cmp_by_prio, s->entries);
    if (rc == MPIR_TNBC_SCHED_OK)
        rc = link_peers(s);

  fn_exit:
    free(rid);
    free(sid);
    return rc;
}

int MPIR_Tnbc_sched_send_subs_disjoint(const MPIR_Tnbc_sched_t * s)
{
    for (int k = 1; k < s->nsend_sub; k++)
        if (s->send_sub_off[k - 1] + s->send_sub_len[k - 1] > s->send_sub_off[k])
            return 0;
    return 1;
}

int MPIR_Tnbc_sched_reads_recv(const MPIR_Tnbc_sched_t * s)
{
    for (int i = 0; i < s->n; i++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        if ((e->kind == MPIR_TNBC_SEND && e->space == MPIR_TNBC_SPACE_RECV) ||
            ((e->kind == MPIR_TNBC_COPY || e->kind == MPIR_TNBC_REDUCE) &&
             e->src_space == MPIR_TNBC_SPACE_RECV) ||
            (e->kind == MPIR_TNBC_REDUCE && e->space == MPIR_TNBC_SPACE_RECV))
            return 1;
    }
    return 0;
}

int MPIR_Tnbc_sched_is_first_self_copy(const MPIR_Tnbc_sched_t * s, int i)
{
    const MPIR_Tnbc_entry_t *e = &s->entries[i];
    return e->kind == MPIR_TNBC_COPY && e->space == MPIR_TNBC_SPACE_RECV &&
        e->src_space == MPIR_TNBC_SPACE_SEND && e->sub >= 0 && e->after < 0 && e->after2 < 0;
}
