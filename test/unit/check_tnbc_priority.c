/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of the access orders (tnbc_priority.c): call-site lookup, learning from complete
 * and partial observations, and the profile text round trip. */

#include "tnbc_priority.h"
#include "tnbc_policy.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define NB 6

static MPIR_Tnbc_site_key_t key_of(uint64_t caller)
{
    MPIR_Tnbc_site_key_t k = {.coll = MPIR_TNBC_COLL_ALLTOALL,.comm_size = 4,.nblocks = NB,
        .recv_bytes = 1 << 20,.caller = caller
    };
    return k;
}

/* A new table with one site of the usual shape. */
static MPIR_Tnbc_site_t *new_site(MPIR_Tnbc_sites_t * t, uint64_t caller)
{
    MPIR_Tnbc_site_key_t k = key_of(caller);
    MPIR_Tnbc_sites_init(t);
    return MPIR_Tnbc_sites_get(t, &k, 1);
}

/* touch[] from a list of blocks in the order they were touched */
static void touches(int *touch, const int *blocks, int m)
{
    memset(touch, 0, NB * sizeof(int));
    for (int i = 0; i < m; i++)
        touch[blocks[i]] = i + 1;
}

static void assert_order(const MPIR_Tnbc_site_t * s, const int *want)
{
    int got[NB];
    MPIR_Tnbc_site_order(s, got);
    for (int i = 0; i < NB; i++)
        ck_assert_msg(got[i] == want[i], "position %d: block %d, want %d", i, got[i], want[i]);
}

START_TEST(sites_are_found_by_shape_and_caller)
{
    MPIR_Tnbc_sites_t t;
    MPIR_Tnbc_sites_init(&t);
    MPIR_Tnbc_site_key_t a = key_of(0x1000), b = key_of(0x2000);
    ck_assert_ptr_null(MPIR_Tnbc_sites_get(&t, &a, 0));
    MPIR_Tnbc_site_t *sa = MPIR_Tnbc_sites_get(&t, &a, 1);
    ck_assert_ptr_nonnull(sa);
    ck_assert_int_eq(sa->known, 0);
    ck_assert_ptr_eq(MPIR_Tnbc_sites_get(&t, &a, 1), sa);
    ck_assert_ptr_ne(MPIR_Tnbc_sites_get(&t, &b, 1), sa);
    MPIR_Tnbc_site_key_t c = a;
    c.recv_bytes *= 2;
    ck_assert_ptr_null(MPIR_Tnbc_sites_get(&t, &c, 0));
    /* a wildcard site matches any caller of its shape; an exact one wins */
    MPIR_Tnbc_site_key_t w = c;
    w.caller = MPIR_TNBC_ANY_CALLER;
    MPIR_Tnbc_site_t *sw = MPIR_Tnbc_sites_get(&t, &w, 1);
    ck_assert_ptr_eq(MPIR_Tnbc_sites_get(&t, &c, 1), sw);
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

START_TEST(complete_observation_converges_and_readapts)
{
    MPIR_Tnbc_sites_t t;
    MPIR_Tnbc_site_t *s = new_site(&t, 0x10);
    int touch[NB];
    const int fixed[NB] = { 3, 1, 5, 0, 2, 4 };
    touches(touch, fixed, NB);
    MPIR_Tnbc_site_observe(s, touch, 1);
    assert_order(s, fixed);
    /* the same order again changes nothing */
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 1), 0);
    ck_assert_int_eq(s->changes, 0);
    /* a new order replaces it at once */
    const int reversed[NB] = { 5, 4, 3, 2, 1, 0 };
    touches(touch, reversed, NB);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 1), 1);
    assert_order(s, reversed);
    ck_assert_int_eq(s->changes, 1);
    /* blocks never read keep their relative order, after the ones read */
    const int some[2] = { 0, 1 };
    touches(touch, some, 2);
    MPIR_Tnbc_site_observe(s, touch, 1);
    const int want[NB] = { 0, 1, 5, 4, 3, 2 };
    assert_order(s, want);
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

