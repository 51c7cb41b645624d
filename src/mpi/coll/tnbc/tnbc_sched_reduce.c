/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Schedule builders of the reductions (see tnbc_sched.h). Two building blocks:
 *
 * - direct: a small region (an edge of the result) that some processes need at once. Every
 *   process sends its input there; a process that needs the result combines the p inputs in
 *   rank order into an accumulator and copies it into its receive space.
 * - ring reduce-scatter: p chunks; at step k a process sends one partial chunk to rank + 1 and
 *   receives another from rank - 1, which it combines with its own input. After p - 1 steps
 *   process r holds chunk r fully reduced. Bandwidth-optimal, and every step is a pair of
 *   point-to-point messages the progress engine can pipeline. */

#include "tnbc_sched.h"

#include <stdlib.h>

#define MPII_TNBC_WORK_ALIGN 64

static size_t work_alloc(MPIR_Tnbc_sched_t * s, size_t len)
{
    size_t off = (s->work_bytes + MPII_TNBC_WORK_ALIGN - 1) / MPII_TNBC_WORK_ALIGN *
        MPII_TNBC_WORK_ALIGN;
    s->work_bytes = off + len;
    return off;
}

static int add(MPIR_Tnbc_sched_t * s, MPIR_Tnbc_entry_t e)
{
    return MPII_Tnbc_sched_add(s, &e);
}

#define ADD(idx_, e_)                   \
    do {                                \
        if (((idx_) = add(s, e_)) < 0)  \
            return (idx_);              \
    } while (0)

/* Edge size in whole elements (at least one element). */
static size_t edge_bytes(size_t elem)
{
    size_t edge = MPIR_TNBC_SCHED_EDGE / elem * elem;
    return edge ? edge : elem;
}

/* Region send[soff, +len) of every process, reduced into recv[roff, +len) of dest (-1: every
 * process). */
static int direct(MPIR_Tnbc_sched_t * s, int rank, int size, size_t soff, size_t len, int dest,
                  size_t roff, int prio)
{
    int idx, chain = -1, ssub = -1;
    int needs = (dest < 0 || dest == rank);

    if (len == 0)
        return MPIR_TNBC_SCHED_OK;
    /* the input is read after the call may have returned by sends, and by the chain unless
     * it comes first there */
    if ((dest < 0 && size > 1) || (dest >= 0 && dest != rank) || (needs && rank > 0))
        ssub = MPII_Tnbc_sched_send_sub(s, soff, len);
    for (int d = 0; d < size; d++) {
        if (d == rank || (dest >= 0 && d != dest))
            continue;
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, d, MPIR_TNBC_SPACE_SEND, soff, len,
                                              prio);
        e.sub = ssub;
        ADD(idx, e);
    }
    if (!needs)
        return MPIR_TNBC_SCHED_OK;

    /* slot q holds process q's input; the accumulator follows the slots */
    size_t slots = work_alloc(s, (size_t) size * len);
    size_t acc = work_alloc(s, len);
    int *got = malloc(size * sizeof(int));
    if (!got)
        return MPIR_TNBC_SCHED_ERR_NOMEM;
    for (int q = 0; q < size; q++) {
        got[q] = -1;
        if (q == rank)
            continue;
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_RECV, q, MPIR_TNBC_SPACE_WORK,
                                              slots + q * len, len, prio);
        if ((idx = add(s, e)) < 0) {
            free(got);
            return idx;
        }
        got[q] = idx;
    }
    /* acc = x_0, then acc = x_q op acc for q = 1 .. size-1: the same order on every process */
    for (int q = 0; q < size; q++) {
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(q == 0 ? MPIR_TNBC_COPY : MPIR_TNBC_REDUCE, -1,
                                              MPIR_TNBC_SPACE_WORK, acc, len, prio);
        e.src_space = (q == rank) ? MPIR_TNBC_SPACE_SEND : MPIR_TNBC_SPACE_WORK;
        e.src_off = (q == rank) ? soff : slots + q * len;
        e.after = got[q];
        e.after2 = (q == 0) ? -1 : chain;
        /* a copy runs at once; a later step may read the send space after the call returned */
        e.sub = (q == rank && q > 0) ? ssub : -1;
        if ((chain = add(s, e)) < 0) {
            free(got);
            return chain;
        }
    }
    free(got);
    MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_COPY, -1, MPIR_TNBC_SPACE_RECV, roff, len,
                                          prio);
    e.src_space = MPIR_TNBC_SPACE_WORK;
    e.src_off = acc;
    e.after = chain;
    e.sub = MPII_Tnbc_sched_recv_sub(s, roff, len);
    ADD(idx, e);
    return MPIR_TNBC_SCHED_OK;
}

