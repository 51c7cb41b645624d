/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of reorder + merge planning (rm_plan.c): message order, growth factor,
 * aggregate windows, the aggregate and directory formats (with direct announcements), the plan
 * cache. */

#include "rm_plan.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* 8 ranks on 4 nodes of 2 (block placement): rank r is on node r / 2 */
static int peers_in_order(MPIR_Rm_order_t order, int me, const int64_t * recv_total,
                          int *out)
{
    MPIR_Rm_msg_t m[8];
    int n = 0;
    for (int p = 0; p < 8; p++)
        if (p != me)
            m[n++] = (MPIR_Rm_msg_t) {.peer = p,.node = p / 2,.bytes = 100,
                .weight = recv_total ? recv_total[p] : 0
            };
    MPIR_Rm_order(m, n, me / 2, me, 8, order);
    for (int i = 0; i < n; i++)
        out[i] = m[i].peer;
    return n;
}

/* rank 3 (node 1) orders its 7 peers as want */
static void assert_order(MPIR_Rm_order_t order, const int64_t * recv_total, const int *want)
{
    int got[7];
    ck_assert_int_eq(peers_in_order(order, 3, recv_total, got), 7);
    for (int i = 0; i < 7; i++)
        ck_assert_msg(got[i] == want[i], "position %d: %d, want %d", i, got[i], want[i]);
}

START_TEST(ring_order_starts_after_me)
{
    int want[7] = { 4, 5, 6, 7, 0, 1, 2 };
    assert_order(MPIR_RM_ORDER_RING, NULL, want);
}
END_TEST

START_TEST(near_first_groups_node_pairs_by_distance_then_weight)
{
    /* rank 3 (node 1): node 1 (distance 0), nodes 0 and 2 (distance 1), node 3 (distance 2) */
    int64_t recv[8] = { 10, 50, 0, 0, 30, 70, 0, 0 };
    int want[7] = { 2, 5, 4, 1, 0, 6, 7 };
    assert_order(MPIR_RM_ORDER_NEAR_FIRST, recv, want);
}
END_TEST

START_TEST(far_first_reverses_distance_only)
{
    int64_t recv[8] = { 10, 50, 0, 0, 30, 70, 0, 0 };
    int want[7] = { 6, 7, 5, 4, 1, 0, 2 };
    assert_order(MPIR_RM_ORDER_FAR_FIRST, recv, want);
}
END_TEST

START_TEST(alpha_follows_node_degrees)
{
    /* node 0 sends to 1, 2, 3; node 1 receives only from 0; node 3 from 0 and 2 */
    int64_t g[16] = { 0, 5, 5, 5,
        0, 0, 0, 0,
        0, 0, 0, 7,
        0, 0, 0, 0
    };
    ck_assert(MPIR_Rm_alpha(g, 4, 0, 1) > 1.5 + 1.58 && MPIR_Rm_alpha(g, 4, 0, 1) < 3.1);
    ck_assert(MPIR_Rm_alpha(g, 4, 2, 3) > 2.49 && MPIR_Rm_alpha(g, 4, 2, 3) < 2.51);
    ck_assert(MPIR_Rm_alpha(g, 4, 1, 2) > 1.49 && MPIR_Rm_alpha(g, 4, 1, 2) < 1.51);
}
END_TEST

static size_t agg_payload(const MPIR_Rm_split_t * s, int a)
{
    size_t sum = 0;
    for (int f = s->first[a]; f < s->first[a + 1]; f++)
        sum += s->frags[f].len;
    return sum;
}

START_TEST(aggregates_grow_by_alpha_up_to_the_cap)
{
    size_t bytes[5] = { 1000, 0, 5000, 20000, 100000 };
    MPIR_Rm_split_t s;
    ck_assert_int_eq(MPIR_Rm_split(bytes, 5, 1000, 2.0, 16000, &s), MPIR_RM_OK);
    size_t want = 1000, total = 0;
    for (int a = 0; a < s.nagg; a++) {
        size_t got = agg_payload(&s, a);
        if (a < s.nagg - 1)
            ck_assert_msg(got == want, "aggregate %d: %zu bytes, want %zu", a, got, want);
        else
            ck_assert(got > 0 && got <= want);
        total += got;
        want = want * 2 > 16000 ? 16000 : want * 2;
    }
    ck_assert_int_eq(total, 126000);
    /* every message's fragments are contiguous, in order, and never name message 1 */
    size_t off[5] = { 0 };
    for (int f = 0; f < s.nfrag; f++) {
        ck_assert_int_ne(s.frags[f].msg, 1);
        ck_assert_int_eq(s.frags[f].off, off[s.frags[f].msg]);
        off[s.frags[f].msg] += s.frags[f].len;
        if (f > 0)
            ck_assert(s.frags[f].msg >= s.frags[f - 1].msg);
    }
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(off[i], bytes[i]);
    MPIR_Rm_split_free(&s);
}
END_TEST