START_TEST(partial_observation_reorders_only_the_faulted_blocks)
{
    MPIR_Tnbc_sites_t t;
    MPIR_Tnbc_site_t *s = new_site(&t, 0x10);
    int touch[NB];
    /* first call: everything faulted in the application's order 0..5 */
    const int in_order[NB] = { 0, 1, 2, 3, 4, 5 };
    touches(touch, in_order, NB);
    MPIR_Tnbc_site_observe(s, touch, 0);
    assert_order(s, in_order);
    /* blocks 0-2 came in time; 5 and 3 faulted, 5 first: they swap their places */
    const int late[2] = { 5, 3 };
    touches(touch, late, 2);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 0), 1);
    const int want[NB] = { 0, 1, 2, 5, 4, 3 };
    assert_order(s, want);
    /* faults consistent with the order change nothing (the wire is just slower) */
    const int consistent[3] = { 5, 4, 3 };
    touches(touch, consistent, 3);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 0), 0);
    assert_order(s, want);
    ck_assert_int_eq(s->observations, 3);
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

/* A backward sweep: only the block read first ever faults, and faults cannot place it. */
START_TEST(faults_that_tell_nothing_ask_for_a_sample_until_one_confirms)
{
    MPIR_Tnbc_sites_t t;
    MPIR_Tnbc_site_t *s = new_site(&t, 0x20);
    int touch[NB];
    const int last[1] = { 5 }, backward[NB] = { 5, 4, 3, 2, 1, 0 };

    s->calls = 1;
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 8), 0);     /* nothing seen yet */
    touches(touch, last, 1);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 0), 0);
    s->calls = 2;
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 0), 0);     /* gap 0: never */
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 8), 1);
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 8), 0);     /* one per request */
    /* the sample sees every touch */
    touches(touch, backward, NB);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 1), 1);
    assert_order(s, backward);
    /* the order still stalls on its first block: ask again, but not before the gap */
    s->calls = 3;
    touches(touch, last, 1);
    MPIR_Tnbc_site_observe(s, touch, 0);
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 8), 0);
    s->calls = 10;
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 8), 1);
    /* a sample that finds the same order confirms it: no more samples */
    touches(touch, backward, NB);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 1), 0);
    ck_assert_int_eq(s->confirmed, 1);
    s->calls = 30;
    touches(touch, last, 1);
    MPIR_Tnbc_site_observe(s, touch, 0);
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 8), 0);
    /* faults that move blocks undo the confirmation, and a later sample may be asked */
    const int swapped[2] = { 4, 5 };
    touches(touch, swapped, 2);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 0), 1);
    ck_assert_int_eq(s->confirmed, 0);
    touches(touch, swapped, 2);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 0), 0);
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 8), 1);
    /* a profile's order is the user's: never sampled */
    s->from_profile = 1;
    touches(touch, last, 1);
    MPIR_Tnbc_site_observe(s, touch, 0);
    s->calls = 100;
    ck_assert_int_eq(MPIR_Tnbc_site_take_sample(s, 8), 0);
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

/* Early calls that ran an order a sample then corrected were measured with the wrong order:
 * the site measures them again, whether it waits now or not; faults do not. */
START_TEST(sample_that_changes_the_order_remeasures_early_calls)
{
    MPIR_Tnbc_sites_t t;
    MPIR_Tnbc_site_t *s = new_site(&t, 0x30);
    int touch[NB];
    const int backward[NB] = { 5, 4, 3, 2, 1, 0 }, swapped[2] = { 1, 0 };

    s->gain.n_early = 2;
    s->gain.waiting = 1;
    s->gain.calls = 10;
    s->gain.retry_at = 500;
    touches(touch, swapped, 2);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 0), 1);
    ck_assert_int_eq(s->gain.n_early, 2);
    touches(touch, backward, NB);
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 1), 1);
    ck_assert_int_eq(s->gain.n_early, 0);
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(&s->gain), 0);
    /* a sample that confirms the order keeps what was measured */
    s->gain.n_early = 2;
    ck_assert_int_eq(MPIR_Tnbc_site_observe(s, touch, 1), 0);
    ck_assert_int_eq(s->gain.n_early, 2);
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

