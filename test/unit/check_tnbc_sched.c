/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of the T-NBC schedule builders. Besides the shape of single tables, a small
 * simulator runs the schedules of all ranks of a communicator together: entries start in each
 * table's order once their dependency is done, sends and receives of a pair and a tag match
 * in the order they were posted (MPI's non-overtaking rule), and the bytes that arrive are
 * checked. A schedule that could deadlock, mismatch lengths or deliver wrong bytes fails. */

#include "tnbc_sched.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    MPIR_Tnbc_sched_t s;
    unsigned char *sendspace, *recvspace, *workspace;
    int *state;                 /* 0 idle, 1 posted, 2 done */
    int *post_seq;              /* order in which entries were posted */
} sim_rank_t;

/* A matched pair whose data has moved but whose requests have not completed yet. */
typedef struct {
    int src, si, dst, ri;
} sim_flight_t;

static unsigned sim_seed;

static unsigned char *space_of(sim_rank_t * r, MPIR_Tnbc_space_t space)
{
    return space == MPIR_TNBC_SPACE_SEND ? r->sendspace :
        space == MPIR_TNBC_SPACE_RECV ? r->recvspace : r->workspace;
}

/* The earliest posted entry of kind between self and peer, per tag (-1: none). */
static void earliest_per_tag(const sim_rank_t * r, MPIR_Tnbc_kind_t kind, int peer, int *best,
                             int ntags)
{
    for (int t = 0; t < ntags; t++)
        best[t] = -1;
    for (int i = 0; i < r->s.n; i++) {
        const MPIR_Tnbc_entry_t *e = &r->s.entries[i];
        if (e->kind == kind && e->peer == peer && r->state[i] == 1 &&
            (best[e->tag] < 0 || r->post_seq[i] < r->post_seq[best[e->tag]]))
            best[e->tag] = i;
    }
}

/* Match posted sends and receives pair by pair and tag by tag, in posting order; the data
 * moves at once, the requests complete later in random order (as rendezvous transfers may). */
static int match(sim_rank_t * r, int size, sim_flight_t * flight, int *nflight)
{
    int any = 0, ntags = 1;
    for (int k = 0; k < size; k++)
        if (r[k].s.ntags > ntags)
            ntags = r[k].s.ntags;
    int *sbest = malloc(ntags * sizeof(int)), *rbest = malloc(ntags * sizeof(int));
    for (int src = 0; src < size; src++) {
        for (int dst = 0; dst < size; dst++) {
            int matched = 1;
            while (matched) {
                matched = 0;
                earliest_per_tag(&r[src], MPIR_TNBC_SEND, dst, sbest, ntags);
                earliest_per_tag(&r[dst], MPIR_TNBC_RECV, src, rbest, ntags);
                for (int t = 0; t < ntags; t++) {
                    int si = sbest[t], ri = rbest[t];
                    if (si < 0 || ri < 0)
                        continue;
                    MPIR_Tnbc_entry_t *se = &r[src].s.entries[si], *re = &r[dst].s.entries[ri];
                    ck_assert_uint_eq(se->len, re->len);
                    memcpy(space_of(&r[dst], re->space) + re->off,
                           space_of(&r[src], se->space) + se->off, re->len);
                    r[src].state[si] = r[dst].state[ri] = 3;    /* matched, in flight */
                    flight[(*nflight)++] = (sim_flight_t) {src, si, dst, ri};
                    any = matched = 1;
                }
            }
        }
    }
    free(sbest);
    free(rbest);
    return any;
}

/* Complete a random part of the pairs in flight (at least one). */
static int complete_some(sim_rank_t * r, sim_flight_t * flight, int *nflight)
{
    int n = *nflight, kept = 0, done = 0;
    int must = n ? (int) (rand_r(&sim_seed) % n) : -1;
    for (int k = 0; k < n; k++) {
        if (k == must || rand_r(&sim_seed) % 3 == 0) {
            r[flight[k].src].state[flight[k].si] = 2;
            r[flight[k].dst].state[flight[k].ri] = 2;
            done = 1;
        } else {
            flight[kept++] = flight[k];
        }
    }
    *nflight = kept;
    return done;
}

/* Local work of an entry: a copy, or a reduction (bytewise sum, commutative and exact). */
static void run_local(sim_rank_t * r, const MPIR_Tnbc_entry_t * e)
{
    unsigned char *dst = space_of(r, e->space) + e->off;
    const unsigned char *src = space_of(r, e->src_space) + e->src_off;
    if (e->kind == MPIR_TNBC_COPY)
        memcpy(dst, src, e->len);
    else
        for (size_t b = 0; b < e->len; b++)
            dst[b] = (unsigned char) (dst[b] + src[b]);
}

/* With a body window, a body send waits while as many to its peer are in flight. */
static int window_full(const sim_rank_t * r, const MPIR_Tnbc_entry_t * e)
{
    int out = 0;
    if (!r->s.body_window || e->kind != MPIR_TNBC_SEND || !MPIR_Tnbc_entry_is_body(&r->s, e))
        return 0;
    for (int i = 0; i < r->s.n; i++) {
        const MPIR_Tnbc_entry_t *o = &r->s.entries[i];
        out += (o->kind == MPIR_TNBC_SEND && o->peer == e->peer && (r->state[i] == 1 ||
                                                                    r->state[i] == 3) &&
                MPIR_Tnbc_entry_is_body(&r->s, o));
    }
    return out >= r->s.body_window;
}