/* Where a ring reduce-scatter left this process's reduced chunk. */
typedef struct {
    MPIR_Tnbc_space_t space;
    size_t off;
    int entry;                  /* the entry that completes it; -1: ready at once */
} MPII_Tnbc_result_t;

/* Ring reduce-scatter over size chunks of the send space (coff[c], clen[c]); prio from
 * prio0 on. */
static int ring_reduce_scatter(MPIR_Tnbc_sched_t * s, int rank, int size, const size_t * coff,
                               const size_t * clen, int prio0, MPII_Tnbc_result_t * res)
{
    int rc = MPIR_TNBC_SCHED_ERR_NOMEM, idx;
    int *ssub = malloc(size * sizeof(int)), *made = malloc(size * sizeof(int));
    size_t *wo = malloc(size * sizeof(size_t));
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;

    if (!ssub || !made || !wo)
        goto fn_exit;
    for (int c = 0; c < size; c++) {
        ssub[c] = clen[c] ? MPII_Tnbc_sched_send_sub(s, coff[c], clen[c]) : -1;
        wo[c] = clen[c] ? work_alloc(s, clen[c]) : 0;
        made[c] = -1;
    }
    for (int k = 0; k + 1 < size; k++) {
        int sc = ((rank - k - 1) % size + size) % size;
        int rcv = ((rank - k - 2) % size + size) % size;
        if (clen[sc]) {
            /* step 0 sends our own input; later steps forward what the last step reduced */
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, to, k == 0 ?
                                                  MPIR_TNBC_SPACE_SEND : MPIR_TNBC_SPACE_WORK,
                                                  k == 0 ? coff[sc] : wo[sc], clen[sc],
                                                  prio0 + k);
            e.after = (k == 0) ? -1 : made[sc];
            e.sub = (k == 0) ? ssub[sc] : -1;
            if ((rc = add(s, e)) < 0)
                goto fn_exit;
        }
        if (clen[rcv]) {
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_RECV, from, MPIR_TNBC_SPACE_WORK,
                                                  wo[rcv], clen[rcv], prio0 + k);
            if ((idx = add(s, e)) < 0) {
                rc = idx;
                goto fn_exit;
            }
            e = MPII_Tnbc_entry(MPIR_TNBC_REDUCE, -1, MPIR_TNBC_SPACE_WORK, wo[rcv], clen[rcv],
                                prio0 + k);
            e.src_off = coff[rcv];
            e.after = idx;
            e.sub = ssub[rcv];
            if ((made[rcv] = add(s, e)) < 0) {
                rc = made[rcv];
                goto fn_exit;
            }
        }
    }
    if (size == 1) {
        res->space = MPIR_TNBC_SPACE_SEND;
        res->off = coff[rank];
    } else {
        res->space = MPIR_TNBC_SPACE_WORK;
        res->off = wo[rank];
    }
    res->entry = made[rank];
    rc = MPIR_TNBC_SCHED_OK;

  fn_exit:
    free(ssub);
    free(made);
    free(wo);
    return rc;
}

/* Copy this process's reduced chunk into the receive space at roff. */
static int place_result(MPIR_Tnbc_sched_t * s, const MPII_Tnbc_result_t * res, size_t roff,
                        size_t len, int prio)
{
    int idx;
    MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_COPY, -1, MPIR_TNBC_SPACE_RECV, roff, len,
                                          prio);
    e.src_space = res->space;
    e.src_off = res->off;
    e.after = res->entry;
    e.sub = MPII_Tnbc_sched_recv_sub(s, roff, len);
    ADD(idx, e);
    return idx;
}

/* The middle of a vector in size chunks of whole elements. */
static void split_chunks(size_t lo, size_t hi, size_t elem, int size, size_t * coff,
                         size_t * clen)
{
    size_t nelem = (hi - lo) / elem, off = lo;
    for (int c = 0; c < size; c++) {
        clen[c] = (nelem / size + ((size_t) c < nelem % size)) * elem;
        coff[c] = off;
        off += clen[c];
    }
}

static int check_args(int rank, int size, size_t elem)
{
    return (size < 1 || rank < 0 || rank >= size || elem == 0) ? MPIR_TNBC_SCHED_ERR_ARG :
        MPIR_TNBC_SCHED_OK;
}

/* Allreduce or Reduce (root >= 0). */
/* Reduce, after the reduce-scatter: every reduced chunk goes straight to the root. */
static int chunks_to_root(MPIR_Tnbc_sched_t * s, int rank, int size, int root,
                          const size_t * coff, const size_t * clen,
                          const MPII_Tnbc_result_t * res)
{
    int idx;
    if (rank != root && clen[rank]) {
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, root, res->space, res->off,
                                              clen[rank], size);
        e.after = res->entry;
        ADD(idx, e);
    }
    for (int c = 0; c < size && rank == root; c++) {
        if (!clen[c] || c == rank)
            continue;
        MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_RECV, c, MPIR_TNBC_SPACE_RECV,
                                              coff[c], clen[c], size);
        e.sub = MPII_Tnbc_sched_recv_sub(s, coff[c], clen[c]);
        ADD(idx, e);
    }
    return MPIR_TNBC_SCHED_OK;
}