START_TEST(peers_orders_are_kept_per_peer_newest_first)
{
    MPIR_Tnbc_sites_t t;
    MPIR_Tnbc_site_t *s = new_site(&t, 0x1000);
    int five[NB] = { 5, 4, 3, 2, 1, 0 }, three[NB] = { 1, 0, 3, 2, 5, 4 };

    ck_assert_ptr_null(MPIR_Tnbc_site_peer_order(s, 5));
    ck_assert_int_eq(MPIR_Tnbc_site_set_peer_order(s, 5, five), 1);
    ck_assert_int_eq(MPIR_Tnbc_site_set_peer_order(s, 3, three), 1);
    ck_assert_mem_eq(MPIR_Tnbc_site_peer_order(s, 5), five, sizeof(five));
    ck_assert_mem_eq(MPIR_Tnbc_site_peer_order(s, 3), three, sizeof(three));
    ck_assert_int_eq(MPIR_Tnbc_site_set_peer_order(s, 5, three), 1);       /* a newer report */
    ck_assert_mem_eq(MPIR_Tnbc_site_peer_order(s, 5), three, sizeof(three));
    ck_assert_int_eq(s->npeers, 2);
    ck_assert_int_eq(s->known, 0);      /* our own order is another matter */
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

/* A Bcast's segments read in their own order, whatever the order of its edges. */
START_TEST(natural_order_is_told_apart)
{
    const int natural[4] = { 0, 1, 2, 3 }, backward[4] = { 3, 2, 1, 0 };
    /* a Bcast read front to back: the tail edge (piece 1) is read last */
    const int edges_apart[5] = { 0, 4, 1, 2, 3 };
    ck_assert_int_eq(MPIR_Tnbc_order_is_natural(natural, 0, 4), 1);
    ck_assert_int_eq(MPIR_Tnbc_order_is_natural(backward, 0, 4), 0);
    ck_assert_int_eq(MPIR_Tnbc_order_is_natural(backward, 0, 0), 1);
    ck_assert_int_eq(MPIR_Tnbc_order_is_natural(edges_apart, 0, 5), 0);
    ck_assert_int_eq(MPIR_Tnbc_order_is_natural(edges_apart, 2, 5), 1);
    ck_assert_int_eq(MPIR_Tnbc_order_is_natural(NULL, 0, 5), 1);        /* no order known */
}
END_TEST

/* The readers' reports: kept per site, our own entry and anything out of range unknown; the
 * send order takes the block read earliest first, then ring order, unreported readers last. */
START_TEST(readers_reports_order_the_sends)
{
    MPIR_Tnbc_sites_t t;
    MPIR_Tnbc_site_t *s = new_site(&t, 0x2000);  /* 4 processes, 6 blocks */
    const int32_t in[4] = { 3, 0, 99, -1 };     /* rank 1 is us; 2 reports nonsense */
    int send_pos[4];

    ck_assert_ptr_null(MPIR_Tnbc_site_reader_pos(s));
    ck_assert_int_eq(MPIR_Tnbc_site_set_reader_pos(s, in, 1), 1);
    const int *pos = MPIR_Tnbc_site_reader_pos(s);
    ck_assert_ptr_nonnull(pos);
    ck_assert_int_eq(pos[0], 3);
    ck_assert_int_eq(pos[1], -1);
    ck_assert_int_eq(pos[2], -1);       /* 99: out of range */
    ck_assert_int_eq(pos[3], -1);
    MPIR_Tnbc_send_order_by_readers(pos, 1, 4, send_pos);
    ck_assert_int_eq(send_pos[0], 0);   /* the only reader that reported */
    ck_assert_int_eq(send_pos[2], 1);   /* then ring order from rank 1: 2, 3 */
    ck_assert_int_eq(send_pos[3], 2);

    const int32_t rot[4] = { 2, 5, 0, 1 };      /* rank 0 reads us third, 2 first, 3 second */
    ck_assert_int_eq(MPIR_Tnbc_site_set_reader_pos(s, rot, 1), 3);
    MPIR_Tnbc_send_order_by_readers(MPIR_Tnbc_site_reader_pos(s), 1, 4, send_pos);
    ck_assert_int_eq(send_pos[2], 0);
    ck_assert_int_eq(send_pos[3], 1);
    ck_assert_int_eq(send_pos[0], 2);

    const int32_t none[4] = { -1, -1, -1, -1 };    /* nobody knew this time: kept */
    ck_assert_int_eq(MPIR_Tnbc_site_set_reader_pos(s, none, 1), 3);
    ck_assert_int_eq(MPIR_Tnbc_site_reader_pos(s)[2], 0);
    const int32_t wrong[4] = { 7, -9, 6, 1000 };        /* out of range: forgotten */
    ck_assert_int_eq(MPIR_Tnbc_site_set_reader_pos(s, wrong, 1), 0);
    ck_assert_ptr_null(MPIR_Tnbc_site_reader_pos(s));
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

START_TEST(profile_round_trip)
{
    MPIR_Tnbc_sites_t t, u;
    MPIR_Tnbc_sites_init(&t);
    MPIR_Tnbc_sites_init(&u);
    MPIR_Tnbc_site_key_t k = key_of(0xabc), w = key_of(MPIR_TNBC_ANY_CALLER);
    w.coll = MPIR_TNBC_COLL_ALLTOALLV;
    int touch[NB];
    const int o1[NB] = { 2, 0, 1, 5, 3, 4 }, o2[NB] = { 5, 4, 3, 2, 1, 0 };
    touches(touch, o1, NB);
    MPIR_Tnbc_site_observe(MPIR_Tnbc_sites_get(&t, &k, 1), touch, 1);
    touches(touch, o2, NB);
    MPIR_Tnbc_site_observe(MPIR_Tnbc_sites_get(&t, &w, 1), touch, 1);
    MPIR_Tnbc_site_key_t unknown = key_of(0x999);
    MPIR_Tnbc_sites_get(&t, &unknown, 1);       /* no order yet: not written */

    size_t need = MPIR_Tnbc_profile_format(&t, NULL, 0);
    char *text = malloc(need + 1);
    ck_assert_uint_eq(MPIR_Tnbc_profile_format(&t, text, need + 1), need);
    ck_assert_ptr_nonnull(strstr(text, "site alltoall 4 1048576 6 0xabc\norder 2 0 1 5 3 4\n"));
    ck_assert_ptr_nonnull(strstr(text, "site alltoallv 4 1048576 6 *\norder 5 4 3 2 1 0\n"));

    int bad = -1;
    ck_assert_int_eq(MPIR_Tnbc_profile_parse(text, &u, &bad), MPIR_TNBC_PRIORITY_OK);
    ck_assert_int_eq(u.n, 2);
    MPIR_Tnbc_site_t *s = MPIR_Tnbc_sites_get(&u, &k, 0);
    ck_assert_ptr_nonnull(s);
    ck_assert(s->known && s->from_profile);
    assert_order(s, o1);
    MPIR_Tnbc_site_key_t any = w;
    any.caller = 0x123;
    assert_order(MPIR_Tnbc_sites_get(&u, &any, 0), o2);
    free(text);
    MPIR_Tnbc_sites_free(&t);
    MPIR_Tnbc_sites_free(&u);
}
END_TEST

static int parse_error_line(const char *text)
{
    MPIR_Tnbc_sites_t t;
    int bad = -1;
    MPIR_Tnbc_sites_init(&t);
    int rc = MPIR_Tnbc_profile_parse(text, &t, &bad);
    MPIR_Tnbc_sites_free(&t);
    ck_assert_int_eq(rc, bad ? MPIR_TNBC_PRIORITY_ERR_SYNTAX : MPIR_TNBC_PRIORITY_OK);
    return bad;
}

START_TEST(malformed_profiles_name_their_line)
{
    ck_assert_int_eq(parse_error_line(""), 0);
    ck_assert_int_eq(parse_error_line("# nothing\n\n"), 0);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1\norder 1 0\n"), 0);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1 # c\n  order 1 0 # c\n"), 0);
    ck_assert_int_eq(parse_error_line("site nosuch 2 64 2 0x1\norder 1 0\n"), 1);
    ck_assert_int_eq(parse_error_line("\nsite alltoall 2 64 2 12\norder 1 0\n"), 2);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1\norder 1\n"), 2);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1\norder 1 1\n"), 2);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1\norder 0 1 2\n"), 2);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1\norder 0 x\n"), 2);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1\n"), 2);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1 extra\norder 1 0\n"), 1);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 2 0x1\norder 1 0\n"
                                      "site alltoall 2 64 2 0x1\norder 0 1\n"), 3);
    ck_assert_int_eq(parse_error_line("site alltoall 2 64 0 0x1\norder\n"), 1);
    ck_assert_int_eq(parse_error_line("order 1 0\n"), 1);
}
END_TEST