/* Run all ranks to completion with the engine's posting rules; fails on a deadlock. */
static void simulate(sim_rank_t * r, int size)
{
    int seq = 0, nflight = 0, nentries = 0;
    for (int k = 0; k < size; k++)
        nentries += r[k].s.n;
    sim_flight_t *flight = malloc((nentries + 1) * sizeof(*flight));
    while (1) {
        int any = 0, open = 0;
        for (int k = 0; k < size; k++) {
            MPIR_Tnbc_sched_t *s = &r[k].s;
            for (int j = 0; j < s->n; j++) {
                int i = s->order[j];
                MPIR_Tnbc_entry_t *e = &s->entries[i];
                if (r[k].state[i] != 0 || (e->after >= 0 && r[k].state[e->after] != 2) ||
                    (e->after2 >= 0 && r[k].state[e->after2] != 2) ||
                    (e->prev_peer >= 0 && r[k].state[e->prev_peer] == 0))
                    continue;
                if (window_full(&r[k], e))
                    continue;
                r[k].post_seq[i] = seq++;
                r[k].state[i] = 1;
                any = 1;
                if (e->kind == MPIR_TNBC_COPY || e->kind == MPIR_TNBC_REDUCE) {
                    run_local(&r[k], e);
                    r[k].state[i] = 2;
                }
            }
        }
        any |= match(r, size, flight, &nflight);
        any |= complete_some(r, flight, &nflight);
        for (int k = 0; k < size; k++)
            for (int i = 0; i < r[k].s.n; i++)
                open += (r[k].state[i] != 2);
        if (!open)
            break;
        ck_assert_msg(any, "schedule deadlocks with %d entries open", open);
    }
    free(flight);
}

static void sim_alloc(sim_rank_t * r, size_t sbytes, size_t rbytes, int rank)
{
    r->sendspace = malloc(sbytes + 1);
    r->recvspace = calloc(rbytes + 1, 1);
    r->workspace = calloc(r->s.work_bytes + 1, 1);
    for (size_t b = 0; b < sbytes; b++)
        r->sendspace[b] = (unsigned char) (rank * 31 + b * 7 + 1);
    r->state = calloc(r->s.n + 1, sizeof(int));
    r->post_seq = calloc(r->s.n + 1, sizeof(int));
}

static void sim_free(sim_rank_t * r, int size)
{
    for (int k = 0; k < size; k++) {
        free(r[k].sendspace);
        free(r[k].recvspace);
        free(r[k].workspace);
        free(r[k].state);
        free(r[k].post_seq);
        MPIR_Tnbc_sched_free(&r[k].s);
    }
    free(r);
}

/* bytes[src][dst] with contiguous layouts on both sides */
static void run_alltoallv(int size, size_t(*bytes)(int, int))
{
    sim_rank_t *r = calloc(size, sizeof(*r));
    size_t *sb = malloc(size * sizeof(size_t)), *so = malloc(size * sizeof(size_t));
    size_t *rb = malloc(size * sizeof(size_t)), *ro = malloc(size * sizeof(size_t));

    for (int k = 0; k < size; k++) {
        size_t st = 0, rt = 0;
        /* receive pieces laid out in reverse peer order: offsets need not follow ranks */
        for (int p = 0; p < size; p++) {
            sb[p] = bytes(k, p);
            so[p] = st;
            st += sb[p];
        }
        for (int p = size - 1; p >= 0; p--) {
            rb[p] = bytes(p, k);
            ro[p] = rt;
            rt += rb[p];
        }
        MPIR_Tnbc_sched_init(&r[k].s);
        ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&r[k].s, k, size, sb, so, rb, ro),
                         MPIR_TNBC_SCHED_OK);
        ck_assert_uint_eq(r[k].s.recv_bytes, rt);
        for (int i = 1; i < r[k].s.nrecv_sub; i++)
            ck_assert_uint_le(r[k].s.recv_sub_off[i - 1] + r[k].s.recv_sub_len[i - 1],
                              r[k].s.recv_sub_off[i]);
        sim_alloc(&r[k], st, rt, k);
    }
    simulate(r, size);
    /* rank k's piece from p is p's send bytes at p's offset for k */
    for (int k = 0; k < size; k++) {
        size_t roff = 0;
        for (int p = size - 1; p >= 0; p--) {
            size_t soff = 0;
            for (int q = 0; q < k; q++)
                soff += bytes(p, q);
            for (size_t b = 0; b < bytes(p, k); b++)
                ck_assert_uint_eq(r[k].recvspace[roff + b],
                                  (unsigned char) (p * 31 + (soff + b) * 7 + 1));
            roff += bytes(p, k);
        }
    }
    free(sb);
    free(so);
    free(rb);
    free(ro);
    sim_free(r, size);
}

static size_t uniform(int src, int dst)
{
    return 4096 + 5;
}

static size_t skewed(int src, int dst)
{
    return (src * 7 + dst * 3) % 5 == 0 ? 0 : (size_t) (src + 1) * (dst + 2) * 100;
}

START_TEST(alltoall_uniform_delivers)
{
    for (int size = 1; size <= 7; size++)
        run_alltoallv(size, uniform);
}
END_TEST

START_TEST(alltoallv_skewed_with_empty_pairs_delivers)
{
    for (int size = 1; size <= 9; size++)
        run_alltoallv(size, skewed);
}
END_TEST

START_TEST(alltoall_ring_order_and_self_copy)
{
    MPIR_Tnbc_sched_t s;
    size_t b[4] = { 10, 10, 10, 10 }, o[4] = { 0, 10, 20, 30 };
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&s, 1, 4, b, o, b, o), MPIR_TNBC_SCHED_OK);
    ck_assert_int_eq(s.n, 19);  /* 3 peers x (send + receive) x 3 pieces, 1 copy */
    MPIR_Tnbc_entry_t *first = &s.entries[s.order[0]];
    ck_assert_int_eq(first->kind, MPIR_TNBC_COPY);
    /* step 1 pairs rank 1 with 2 (send) and 0 (receive) */
    int sends = 0;
    for (int j = 0; j < s.n; j++) {
        MPIR_Tnbc_entry_t *e = &s.entries[s.order[j]];
        if (e->kind == MPIR_TNBC_SEND && e->len > 0) {
            ck_assert_int_eq(e->peer, (1 + 1 + sends) % 4);
            sends++;
        }
    }
    ck_assert_int_eq(s.nrecv_sub, 4);
    ck_assert(MPIR_Tnbc_sched_send_subs_disjoint(&s));
    /* the self copy may go straight into the receive buffer: nothing reads that space */
    ck_assert(!MPIR_Tnbc_sched_reads_recv(&s));
    int self_copies = 0;
    for (int i = 0; i < s.n; i++)
        self_copies += MPIR_Tnbc_sched_is_first_self_copy(&s, i);
    ck_assert_int_eq(self_copies, 1);
    ck_assert(MPIR_Tnbc_sched_is_first_self_copy(&s, s.order[0]));
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