/* Allreduce, after the reduce-scatter: the reduced chunks travel once more around the ring. */
static int chunks_around_ring(MPIR_Tnbc_sched_t * s, int rank, int size, const size_t * coff,
                              const size_t * clen, const MPII_Tnbc_result_t * res)
{
    int idx, prev_recv = -1;
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    for (int k = 0; k + 1 < size; k++) {
        int sc = ((rank - k) % size + size) % size;
        int rcv = ((rank - k - 1) % size + size) % size;
        if (clen[sc]) {
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_SEND, to,
                                                  k == 0 ? res->space : MPIR_TNBC_SPACE_RECV,
                                                  k == 0 ? res->off : coff[sc], clen[sc],
                                                  size + k);
            e.after = (k == 0) ? res->entry : prev_recv;
            ADD(idx, e);
        }
        prev_recv = -1;
        if (clen[rcv]) {
            MPIR_Tnbc_entry_t e = MPII_Tnbc_entry(MPIR_TNBC_RECV, from, MPIR_TNBC_SPACE_RECV,
                                                  coff[rcv], clen[rcv], size + k);
            e.sub = MPII_Tnbc_sched_recv_sub(s, coff[rcv], clen[rcv]);
            ADD(prev_recv, e);
        }
    }
    return MPIR_TNBC_SCHED_OK;
}

static int reduce_to(MPIR_Tnbc_sched_t * s, int rank, int size, int root, size_t nbytes,
                     size_t elem)
{
    int rc;
    size_t edge = edge_bytes(elem);
    size_t *coff = NULL, *clen = NULL;
    int needs_result = (root < 0 || root == rank);

    if ((rc = check_args(rank, size, elem)) || nbytes % elem ||
        (root >= 0 && root >= size))
        return rc ? rc : MPIR_TNBC_SCHED_ERR_ARG;
    s->elem = elem;
    if ((rc = MPII_Tnbc_sched_reserve(s, size + 2, size + 2)))
        return rc;
    if (nbytes <= 2 * edge) {
        if ((rc = direct(s, rank, size, 0, nbytes, root, 0, 0)))
            return rc;
        s->send_bytes = nbytes;
        return MPIR_Tnbc_sched_finish(s);
    }
    if ((rc = direct(s, rank, size, 0, edge, root, 0, 0)) ||
        (rc = direct(s, rank, size, nbytes - edge, edge, root, nbytes - edge, 0)))
        return rc;

    coff = malloc(size * sizeof(size_t));
    clen = malloc(size * sizeof(size_t));
    rc = MPIR_TNBC_SCHED_ERR_NOMEM;
    if (!coff || !clen)
        goto fn_exit;
    split_chunks(edge, nbytes - edge, elem, size, coff, clen);
    MPII_Tnbc_result_t res;
    if ((rc = ring_reduce_scatter(s, rank, size, coff, clen, 1, &res)))
        goto fn_exit;
    rc = root >= 0 ? chunks_to_root(s, rank, size, root, coff, clen, &res) :
        chunks_around_ring(s, rank, size, coff, clen, &res);
    if (rc < 0)
        goto fn_exit;
    if (needs_result && clen[rank] && (rc = place_result(s, &res, coff[rank], clen[rank],
                                                         size)) < 0)
        goto fn_exit;
    s->send_bytes = nbytes;
    rc = MPIR_Tnbc_sched_finish(s);

  fn_exit:
    free(coff);
    free(clen);
    return rc;
}

int MPIR_Tnbc_sched_allreduce(MPIR_Tnbc_sched_t * s, int rank, int size, size_t nbytes,
                              size_t elem)
{
    return reduce_to(s, rank, size, -1, nbytes, elem);
}

int MPIR_Tnbc_sched_reduce(MPIR_Tnbc_sched_t * s, int rank, int size, int root, size_t nbytes,
                           size_t elem)
{
    if (root < 0)
        return MPIR_TNBC_SCHED_ERR_ARG;
    return reduce_to(s, rank, size, root, nbytes, elem);
}

