/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of the T-NBC schedule builders. Besides the shape of single tables, a small
 * simulator runs the schedules of all ranks of a communicator together: entries start in each
 * table's order once their dependency is done, sends and receives of a pair match in the order
 * they were posted (MPI's non-overtaking rule on one tag), and the bytes that arrive are
 * checked. A schedule that could deadlock, mismatch lengths or deliver wrong bytes fails. */

#include "tnbc_sched.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    MPIR_Tnbc_sched_t s;
    unsigned char *sendspace, *recvspace;
    int *state;                 /* 0 idle, 1 posted, 2 done */
    int *post_seq;              /* order in which entries were posted */
} sim_rank_t;

/* Match posted sends and receives pair by pair, in posting order. Returns 1 if anything
 * completed. */
static int match(sim_rank_t * r, int size)
{
    int any = 0;
    for (int src = 0; src < size; src++) {
        for (int dst = 0; dst < size; dst++) {
            while (1) {
                int si = -1, ri = -1, sseq = 0, rseq = 0;
                for (int i = 0; i < r[src].s.n; i++) {
                    MPIR_Tnbc_entry_t *e = &r[src].s.entries[i];
                    if (e->kind == MPIR_TNBC_SEND && e->peer == dst && r[src].state[i] == 1 &&
                        (si < 0 || r[src].post_seq[i] < sseq)) {
                        si = i;
                        sseq = r[src].post_seq[i];
                    }
                }
                for (int i = 0; i < r[dst].s.n; i++) {
                    MPIR_Tnbc_entry_t *e = &r[dst].s.entries[i];
                    if (e->kind == MPIR_TNBC_RECV && e->peer == src && r[dst].state[i] == 1 &&
                        (ri < 0 || r[dst].post_seq[i] < rseq)) {
                        ri = i;
                        rseq = r[dst].post_seq[i];
                    }
                }
                if (si < 0 || ri < 0)
                    break;
                MPIR_Tnbc_entry_t *se = &r[src].s.entries[si], *re = &r[dst].s.entries[ri];
                ck_assert_uint_eq(se->len, re->len);
                const unsigned char *from = se->from_recv ? r[src].recvspace + se->off
                    : r[src].sendspace + se->off;
                memcpy(r[dst].recvspace + re->off, from, re->len);
                r[src].state[si] = r[dst].state[ri] = 2;
                any = 1;
            }
        }
    }
    return any;
}

/* Run all ranks to completion; fails on a deadlock. */
static void simulate(sim_rank_t * r, int size)
{
    int seq = 0;
    while (1) {
        int any = 0, open = 0;
        for (int k = 0; k < size; k++) {
            MPIR_Tnbc_sched_t *s = &r[k].s;
            for (int j = 0; j < s->n; j++) {
                int i = s->order[j];
                MPIR_Tnbc_entry_t *e = &s->entries[i];
                if (r[k].state[i] != 0 || (e->after >= 0 && r[k].state[e->after] != 2))
                    continue;
                r[k].post_seq[i] = seq++;
                r[k].state[i] = 1;
                any = 1;
                if (e->kind == MPIR_TNBC_COPY) {
                    memcpy(r[k].recvspace + e->off, r[k].sendspace + e->src_off, e->len);
                    r[k].state[i] = 2;
                }
            }
        }
        any |= match(r, size);
        for (int k = 0; k < size; k++)
            for (int i = 0; i < r[k].s.n; i++)
                open += (r[k].state[i] != 2);
        if (!open)
            return;
        ck_assert_msg(any, "schedule deadlocks with %d entries open", open);
    }
}

static void sim_alloc(sim_rank_t * r, size_t sbytes, size_t rbytes, int rank)
{
    r->sendspace = malloc(sbytes + 1);
    r->recvspace = calloc(rbytes + 1, 1);
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
    ck_assert_int_eq(s.n, 7);   /* 3 sends, 3 receives, 1 copy */
    MPIR_Tnbc_entry_t *first = &s.entries[s.order[0]];
    ck_assert_int_eq(first->kind, MPIR_TNBC_COPY);
    /* step 1 pairs rank 1 with 2 (send) and 0 (receive) */
    int sends = 0;
    for (int j = 0; j < s.n; j++) {
        MPIR_Tnbc_entry_t *e = &s.entries[s.order[j]];
        if (e->kind == MPIR_TNBC_SEND) {
            ck_assert_int_eq(e->peer, (1 + 1 + sends) % 4);
            sends++;
        }
    }
    ck_assert_int_eq(s.nrecv_sub, 4);
    ck_assert(MPIR_Tnbc_sched_send_subs_disjoint(&s));
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

static void run_bcast(int size, int root, size_t nbytes, int nseg)
{
    sim_rank_t *r = calloc(size, sizeof(*r));
    for (int k = 0; k < size; k++) {
        MPIR_Tnbc_sched_init(&r[k].s);
        ck_assert_int_eq(MPIR_Tnbc_sched_bcast(&r[k].s, k, size, root, nbytes, nseg),
                         MPIR_TNBC_SCHED_OK);
        sim_alloc(&r[k], k == root ? nbytes : 0, nbytes, root);
        if (k != root)
            ck_assert_uint_eq(r[k].s.recv_bytes, nbytes);
        /* every forward waits for the segment it forwards */
        for (int i = 0; i < r[k].s.n; i++) {
            MPIR_Tnbc_entry_t *e = &r[k].s.entries[i];
            if (e->kind == MPIR_TNBC_SEND && k != root) {
                ck_assert_int_ge(e->after, 0);
                ck_assert_uint_eq(r[k].s.entries[e->after].off, e->off);
                ck_assert(e->from_recv);
            }
        }
    }
    simulate(r, size);
    for (int k = 0; k < size; k++) {
        if (k == root)
            continue;
        ck_assert_mem_eq(r[k].recvspace, r[root].sendspace, nbytes);
    }
    sim_free(r, size);
}

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

START_TEST(bad_arguments)
{
    MPIR_Tnbc_sched_t s;
    size_t b[1] = { 1 };
    MPIR_Tnbc_sched_init(&s);
    ck_assert_int_eq(MPIR_Tnbc_sched_alltoallv(&s, 2, 2, b, b, b, b), MPIR_TNBC_SCHED_ERR_ARG);
    ck_assert_int_eq(MPIR_Tnbc_sched_bcast(&s, 0, 2, 5, 10, 1), MPIR_TNBC_SCHED_ERR_ARG);
    ck_assert_int_eq(MPIR_Tnbc_sched_bcast(&s, 0, 2, 0, 10, 0), MPIR_TNBC_SCHED_ERR_ARG);
    MPIR_Tnbc_sched_free(&s);
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
    tcase_add_test(a, large_pieces_travel_as_edges_first);
    suite_add_tcase(s, a);
    TCase *b = tcase_create("bcast");
    tcase_add_test(b, bcast_tree_delivers_every_segment);
    tcase_add_test(b, bcast_more_segments_than_bytes);
    tcase_add_test(b, bad_arguments);
    suite_add_tcase(s, b);
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