/* A Bcast's inner nodes forward segments from the receive space. */
START_TEST(bcast_tree_reads_its_receive_space)
{
    MPIR_Tnbc_sched_t s;
    MPIR_Tnbc_sched_init(&s);
    int parent, children[MPIR_TNBC_BCAST_MAX_CHILDREN];
    ck_assert_int_gt(MPIR_Tnbc_bcast_tree(2, 4, 0, NULL, &parent, children), 0);
    ck_assert_int_eq(MPIR_Tnbc_sched_bcast(&s, 2, 4, 0, 40000, 4, NULL), MPIR_TNBC_SCHED_OK);
    ck_assert(MPIR_Tnbc_sched_reads_recv(&s));
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

START_TEST(alltoallv_overlapping_receives_are_reported)
{
    MPIR_Tnbc_sched_t s;
    size_t b[2] = { 10, 10 }, so[2] = { 0, 10 }, ro[2] = { 0, 5 };
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&s, 0, 2, b, so, b, ro),
                     MPIR_TNBC_SCHED_ERR_OVERLAP);
    MPIR_Tnbc_sched_free(&s);
    /* the self pair must move as many bytes as it receives */
    size_t b2[2] = { 10, 10 }, r2[2] = { 11, 10 };
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&s, 0, 2, b2, so, r2, so), MPIR_TNBC_SCHED_ERR_ARG);
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

START_TEST(alltoallv_overlapping_sends_are_allowed)
{
    MPIR_Tnbc_sched_t s;
    size_t b[3] = { 8, 8, 8 }, so[3] = { 0, 0, 4 }, ro[3] = { 0, 8, 16 };
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&s, 0, 3, b, so, b, ro), MPIR_TNBC_SCHED_OK);
    ck_assert(!MPIR_Tnbc_sched_send_subs_disjoint(&s));
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

START_TEST(large_pieces_travel_as_edges_first)
{
    MPIR_Tnbc_sched_t s;
    const size_t E = MPIR_TNBC_SCHED_EDGE;
    size_t b[3] = { 5 * E, 5 * E, 5 * E }, o[3] = { 0, 5 * E, 10 * E };
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&s, 0, 3, b, o, b, o), MPIR_TNBC_SCHED_OK);
    ck_assert_int_eq(s.nrecv_sub, 1 + 2 * 3);   /* self copy + head/tail/body per peer */
    /* every edge is posted before any body */
    int seen_body = 0;
    for (int j = 0; j < s.n; j++) {
        MPIR_Tnbc_entry_t *e = &s.entries[s.order[j]];
        if (e->kind == MPIR_TNBC_COPY)
            continue;
        if (e->len == E)
            ck_assert_msg(!seen_body, "edge after a body");
        else
            seen_body = 1;
    }
    /* the receive buffer's first and last bytes are edges */
    ck_assert_uint_eq(s.recv_sub_len[0], 5 * E);        /* self copy at offset 0 */
    ck_assert_uint_eq(s.recv_sub_len[s.nrecv_sub - 1], E);
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

START_TEST(receive_bodies_follow_the_access_order)
{
    MPIR_Tnbc_sched_t s;
    const size_t E = MPIR_TNBC_SCHED_EDGE;
    enum { N = 5 };
    size_t b[N], o[N];
    const int pos[N] = { 4, 2, 0, 3, 1 };       /* source 2 is read first, then 4, 1, 3, 0 */
    for (int p = 0; p < N; p++) {
        b[p] = 5 * E;
        o[p] = p * 5 * E;
    }
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv_ordered(&s, 0, N, b, o, b, o, pos, NULL, 0),
                     MPIR_TNBC_SCHED_OK);
    /* edges still go first; then the receive bodies by position */
    int last_pos = -1, seen_body = 0;
    for (int j = 0; j < s.n; j++) {
        MPIR_Tnbc_entry_t *e = &s.entries[s.order[j]];
        if (e->kind == MPIR_TNBC_COPY)
            continue;
        /* bodies are what node arbitration may hold back: never an edge */
        ck_assert_int_eq(MPIR_Tnbc_entry_is_body(&s, e), e->len != E);
        if (e->len == E) {
            ck_assert_msg(!seen_body, "edge after a body");
            continue;
        }
        seen_body = 1;
        if (e->kind == MPIR_TNBC_RECV) {
            ck_assert_int_gt(pos[e->peer], last_pos);
            last_pos = pos[e->peer];
        }
    }
    /* every receive sub-message knows its source */
    int peer[3 * N];
    MPIR_Tnbc_sched_recv_sub_blocks(&s, peer);
    for (int k = 0; k < s.nrecv_sub; k++)
        ck_assert_int_eq(peer[k], (int) (s.recv_sub_off[k] / (5 * E)));
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

START_TEST(send_bodies_follow_a_reorder_plan)
{
    MPIR_Tnbc_sched_t s;
    const size_t E = MPIR_TNBC_SCHED_EDGE;
    enum { N = 5 };
    size_t b[N], o[N];
    const int pos[N] = { 0, 3, 1, 0, 2 };       /* to 3 first, then 2, 4, 1 (0 is me) */
    for (int p = 0; p < N; p++) {
        b[p] = 5 * E;
        o[p] = p * 5 * E;
    }
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv_ordered(&s, 0, N, b, o, b, o, NULL, pos, 0),
                     MPIR_TNBC_SCHED_OK);
    int last_pos = -1, sends = 0;
    for (int j = 0; j < s.n; j++) {
        MPIR_Tnbc_entry_t *e = &s.entries[s.order[j]];
        if (e->kind != MPIR_TNBC_SEND || e->len == E)
            continue;
        ck_assert_int_gt(pos[e->peer], last_pos);
        last_pos = pos[e->peer];
        sends++;
    }
    ck_assert_int_eq(sends, N - 1);
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