int MPIR_Tnbc_sched_reduce_scatter(MPIR_Tnbc_sched_t * s, int rank, int size,
                                   const size_t * bytes, size_t elem)
{
    int rc;
    size_t edge = edge_bytes(elem), boff = 0;
    size_t *coff = NULL, *clen = NULL;

    if ((rc = check_args(rank, size, elem)))
        return rc;
    for (int c = 0; c < size; c++)
        if (bytes[c] % elem)
            return MPIR_TNBC_SCHED_ERR_ARG;
    s->elem = elem;
    if ((rc = MPII_Tnbc_sched_reserve(s, 3, 3 * size)))
        return rc;
    coff = malloc(size * sizeof(size_t));
    clen = malloc(size * sizeof(size_t));
    rc = MPIR_TNBC_SCHED_ERR_NOMEM;
    if (!coff || !clen)
        goto fn_exit;

    /* block c: its edges go directly to process c, its middle is ring chunk c */
    for (int c = 0; c < size; c++) {
        size_t b = bytes[c];
        if (b <= 2 * edge) {
            if ((rc = direct(s, rank, size, boff, b, c, 0, 0)))
                goto fn_exit;
            coff[c] = boff;
            clen[c] = 0;
        } else {
            if ((rc = direct(s, rank, size, boff, edge, c, 0, 0)) ||
                (rc = direct(s, rank, size, boff + b - edge, edge, c, b - edge, 0)))
                goto fn_exit;
            coff[c] = boff + edge;
            clen[c] = b - 2 * edge;
        }
        boff += b;
    }
    MPII_Tnbc_result_t res;
    if ((rc = ring_reduce_scatter(s, rank, size, coff, clen, 1, &res)))
        goto fn_exit;
    if (clen[rank] && (rc = place_result(s, &res, edge, clen[rank], size)) < 0)
        goto fn_exit;
    s->send_bytes = boff;
    rc = MPIR_Tnbc_sched_finish(s);

  fn_exit:
    free(coff);
    free(clen);
    return rc;
}

int MPIR_Tnbc_sched_scan(MPIR_Tnbc_sched_t * s, int rank, int size, size_t nbytes, size_t elem,
                         int nseg, int exclusive)
{
    int rc, idx;
    size_t poff[MPII_TNBC_MAX_SEGS + 2], plen[MPII_TNBC_MAX_SEGS + 2];

    if ((rc = check_args(rank, size, elem)) || nbytes % elem || nseg < 1 ||
        nseg > MPII_TNBC_MAX_SEGS)
        return rc ? rc : MPIR_TNBC_SCHED_ERR_ARG;
    s->elem = elem;
    int npieces = nbytes ? MPII_Tnbc_sched_segments(nbytes, elem, nseg, poff, plen) : 0;
    if ((rc = MPII_Tnbc_sched_reserve(s, npieces, npieces)))
        return rc;
    size_t work = (rank > 0) ? work_alloc(s, nbytes) : 0;
    int last = (rank == size - 1);

    for (int k = 0; k < npieces; k++) {
        size_t off = poff[k], len = plen[k];
        MPIR_Tnbc_entry_t e;
        if (rank == 0) {
            /* the prefix of rank 0 is its own input */
            if (!exclusive) {
                e = MPII_Tnbc_entry(MPIR_TNBC_COPY, -1, MPIR_TNBC_SPACE_RECV, off, len, k);
                e.src_off = off;
                e.sub = MPII_Tnbc_sched_recv_sub(s, off, len);
                ADD(idx, e);
            }
            if (!last) {
                e = MPII_Tnbc_entry(MPIR_TNBC_SEND, 1, MPIR_TNBC_SPACE_SEND, off, len, k);
                e.sub = MPII_Tnbc_sched_send_sub(s, off, len);
                ADD(idx, e);
            }
            continue;
        }
        int got, done;
        e = MPII_Tnbc_entry(MPIR_TNBC_RECV, rank - 1, MPIR_TNBC_SPACE_WORK, work + off, len, k);
        ADD(got, e);
        /* work = prefix of rank - 1; Exscan hands it out before adding our input */
        MPIR_Tnbc_entry_t put = MPII_Tnbc_entry(MPIR_TNBC_COPY, -1, MPIR_TNBC_SPACE_RECV, off,
                                                len, k);
        put.src_space = MPIR_TNBC_SPACE_WORK;
        put.src_off = work + off;
        put.sub = MPII_Tnbc_sched_recv_sub(s, off, len);
        if (exclusive) {
            put.after = got;
            ADD(done, put);
            if (last)
                continue;
        } else {
            done = got;
        }
        e = MPII_Tnbc_entry(MPIR_TNBC_REDUCE, -1, MPIR_TNBC_SPACE_WORK, work + off, len, k);
        e.src_off = off;
        e.after = done;
        e.sub = MPII_Tnbc_sched_send_sub(s, off, len);
        ADD(done, e);
        if (!exclusive) {
            put.after = done;
            ADD(idx, put);
        }
        if (!last) {
            e = MPII_Tnbc_entry(MPIR_TNBC_SEND, rank + 1, MPIR_TNBC_SPACE_WORK, work + off, len,
                                k);
            e.after = done;
            ADD(idx, e);
        }
    }
    s->send_bytes = nbytes;
    return MPIR_Tnbc_sched_finish(s);
}