START_TEST(tiny_first_aggregate_still_grows)
{
    size_t bytes[1] = { 10 };
    MPIR_Rm_split_t s;
    ck_assert_int_eq(MPIR_Rm_split(bytes, 1, 1, 1.5, 100, &s), MPIR_RM_OK);
    /* 1, 2, 3, 4: each at least one byte more than the last, although 1 x 1.5 rounds to 1 */
    ck_assert_int_eq(s.nagg, 4);
    ck_assert_int_eq(agg_payload(&s, 3), 4);
    MPIR_Rm_split_free(&s);
}
END_TEST

START_TEST(empty_stream_has_one_empty_aggregate)
{
    size_t bytes[2] = { 0, 0 };
    MPIR_Rm_split_t s;
    ck_assert_int_eq(MPIR_Rm_split(bytes, 2, 4096, 2.5, 1 << 20, &s), MPIR_RM_OK);
    ck_assert_int_eq(s.nagg, 1);
    ck_assert_int_eq(s.nfrag, 0);
    MPIR_Rm_split_free(&s);
    ck_assert_int_eq(MPIR_Rm_split(NULL, 0, 4096, 2.5, 1 << 20, &s), MPIR_RM_OK);
    ck_assert_int_eq(s.nagg, 1);
    MPIR_Rm_split_free(&s);
}
END_TEST

START_TEST(small_messages_share_one_aggregate)
{
    size_t bytes[6] = { 64, 64, 64, 64, 64, 64 };
    MPIR_Rm_split_t s;
    ck_assert_int_eq(MPIR_Rm_split(bytes, 6, 4096, 2.5, 1 << 20, &s), MPIR_RM_OK);
    ck_assert_int_eq(s.nagg, 1);
    ck_assert_int_eq(s.nfrag, 6);
    MPIR_Rm_split_free(&s);
}
END_TEST

/* pack a stream's aggregates the way a sender does and reassemble them as a forwarder does */
START_TEST(pack_unpack_round_trip)
{
    size_t bytes[3] = { 3000, 17, 9000 };
    char *msg[3], *back[3];
    MPIR_Rm_split_t s;
    for (int i = 0; i < 3; i++) {
        msg[i] = malloc(bytes[i]);
        back[i] = calloc(1, bytes[i]);
        for (size_t b = 0; b < bytes[i]; b++)
            msg[i][b] = (char) (i * 31 + b * 7);
    }
    ck_assert_int_eq(MPIR_Rm_split(bytes, 3, 1024, 3.0, 4096, &s), MPIR_RM_OK);
    for (int a = 0; a < s.nagg; a++) {
        int nf = s.first[a + 1] - s.first[a];
        MPIR_Rm_wire_frag_t wf[8];
        size_t payload = 0;
        for (int k = 0; k < nf; k++) {
            const MPIR_Rm_frag_t *f = &s.frags[s.first[a] + k];
            wf[k] = (MPIR_Rm_wire_frag_t) {.dst = 10 + f->msg,.total = bytes[f->msg],
                .off = f->off,.len = f->len
            };
            payload += f->len;
        }
        size_t len = MPIR_Rm_header_bytes(nf) + payload;
        char *buf = malloc(len);
        char *p = MPIR_Rm_write_header(buf, nf, a == s.nagg - 1, wf);
        for (int k = 0; k < nf; k++) {
            memcpy(p, msg[wf[k].dst - 10] + wf[k].off, wf[k].len);
            p += wf[k].len;
        }
        int nfrag, final;
        const MPIR_Rm_wire_frag_t *rf;
        const char *in;
        ck_assert_int_eq(MPIR_Rm_read_header(buf, len, 8, &nfrag, &final, &rf, &in),
                         MPIR_RM_OK);
        ck_assert_int_eq(final, a == s.nagg - 1);
        for (int k = 0; k < nfrag; k++) {
            memcpy(back[rf[k].dst - 10] + rf[k].off, in, rf[k].len);
            in += rf[k].len;
        }
        /* a truncated or padded aggregate is malformed */
        ck_assert_int_eq(MPIR_Rm_read_header(buf, len - 1, 8, &nfrag, &final, &rf, &in),
                         MPIR_RM_ERR_FORMAT);
        ck_assert_int_eq(MPIR_Rm_read_header(buf, len, nf - 1, &nfrag, &final, &rf, &in),
                         nf > 0 ? MPIR_RM_ERR_FORMAT : MPIR_RM_OK);
        free(buf);
    }
    for (int i = 0; i < 3; i++) {
        ck_assert(memcmp(msg[i], back[i], bytes[i]) == 0);
        free(msg[i]);
        free(back[i]);
    }
    MPIR_Rm_split_free(&s);
}
END_TEST

START_TEST(directory_round_trip_and_bad_ones)
{
    int64_t buf[8] = { 2, 5, 8, 7, 8, 0x1111, 0x2222, 0 };
    int n;
    const int64_t *e;
    const char *payload;
    size_t len = MPIR_Rm_directory_bytes(2) + 16;
    ck_assert_int_eq(MPIR_Rm_read_directory((char *) buf, len, &n, &e, &payload),
                     MPIR_RM_OK);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(e[0], 5);
    ck_assert_int_eq(e[3], 8);
    ck_assert_ptr_eq(payload, (char *) &buf[5]);
    ck_assert_int_eq(MPIR_Rm_read_directory((char *) buf, len + 8, &n, &e, &payload),
                     MPIR_RM_ERR_FORMAT);
    buf[2] = -1;
    ck_assert_int_eq(MPIR_Rm_read_directory((char *) buf, len, &n, &e, &payload),
                     MPIR_RM_ERR_FORMAT);
    buf[0] = 1000;
    ck_assert_int_eq(MPIR_Rm_read_directory((char *) buf, len, &n, &e, &payload),
                     MPIR_RM_ERR_FORMAT);
}
END_TEST