/* With reports, every rank hears from every peer where that peer reads its block, on a tag
 * of its own, and the data still arrive. */
START_TEST(order_reports_reach_every_sender)
{
    enum { N = 5 };
    const size_t E = MPIR_TNBC_SCHED_EDGE;
    sim_rank_t *r = calloc(N, sizeof(*r));
    size_t b[N], o[N];
    for (int p = 0; p < N; p++) {
        b[p] = 3 * E + 1;
        o[p] = p * 4 * E;
    }
    for (int k = 0; k < N; k++) {
        MPIR_Tnbc_sched_init(&r[k].s);
        ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv_ordered(&r[k].s, k, N, b, o, b, o, NULL, NULL,
                                                           1), MPIR_TNBC_SCHED_OK);
        ck_assert_int_eq(r[k].s.ntags, 2);
        ck_assert_uint_eq(r[k].s.work_bytes, MPIR_Tnbc_reports_bytes(N));
        sim_alloc(&r[k], 4 * E * N, 4 * E * N, k);
        for (int p = 0; p < N; p++) {
            int32_t v = 100 * k + p;    /* where k reads p's block, made up */
            memcpy(r[k].workspace + MPIR_Tnbc_report_out_off(p), &v, sizeof(v));
        }
        /* no report is a body; a report to a peer waits for the body to that peer */
        ck_assert(r[k].s.reports);
        for (int i = 0; i < r[k].s.n; i++) {
            const MPIR_Tnbc_entry_t *e = &r[k].s.entries[i];
            if (e->space != MPIR_TNBC_SPACE_WORK)
                continue;
            ck_assert(!MPIR_Tnbc_entry_is_body(&r[k].s, e));
            if (e->kind == MPIR_TNBC_SEND) {
                const MPIR_Tnbc_entry_t *b = &r[k].s.entries[e->after];
                ck_assert(MPIR_Tnbc_entry_is_body(&r[k].s, b));
                ck_assert_int_eq(b->kind, MPIR_TNBC_SEND);
                ck_assert_int_eq(b->peer, e->peer);
            }
        }
    }
    simulate(r, N);
    for (int k = 0; k < N; k++) {
        for (int p = 0; p < N; p++) {
            int32_t v;
            if (p == k)
                continue;
            memcpy(&v, r[k].workspace + MPIR_Tnbc_report_in_off(N, p), sizeof(v));
            ck_assert_int_eq(v, 100 * p + k);
            for (size_t x = 0; x < b[p]; x++)
                ck_assert_uint_eq(r[k].recvspace[o[p] + x],
                                  (unsigned char) (p * 31 + (o[k] + x) * 7 + 1));
        }
    }
    sim_free(r, N);
}
END_TEST

/* Rank k's access order of a Bcast's pieces (position of each piece), by a rule:
 * 0 none (piece order), 1 reverse for every rank, 2 a rotation that starts at a piece of its
 * own (ranks read differently). */
static int *bcast_pos(int rule, int k, int npieces)
{
    if (rule == 0 || npieces < 2)
        return NULL;
    int *pos = malloc(npieces * sizeof(int));
    for (int p = 0; p < npieces; p++)
        pos[p] = rule == 1 ? npieces - 1 - p : (p - k % npieces + npieces) % npieces;
    return pos;
}

/* Every process knows its own order and its children's (as their reports would tell it).
 * tree: the tree's order of ranks (root first), or NULL. */
static void run_bcast_tree(int size, int root, size_t nbytes, int nseg, int rule,
                           const int *tree)
{
    sim_rank_t *r = calloc(size, sizeof(*r));
    int npieces = MPIR_Tnbc_bcast_pieces(nbytes, nseg);
    size_t report = MPIR_Tnbc_bcast_report_bytes(npieces);
    int **pos = calloc(size, sizeof(int *));

    for (int k = 0; k < size; k++)
        pos[k] = bcast_pos(rule, k, npieces);
    for (int k = 0; k < size; k++) {
        int parent, children[MPIR_TNBC_BCAST_MAX_CHILDREN];
        const int *child_pos[MPIR_TNBC_BCAST_MAX_CHILDREN];
        int nchildren = MPIR_Tnbc_bcast_tree(k, size, root, tree, &parent, children);
        for (int c = 0; c < nchildren; c++)
            child_pos[c] = pos[children[c]];
        MPIR_Tnbc_bcast_order_t order = {.recv_pos = pos[k],.child_pos = child_pos,
            .ranks = tree
        };
        MPIR_Tnbc_sched_init(&r[k].s);
        ck_assert_int_eq(MPIR_Tnbc_sched_bcast(&r[k].s, k, size, root, nbytes, nseg, &order),
                         MPIR_TNBC_SCHED_OK);
        r[k].s.body_window = rule;      /* none, one or two segments in flight per child */
        ck_assert_uint_eq(r[k].s.send_bytes, k == root ? nbytes : parent >= 0 ? report : 0);
        ck_assert_uint_eq(r[k].s.work_bytes, nchildren * report);
        sim_alloc(&r[k], r[k].s.send_bytes, nbytes, root);
        if (k != root) {
            ck_assert_uint_eq(r[k].s.recv_bytes, nbytes);
            if (report)
                MPIR_Tnbc_bcast_report_encode(pos[k], npieces, r[k].sendspace);
        }
        for (int i = 0; i < r[k].s.n; i++) {
            MPIR_Tnbc_entry_t *e = &r[k].s.entries[i];
            /* every piece and report has a tag of its own: nothing is chained */
            ck_assert_int_gt(e->tag, 0);
            ck_assert_int_lt(e->tag, r[k].s.ntags);
            ck_assert_int_eq(e->prev_peer, -1);
            /* every forward waits for the segment it forwards */
            if (e->kind == MPIR_TNBC_SEND && k != root && e->space != MPIR_TNBC_SPACE_SEND) {
                ck_assert_int_ge(e->after, 0);
                ck_assert_uint_eq(r[k].s.entries[e->after].off, e->off);
                ck_assert_int_eq(e->space, MPIR_TNBC_SPACE_RECV);
            }
        }
    }
    simulate(r, size);
    for (int k = 0; k < size; k++) {
        int parent, children[MPIR_TNBC_BCAST_MAX_CHILDREN];
        int nchildren = MPIR_Tnbc_bcast_tree(k, size, root, tree, &parent, children);
        if (k != root)
            ck_assert_mem_eq(r[k].recvspace, r[root].sendspace, nbytes);
        /* a parent holds each child's report */
        for (int c = 0; c < nchildren && report; c++) {
            int *got = malloc(npieces * sizeof(int));
            int known = MPIR_Tnbc_bcast_report_decode(r[k].workspace + c * report, report,
                                                      npieces, got);
            ck_assert_int_eq(known, pos[children[c]] != NULL);
            if (known)
                ck_assert_mem_eq(got, pos[children[c]], npieces * sizeof(int));
            free(got);
        }
    }
    for (int k = 0; k < size; k++)
        free(pos[k]);
    free(pos);
    sim_free(r, size);
}