START_TEST(site_table_is_bounded_and_finds_every_site)
{
    MPIR_Tnbc_sites_t t;
    MPIR_Tnbc_sites_init(&t);
    /* a particle code: every step a new total size */
    for (int i = 0; i < MPIR_TNBC_SITES_MAX; i++) {
        MPIR_Tnbc_site_key_t k = key_of(0x1000);
        k.recv_bytes = 4096 + (uint64_t) i * 8;
        ck_assert_ptr_nonnull(MPIR_Tnbc_sites_get(&t, &k, 1));
    }
    MPIR_Tnbc_site_key_t more = key_of(0x1000);
    more.recv_bytes = 1;
    ck_assert_ptr_null(MPIR_Tnbc_sites_get(&t, &more, 1));
    ck_assert_int_eq(t.n, MPIR_TNBC_SITES_MAX);
    for (int i = 0; i < MPIR_TNBC_SITES_MAX; i += 97) {
        MPIR_Tnbc_site_key_t k = key_of(0x1000);
        k.recv_bytes = 4096 + (uint64_t) i * 8;
        MPIR_Tnbc_site_t *s = MPIR_Tnbc_sites_get(&t, &k, 0);
        ck_assert_ptr_nonnull(s);
        ck_assert(s->key.recv_bytes == k.recv_bytes);
    }
    MPIR_Tnbc_site_key_t huge = key_of(0x2000);
    huge.nblocks = MPIR_TNBC_SITE_BLOCKS_MAX + 1;
    MPIR_Tnbc_sites_free(&t);
    ck_assert_ptr_null(MPIR_Tnbc_sites_get(&t, &huge, 1));
    /* and in all: four of the largest fill the table */
    huge.nblocks = MPIR_TNBC_SITE_BLOCKS_MAX;
    for (int i = 0; i < 5; i++) {
        huge.caller = 0x3000 + i;
        MPIR_Tnbc_site_t *s = MPIR_Tnbc_sites_get(&t, &huge, 1);
        ck_assert(i < 4 ? s != NULL : s == NULL);
    }
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

START_TEST(profiles_beyond_the_bounds_are_refused_at_their_line)
{
    MPIR_Tnbc_sites_t t;
    int bad = -1;
    MPIR_Tnbc_sites_init(&t);
    /* a second site would take 8 GB of orders */
    ck_assert_int_eq(MPIR_Tnbc_profile_parse("site alltoall 2 64 2 0x1\norder 1 0\n"
                                             "site bcast 4 64 2000000000 *\norder 0\n", &t,
                                             &bad), MPIR_TNBC_PRIORITY_ERR_LIMIT);
    ck_assert_int_eq(bad, 3);
    MPIR_Tnbc_sites_free(&t);
    ck_assert_int_eq(MPIR_Tnbc_profile_parse("site bcast 4 64 2000000 *\norder 0\n", &t,
                                             &bad), MPIR_TNBC_PRIORITY_ERR_LIMIT);
    ck_assert_int_eq(bad, 1);
    MPIR_Tnbc_sites_free(&t);
}
END_TEST

static Suite *priority_suite(void)
{
    Suite *s = suite_create("tnbc_priority");
    TCase *tc = tcase_create("orders");
    tcase_add_test(tc, sites_are_found_by_shape_and_caller);
    tcase_add_test(tc, complete_observation_converges_and_readapts);
    tcase_add_test(tc, partial_observation_reorders_only_the_faulted_blocks);
    tcase_add_test(tc, faults_that_tell_nothing_ask_for_a_sample_until_one_confirms);
    tcase_add_test(tc, sample_that_changes_the_order_remeasures_early_calls);
    tcase_add_test(tc, peers_orders_are_kept_per_peer_newest_first);
    tcase_add_test(tc, natural_order_is_told_apart);
    tcase_add_test(tc, readers_reports_order_the_sends);
    tcase_add_test(tc, profile_round_trip);
    tcase_add_test(tc, malformed_profiles_name_their_line);
    tcase_add_test(tc, site_table_is_bounded_and_finds_every_site);
    tcase_add_test(tc, profiles_beyond_the_bounds_are_refused_at_their_line);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(priority_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