START_TEST(direct_announcements_carry_no_payload)
{
    MPIR_Rm_wire_frag_t wf[2] = {
        {.dst = 3,.total = 1 << 20,.off = MPIR_RM_DIRECT_OFF,.len = 0},
        {.dst = 4,.total = 8,.off = 0,.len = 8}
    };
    char buf[256];
    char *p = MPIR_Rm_write_header(buf, 2, 1, wf);
    memcpy(p, "abcdefgh", 8);
    size_t len = MPIR_Rm_header_bytes(2) + 8;
    int nfrag, final;
    const MPIR_Rm_wire_frag_t *rf;
    const char *in;
    ck_assert_int_eq(MPIR_Rm_read_header(buf, len, 4, &nfrag, &final, &rf, &in),
                     MPIR_RM_OK);
    ck_assert_int_eq(nfrag, 2);
    ck_assert(rf[0].off == MPIR_RM_DIRECT_OFF && rf[0].total == 1 << 20);
    ck_assert(memcmp(in, "abcdefgh", 8) == 0);
    /* an announcement with a payload is malformed */
    wf[0].len = 8;
    MPIR_Rm_write_header(buf, 2, 1, wf);
    ck_assert_int_eq(MPIR_Rm_read_header(buf, len + 8, 4, &nfrag, &final, &rf, &in),
                     MPIR_RM_ERR_FORMAT);

    /* a directory entry of -(bytes + 1) announces a direct message and has no payload */
    int64_t dir[6] = { 2, 7, -(1 << 20) - 1, 9, 8, 0x4142434445464748 };
    int n;
    const int64_t *e;
    const char *payload;
    ck_assert_int_eq(MPIR_Rm_read_directory((char *) dir, sizeof(dir), &n, &e, &payload),
                     MPIR_RM_OK);
    ck_assert_ptr_eq(payload, (char *) &dir[5]);
    dir[2] = INT64_MIN;
    ck_assert_int_eq(MPIR_Rm_read_directory((char *) dir, sizeof(dir), &n, &e, &payload),
                     MPIR_RM_ERR_FORMAT);
}
END_TEST

START_TEST(plan_cache_hits_until_counts_or_graph_change)
{
    size_t sb[4] = { 1, 2, 3, 4 }, rb[4] = { 4, 3, 2, 1 };
    MPIR_Rm_cache_t c = { 0 };
    uint64_t sig = MPIR_Rm_signature(sb, rb, 4);
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig, 1, sb, rb, 4), 0);
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig, 1, sb, rb, 4), 1);
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig, 1, sb, rb, 4), 1);
    /* counts that change between calls */
    rb[2] = 7;
    uint64_t sig2 = MPIR_Rm_signature(sb, rb, 4);
    ck_assert(sig2 != sig);
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig2, 1, sb, rb, 4), 0);
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig2, 1, sb, rb, 4), 1);
    /* a refreshed node graph */
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig2, 2, sb, rb, 4), 0);
    ck_assert_int_eq(c.hits, 3);
    ck_assert_int_eq(c.misses, 3);
    /* a signature that collides: the counts still decide */
    size_t other[4] = { 9, 9, 9, 9 };
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig2, 2, other, rb, 4), 0);
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig2, 2, other, rb, 4), 1);
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig2, 2, sb, rb, 4), 0);
    /* another communicator size */
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig2, 2, sb, rb, 3), 0);
    ck_assert_int_eq(MPIR_Rm_cache_lookup(&c, sig2, 2, sb, rb, 3), 1);
    /* a send count moved to another peer changes the signature too */
    size_t sb2[4] = { 2, 1, 3, 4 };
    ck_assert(MPIR_Rm_signature(sb2, rb, 4) != sig2);
    MPIR_Rm_cache_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rm_plan");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, ring_order_starts_after_me);
    tcase_add_test(tc, near_first_groups_node_pairs_by_distance_then_weight);
    tcase_add_test(tc, far_first_reverses_distance_only);
    tcase_add_test(tc, alpha_follows_node_degrees);
    tcase_add_test(tc, aggregates_grow_by_alpha_up_to_the_cap);
    tcase_add_test(tc, tiny_first_aggregate_still_grows);
    tcase_add_test(tc, empty_stream_has_one_empty_aggregate);
    tcase_add_test(tc, small_messages_share_one_aggregate);
    tcase_add_test(tc, pack_unpack_round_trip);
    tcase_add_test(tc, directory_round_trip_and_bad_ones);
    tcase_add_test(tc, direct_announcements_carry_no_payload);
    tcase_add_test(tc, plan_cache_hits_until_counts_or_graph_change);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