static void run_bcast_ordered(int size, int root, size_t nbytes, int nseg, int rule)
{
    run_bcast_tree(size, root, nbytes, nseg, rule, NULL);
}

static void run_bcast(int size, int root, size_t nbytes, int nseg)
{
    run_bcast_ordered(size, root, nbytes, nseg, 0);
}

/* Ranks placed round-robin on 4 nodes, grouped by node for the tree: the root's node first;
 * every edge below the top two levels stays inside a node. */
START_TEST(bcast_tree_follows_a_node_order)
{
    enum { SIZE = 8, NODES = 4 };
    for (int root = 0; root < SIZE; root += 3) {
        int tree[SIZE], n = 0, parent, children[MPIR_TNBC_BCAST_MAX_CHILDREN];
        tree[n++] = root;
        for (int node = 0; node < NODES; node++) {
            int nd = (root + node) % NODES;
            for (int r = 0; r < SIZE; r++)
                if (r % NODES == nd && r != root)
                    tree[n++] = r;
        }
        ck_assert_int_eq(n, SIZE);
        for (int k = 0; k < SIZE; k++) {
            int nchildren = MPIR_Tnbc_bcast_tree(k, SIZE, root, tree, &parent, children);
            ck_assert_int_ge(nchildren, 0);
            for (int c = 0; c < nchildren; c++) {
                int v = 0;
                while (tree[v] != children[c])
                    v++;
                if (v % 2 == 1)         /* the last level: a node's second rank */
                    ck_assert_int_eq(children[c] % NODES, k % NODES);
            }
        }
        for (int rule = 0; rule <= 2; rule++)
            run_bcast_tree(SIZE, root, 100000, 8, rule, tree);
        /* a list that does not start at the root, or misses a rank, is refused */
        int bad[SIZE];
        memcpy(bad, tree, sizeof(bad));
        bad[0] = tree[1];
        bad[1] = tree[0];
        ck_assert_int_eq(MPIR_Tnbc_bcast_tree(root, SIZE, root, bad, &parent, children), -1);
    }
}
END_TEST

START_TEST(bcast_tree_delivers_every_segment)
{
    for (int size = 1; size <= 13; size++)
        for (int root = 0; root < size; root += 3)
            for (int nseg = 1; nseg <= 5; nseg += 2)
                run_bcast(size, root, 10000 + size, nseg);
}
END_TEST

START_TEST(bcast_more_segments_than_bytes)
{
    run_bcast(4, 1, 3, 8);
    run_bcast(5, 0, 1, 4);
    run_bcast(6, 2, 2 * MPIR_TNBC_SCHED_EDGE + 1, 4);  /* middle of one byte */
    run_bcast(3, 0, 100000, 1024);
}
END_TEST

START_TEST(bcast_orders_deliver_and_reach_the_parents)
{
    for (int size = 2; size <= 11; size += 3)
        for (int rule = 1; rule <= 2; rule++) {
            run_bcast_ordered(size, size / 2, 100000, 6, rule);
            run_bcast_ordered(size, 0, 3, 4, rule);     /* no edges */
        }
}
END_TEST

/* Receives go in the process's order, sends to each child in that child's, edges first. */
START_TEST(bcast_segments_follow_the_access_orders)
{
    enum { SIZE = 8, RANK = 4, NSEG = 6 };      /* rank 4: parent 0, children 6 and 5 */
    int npieces = MPIR_Tnbc_bcast_pieces(200000, NSEG);
    ck_assert_int_eq(npieces, NSEG + 2);
    int *mine = bcast_pos(1, RANK, npieces), *six = bcast_pos(2, 6, npieces);
    const int *child_pos[2] = { six, NULL };    /* child 5 reported nothing: ours */
    MPIR_Tnbc_bcast_order_t order = {.recv_pos = mine,.child_pos = child_pos };
    MPIR_Tnbc_sched_t s;
    int seen[3] = { 0 };

    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_bcast(&s, RANK, SIZE, 0, 200000, NSEG, &order),
                     MPIR_TNBC_SCHED_OK);
    ck_assert_int_eq(s.body_prio, 2);   /* the segments are bodies, the edges not */
    int last[3] = { -1, -1, -1 };       /* recv, to 6, to 5: the last piece seen */
    for (int j = 0; j < s.n; j++) {
        const MPIR_Tnbc_entry_t *e = &s.entries[s.order[j]];
        if (e->space == MPIR_TNBC_SPACE_WORK || (e->kind == MPIR_TNBC_SEND &&
                                                 e->space == MPIR_TNBC_SPACE_SEND))
            continue;   /* reports */
        int stream = e->kind == MPIR_TNBC_RECV ? 0 : e->peer == 6 ? 1 : 2;
        const int *pos = stream == 1 ? six : mine;
        int piece = e->tag - 1, n = seen[stream]++;
        /* the two edges first, then the bodies by position */
        if (n < 2)
            ck_assert_int_eq(piece, n);
        else if (n > 2)
            ck_assert_int_gt(pos[piece], pos[last[stream]]);
        last[stream] = piece;
    }
    ck_assert_int_eq(seen[0], npieces);
    ck_assert_int_eq(seen[1], npieces);
    ck_assert_int_eq(seen[2], npieces);
    free(mine);
    free(six);
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

START_TEST(bcast_reports_reject_what_is_not_an_order)
{
    int pos[4] = { 2, 0, 3, 1 }, got[4];
    size_t len = MPIR_Tnbc_bcast_report_bytes(4);
    int32_t report[5];

    ck_assert_uint_eq(MPIR_Tnbc_bcast_report_bytes(1), 0);
    MPIR_Tnbc_bcast_report_encode(pos, 4, report);
    ck_assert_int_eq(MPIR_Tnbc_bcast_report_decode(report, len, 4, got), 1);
    ck_assert_mem_eq(got, pos, sizeof(pos));
    ck_assert_int_eq(MPIR_Tnbc_bcast_report_decode(report, len - 4, 4, got), 0);
    ck_assert_int_eq(MPIR_Tnbc_bcast_report_decode(report, len, 3, got), 0);
    report[2] = 2;      /* piece 0 and piece 1 at the same position */
    ck_assert_int_eq(MPIR_Tnbc_bcast_report_decode(report, len, 4, got), 0);
    report[2] = 7;
    ck_assert_int_eq(MPIR_Tnbc_bcast_report_decode(report, len, 4, got), 0);
    MPIR_Tnbc_bcast_report_encode(NULL, 4, report);     /* no order known */
    ck_assert_int_eq(MPIR_Tnbc_bcast_report_decode(report, len, 4, got), 0);
}
END_TEST

START_TEST(bad_arguments)
{
    MPIR_Tnbc_sched_t s;
    size_t b[1] = { 1 };
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&s, 2, 2, b, b, b, b), MPIR_TNBC_SCHED_ERR_ARG);
    ck_assert_int_eq(MPIR_Tnbc_sched_bcast(&s, 0, 2, 5, 10, 1, NULL), MPIR_TNBC_SCHED_ERR_ARG);
    ck_assert_int_eq(MPIR_Tnbc_sched_bcast(&s, 0, 2, 0, 10, 0, NULL), MPIR_TNBC_SCHED_ERR_ARG);
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

/* Entries that may run after the call returned and read the send space must name a send
 * sub-message (it stays guarded or copied until they are done); receive subs are disjoint. */
static void check_send_readers(const MPIR_Tnbc_sched_t * s)
{
    for (int i = 0; i < s->n; i++) {
        const MPIR_Tnbc_entry_t *e = &s->entries[i];
        int reads_send = (e->kind == MPIR_TNBC_SEND && e->space == MPIR_TNBC_SPACE_SEND) ||
            (e->kind == MPIR_TNBC_REDUCE && e->src_space == MPIR_TNBC_SPACE_SEND) ||
            (e->kind == MPIR_TNBC_COPY && e->src_space == MPIR_TNBC_SPACE_SEND);
        int late = e->after >= 0 || e->after2 >= 0 || e->prev_peer >= 0;
        if (reads_send && (late || e->kind == MPIR_TNBC_SEND))
            ck_assert_msg(e->sub >= 0 && !MPIR_Tnbc_entry_fills_recv(e), "entry %d", i);
        if (e->kind == MPIR_TNBC_REDUCE)
            ck_assert_uint_eq(e->len % s->elem, 0);
    }
    for (int i = 1; i < s->nrecv_sub; i++)
        ck_assert_uint_le(s->recv_sub_off[i - 1] + s->recv_sub_len[i - 1], s->recv_sub_off[i]);
    ck_assert(MPIR_Tnbc_sched_send_subs_disjoint(s));
}

/* 1 when got[0..n) is the sum of the sim_alloc inputs of ranks lo..hi at bytes from off
 * (one assertion per buffer: Check records every assertion) */
static int is_input_sum(const unsigned char *got, size_t n, int lo, int hi, size_t off)
{
    for (size_t b = 0; b < n; b++) {
        unsigned char v = 0;
        for (int q = lo; q <= hi; q++)
            v = (unsigned char) (v + q * 31 + (off + b) * 7 + 1);
        if (got[b] != v)
            return 0;
    }
    return 1;
}

/* Allreduce (root < 0) or Reduce */
static void run_reduce(int size, int root, size_t nbytes, size_t elem)
{
    sim_rank_t *r = calloc(size, sizeof(*r));
    for (int k = 0; k < size; k++) {
        MPIR_Tnbc_sched_init(&r[k].s);
        int rc = root < 0 ? MPIR_Tnbc_sched_allreduce(&r[k].s, k, size, nbytes, elem) :
            MPIR_Tnbc_sched_reduce(&r[k].s, k, size, root, nbytes, elem);
        ck_assert_int_eq(rc, MPIR_TNBC_SCHED_OK);
        int needs = root < 0 || root == k;
        ck_assert_uint_eq(r[k].s.recv_bytes, needs ? nbytes : 0);
        check_send_readers(&r[k].s);
        sim_alloc(&r[k], nbytes, nbytes, k);
    }
    simulate(r, size);
    for (int k = 0; k < size; k++) {
        if (root >= 0 && k != root)
            continue;
        ck_assert_msg(is_input_sum(r[k].recvspace, nbytes, 0, size - 1, 0),
                      "size %d root %d nbytes %zu: rank %d", size, root, nbytes, k);
    }
    sim_free(r, size);
}

/* Erroneous programs whose counts disagree must still pair messages one to one. */
START_TEST(pairs_of_any_size_are_three_messages)
{
    const size_t E = MPIR_TNBC_SCHED_EDGE;
    const size_t sizes[] = { 1, E - 1, E, E + 1, 2 * E, 2 * E + 1, 5 * E };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        MPIR_Tnbc_sched_t s;
        size_t b[2] = { sizes[i], sizes[i] }, o[2] = { 0, sizes[i] };
        MPIR_Tnbc_sched_init(&s);
        ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&s, 0, 2, b, o, b, o), MPIR_TNBC_SCHED_OK);
        int nsend = 0, nrecv = 0, empty_recv_subs = 0;
        size_t bytes = 0;
        for (int j = 0; j < s.n; j++) {
            MPIR_Tnbc_entry_t *e = &s.entries[j];
            nsend += (e->kind == MPIR_TNBC_SEND);
            nrecv += (e->kind == MPIR_TNBC_RECV);
            if (e->kind == MPIR_TNBC_RECV) {
                bytes += e->len;
                empty_recv_subs += (e->len == 0 && e->sub >= 0);
            }
        }
        ck_assert_int_eq(nsend, 3);
        ck_assert_int_eq(nrecv, 3);
        ck_assert_uint_eq(bytes, sizes[i]);
        ck_assert_int_eq(empty_recv_subs, 0);
        check_send_readers(&s);
        MPIR_Tnbc_sched_free(&s);
    }
}
END_TEST

START_TEST(allreduce_and_reduce_deliver_the_sum)
{
    const size_t E = MPIR_TNBC_SCHED_EDGE;
    size_t sizes[] = { 4, 40, 2 * E, 2 * E + 8, 5 * E + 24, 100000 };
    for (int size = 1; size <= 7; size++)
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            sim_seed = (unsigned) (size * 100 + i);
            run_reduce(size, -1, sizes[i], 4);
            run_reduce(size, size / 2, sizes[i], 4);
            run_reduce(size, 0, sizes[i] / 4 * 8, 8);
        }
    run_reduce(5, 2, 12 * 3001, 12);    /* elements that do not divide the edge */
    run_reduce(3, -1, 12 * 3001, 12);
}
END_TEST

static void run_reduce_scatter(int size, size_t(*bytes)(int, int), size_t elem)
{
    sim_rank_t *r = calloc(size, sizeof(*r));
    size_t *b = malloc(size * sizeof(size_t)), total = 0;
    for (int c = 0; c < size; c++) {
        b[c] = bytes(c, size) * elem;
        total += b[c];
    }
    for (int k = 0; k < size; k++) {
        MPIR_Tnbc_sched_init(&r[k].s);
        ck_assert_int_eq(MPIR_Tnbc_sched_reduce_scatter(&r[k].s, k, size, b, elem),
                         MPIR_TNBC_SCHED_OK);
        ck_assert_uint_eq(r[k].s.recv_bytes, b[k]);
        check_send_readers(&r[k].s);
        sim_alloc(&r[k], total, b[k], k);
    }
    simulate(r, size);
    size_t boff = 0;
    for (int k = 0; k < size; k++) {
        ck_assert_msg(is_input_sum(r[k].recvspace, b[k], 0, size - 1, boff), "rank %d", k);
        boff += b[k];
    }
    free(b);
    sim_free(r, size);
}

static size_t block_uniform(int c, int size)
{
    return 3000;
}

static size_t block_skewed(int c, int size)
{
    return (c % 3 == 1) ? 0 : (size_t) (c + 1) * 1500 + 3;
}

START_TEST(reduce_scatter_delivers_each_block)
{
    for (int size = 1; size <= 7; size++) {
        sim_seed = (unsigned) size;
        run_reduce_scatter(size, block_uniform, 4);
        run_reduce_scatter(size, block_skewed, 4);
        run_reduce_scatter(size, block_skewed, 1);
    }
}
END_TEST

static void run_scan(int size, size_t nbytes, size_t elem, int nseg, int exclusive)
{
    sim_rank_t *r = calloc(size, sizeof(*r));
    for (int k = 0; k < size; k++) {
        MPIR_Tnbc_sched_init(&r[k].s);
        ck_assert_int_eq(MPIR_Tnbc_sched_scan(&r[k].s, k, size, nbytes, elem, nseg, exclusive),
                         MPIR_TNBC_SCHED_OK);
        ck_assert_uint_eq(r[k].s.recv_bytes, (exclusive && k == 0) ? 0 : nbytes);
        check_send_readers(&r[k].s);
        sim_alloc(&r[k], nbytes, nbytes, k);
    }
    simulate(r, size);
    for (int k = exclusive; k < size; k++)
        ck_assert_msg(is_input_sum(r[k].recvspace, nbytes, 0, k - exclusive, 0), "rank %d", k);
    sim_free(r, size);
}

START_TEST(scan_and_exscan_deliver_prefixes)
{
    for (int size = 1; size <= 6; size++)
        for (int nseg = 1; nseg <= 4; nseg += 3) {
            sim_seed = (unsigned) (size * 10 + nseg);
            run_scan(size, 4, 4, nseg, 0);
            run_scan(size, 40000, 8, nseg, 0);
            run_scan(size, 4, 4, nseg, 1);
            run_scan(size, 40000, 8, nseg, 1);
        }
}
END_TEST

START_TEST(sends_to_one_peer_post_in_schedule_order)
{
    /* a Scan's segments share the operation's tag: the sends to the next rank are chained */
    MPIR_Tnbc_sched_t s;
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_scan(&s, 3, 8, 100000, 8, 4, 0), MPIR_TNBC_SCHED_OK);
    int prev = -1, n = 0;
    for (int j = 0; j < s.n; j++) {
        MPIR_Tnbc_entry_t *e = &s.entries[s.order[j]];
        if (e->kind == MPIR_TNBC_SEND && e->peer == 4) {
            ck_assert_int_eq(e->tag, 0);
            ck_assert_int_eq(e->prev_peer, prev);
            prev = s.order[j];
            n++;
        }
    }
    ck_assert_int_gt(n, 1);
    MPIR_Tnbc_sched_free(&s);
}
END_TEST

/* Neighbour lists with a repeated peer, MPI_PROC_NULL and this rank itself. */
enum { NBR_DEG = 5 };

static size_t nbr_bytes(int q, int e)
{
    return 3000 + (size_t) e * 5000 + (size_t) q * 7;
}

static void nbr_lists(int k, int size, int *dests, int *srcs)
{
    int up = (k + 1) % size, down = (k - 1 + size) % size;
    int d[NBR_DEG] = { up, up, down, -1, k }, s[NBR_DEG] = { down, down, up, -1, k };
    memcpy(dests, d, sizeof(d));
    memcpy(srcs, s, sizeof(s));
}

/* Which piece of its dests list srcs[j] of rank k sent: the i-th send to k in list order
 * meets the i-th receive from that source in list order, or in reverse list order. */
static int nbr_src_piece(int k, int size, int j, int rev)
{
    int dests[NBR_DEG], srcs[NBR_DEG], q, nth = 0;
    nbr_lists(k, size, dests, srcs);
    q = srcs[j];
    for (int x = rev ? NBR_DEG - 1 : 0; rev ? x > j : x < j; x += rev ? -1 : 1)
        nth += (srcs[x] == q);
    nbr_lists(q, size, dests, srcs);
    for (int e = 0; e < NBR_DEG; e++)
        if (dests[e] == k && nth-- == 0)
            return e;
    return -1;
}

static void run_neighbor(int size, int rev)
{
    sim_rank_t *r = calloc(size, sizeof(*r));
    size_t soff[NBR_DEG], roff[NBR_DEG], sb[NBR_DEG], rb[NBR_DEG];
    for (int k = 0; k < size; k++) {
        int dests[NBR_DEG], srcs[NBR_DEG];
        size_t st = 0, rt = 0;
        nbr_lists(k, size, dests, srcs);
        for (int e = 0; e < NBR_DEG; e++) {
            sb[e] = nbr_bytes(k, e);
            soff[e] = st;
            st += sb[e];
            rb[e] = srcs[e] < 0 ? 0 : nbr_bytes(srcs[e], nbr_src_piece(k, size, e, rev));
            roff[e] = rt;
            rt += rb[e];
        }
        MPIR_Tnbc_sched_init(&r[k].s);
        ck_assert_int_eq(MPIR_Tnbc_sched_neighbor(&r[k].s, NBR_DEG, dests, sb, soff, NBR_DEG,
                                                  srcs, rb, roff, rev), MPIR_TNBC_SCHED_OK);
        check_send_readers(&r[k].s);
        sim_alloc(&r[k], st, rt, k);
    }
    simulate(r, size);
    for (int k = 0; k < size; k++) {
        int dests[NBR_DEG], srcs[NBR_DEG];
        size_t rt = 0;
        nbr_lists(k, size, dests, srcs);
        for (int e = 0; e < NBR_DEG; e++) {
            if (srcs[e] < 0)
                continue;
            int piece = nbr_src_piece(k, size, e, rev);
            size_t n = nbr_bytes(srcs[e], piece), so = 0;
            for (int x = 0; x < piece; x++)
                so += nbr_bytes(srcs[e], x);
            ck_assert_mem_eq(r[k].recvspace + rt, r[srcs[e]].sendspace + so, n);
            rt += n;
        }
    }
    sim_free(r, size);
}

START_TEST(neighbor_lists_deliver_as_mpich_matches)
{
    for (int size = 1; size <= 5; size++) {
        sim_seed = (unsigned) size;
        run_neighbor(size, 0);
        run_neighbor(size, 1);
    }
}
END_TEST

static Suite *sched_suite(void)
{
    Suite *s = suite_create("tnbc_sched");
    TCase *a = tcase_create("alltoall");
    tcase_add_test(a, alltoall_uniform_delivers);
    tcase_add_test(a, alltoallv_skewed_with_empty_pairs_delivers);
    tcase_add_test(a, alltoall_ring_order_and_self_copy);
    tcase_add_test(a, alltoallv_overlapping_receives_are_reported);
    tcase_add_test(a, alltoallv_overlapping_sends_are_allowed);
    tcase_add_test(a, pairs_of_any_size_are_three_messages);
    tcase_add_test(a, large_pieces_travel_as_edges_first);
    tcase_add_test(a, receive_bodies_follow_the_access_order);
    tcase_add_test(a, send_bodies_follow_a_reorder_plan);
    tcase_add_test(a, order_reports_reach_every_sender);
    tcase_add_test(a, neighbor_lists_deliver_as_mpich_matches);
    suite_add_tcase(s, a);
    TCase *b = tcase_create("bcast");
    tcase_add_test(b, bcast_tree_delivers_every_segment);
    tcase_add_test(b, bcast_tree_reads_its_receive_space);
    tcase_add_test(b, bcast_more_segments_than_bytes);
    tcase_add_test(b, bcast_orders_deliver_and_reach_the_parents);
    tcase_add_test(b, bcast_tree_follows_a_node_order);
    tcase_add_test(b, bcast_segments_follow_the_access_orders);
    tcase_add_test(b, bcast_reports_reject_what_is_not_an_order);
    tcase_add_test(b, bad_arguments);
    tcase_add_test(b, sends_to_one_peer_post_in_schedule_order);
    suite_add_tcase(s, b);
    TCase *c = tcase_create("reductions");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, allreduce_and_reduce_deliver_the_sum);
    tcase_add_test(c, reduce_scatter_delivers_each_block);
    tcase_add_test(c, scan_and_exscan_deliver_prefixes);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sched_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
