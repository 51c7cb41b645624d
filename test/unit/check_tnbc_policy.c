/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of the T-NBC decision logic: collective-list parsing (MPIR_CVAR_TNBC_COLLECTIVES)
 * and the eligibility order of MPIR_Tnbc_policy_decide. */

#include "tnbc_policy.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define BIT(c) MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_##c)

static uint32_t parse_ok(const char *spec)
{
    uint32_t mask = 0xdeadbeef;
    char err[64] = "";
    ck_assert_msg(MPIR_Tnbc_parse_coll_list(spec, &mask, err, sizeof(err)) == 0,
                  "'%s' rejected at '%s'", spec, err);
    return mask;
}

START_TEST(parse_all_and_none)
{
    ck_assert_uint_eq(parse_ok("all"), MPIR_TNBC_COLL_ALL_MASK);
    ck_assert_uint_eq(parse_ok("none"), 0);
    ck_assert_uint_eq(parse_ok(""), 0);
    ck_assert_uint_eq(parse_ok(NULL), 0);
    ck_assert_uint_eq(parse_ok("ALL"), MPIR_TNBC_COLL_ALL_MASK);
}
END_TEST

START_TEST(parse_lists)
{
    ck_assert_uint_eq(parse_ok("alltoall"), BIT(ALLTOALL));
    ck_assert_uint_eq(parse_ok(" Alltoall , alltoallv,bcast "),
                      BIT(ALLTOALL) | BIT(ALLTOALLV) | BIT(BCAST));
    ck_assert_uint_eq(parse_ok("all,-bcast"), MPIR_TNBC_COLL_ALL_MASK & ~BIT(BCAST));
    ck_assert_uint_eq(parse_ok("bcast,none,gather"), BIT(GATHER));
    ck_assert_uint_eq(parse_ok("-bcast,bcast"), BIT(BCAST));
    ck_assert_uint_eq(parse_ok("neighbor_alltoallv,,reduce_scatter_block"),
                      BIT(NEIGHBOR_ALLTOALLV) | BIT(REDUCE_SCATTER_BLOCK));
}
END_TEST

START_TEST(parse_rejects_unknown)
{
    uint32_t mask = 42;
    char err[64] = "";
    ck_assert_int_eq(MPIR_Tnbc_parse_coll_list("alltoall,alltoal", &mask, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "alltoal");
    ck_assert_uint_eq(mask, 42);       /* untouched on error */
    ck_assert_int_eq(MPIR_Tnbc_parse_coll_list("-none", &mask, err, sizeof(err)), -1);
    ck_assert_int_eq(MPIR_Tnbc_parse_coll_list("barrier", &mask, err, sizeof(err)), -1);
    /* An over-long item is truncated in the message, never overflows it. */
    char longspec[300];
    memset(longspec, 'x', sizeof(longspec) - 1);
    longspec[sizeof(longspec) - 1] = '\0';
    char small[8];
    ck_assert_int_eq(MPIR_Tnbc_parse_coll_list(longspec, &mask, small, sizeof(small)), -1);
    ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

START_TEST(names_round_trip)
{
    for (int c = 0; c < MPIR_TNBC_COLL_COUNT; c++) {
        ck_assert_uint_eq(parse_ok(MPIR_Tnbc_coll_name(c)), MPIR_TNBC_COLL_BIT(c));
    }
    ck_assert_str_eq(MPIR_Tnbc_coll_name(MPIR_TNBC_COLL_COUNT), "unknown");
    for (int d = 0; d < MPIR_TNBC_DECISION_COUNT; d++)
        ck_assert_ptr_nonnull(MPIR_Tnbc_decision_name(d));
    ck_assert_str_eq(MPIR_Tnbc_decision_name(MPIR_TNBC_DECISION_COUNT), "unknown");
    for (int o = 0; o < MPIR_TNBC_OUTCOME_COUNT; o++) {
        ck_assert_ptr_nonnull(MPIR_Tnbc_outcome_name(o));
        ck_assert_str_ne(MPIR_Tnbc_outcome_name(o), "unknown");
    }
    ck_assert_str_eq(MPIR_Tnbc_outcome_name(MPIR_TNBC_OUTCOME_COUNT), "unknown");
}
END_TEST

static MPIR_Tnbc_policy_t open_policy(void)
{
    MPIR_Tnbc_policy_t p = {
        .enabled_colls = MPIR_TNBC_COLL_ALL_MASK,
        .supported_colls = MPIR_TNBC_COLL_ALL_MASK,
        .min_bytes = 4096,
        .node_min_bytes = 1 << 20,
    };
    return p;
}

static MPIR_Tnbc_call_facts_t eligible_alltoall(void)
{
    MPIR_Tnbc_call_facts_t f = {
        .coll = MPIR_TNBC_COLL_ALLTOALL,
        .ready = 1,
        .size_is_global = 1,
        .largest_submsg_bytes = 1 << 20,
    };
    return f;
}

START_TEST(decide_accepts_eligible)
{
    MPIR_Tnbc_policy_t p = open_policy();
    MPIR_Tnbc_call_facts_t f = eligible_alltoall();
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);
    f.largest_submsg_bytes = 4096;      /* the threshold itself is eligible */
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);
}
END_TEST

START_TEST(decide_each_reason)
{
    MPIR_Tnbc_policy_t p = open_policy();
    MPIR_Tnbc_call_facts_t f;

    f = eligible_alltoall();
    f.ready = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_NOT_READY);
    f = eligible_alltoall();
    f.is_intercomm = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_INTERCOMM);
    f = eligible_alltoall();
    f.internal = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_INTERNAL);
    f = eligible_alltoall();
    f.spans_worlds = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_WORLDS);
    f = eligible_alltoall();
    p.job_off = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_JOB_OFF);
    p.job_off = 0;
    f = eligible_alltoall();
    f.device_buffer = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_DEVICE_BUFFER);
    f = eligible_alltoall();
    f.op_type_unsupported = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_OP_TYPE);
    f = eligible_alltoall();
    f.largest_submsg_bytes = 4095;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_SMALL);
    /* a size that differs between processes never changes the path (matching protocols) */
    f.size_is_global = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);
}
END_TEST

START_TEST(decide_empty_call_declines_even_at_threshold_zero)
{
    MPIR_Tnbc_policy_t p = open_policy();
    p.min_bytes = 0;
    MPIR_Tnbc_call_facts_t f = eligible_alltoall();
    f.largest_submsg_bytes = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);
    f.largest_submsg_bytes = 0;         /* nothing to protect or overlap */
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_SMALL);
}
END_TEST

START_TEST(decide_node_local_threshold)
{
    MPIR_Tnbc_policy_t p = open_policy();
    MPIR_Tnbc_call_facts_t f = eligible_alltoall();
    f.largest_submsg_bytes = 512 * 1024;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);       /* spans nodes */
    f.node_local = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_NODE);
    f.largest_submsg_bytes = 1 << 20;   /* the threshold itself is eligible */
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);
    /* below both thresholds the general one is the reason */
    f.largest_submsg_bytes = 100;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_SMALL);
    /* sizes that differ between processes never change the path */
    f.largest_submsg_bytes = 512 * 1024;
    f.size_is_global = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);
    f.size_is_global = 1;
    p.node_min_bytes = 0;               /* offers every size within a node */
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);
    /* declining every call needs no size: an Alltoallv within a node is declined too */
    p.node_min_bytes = MPIR_TNBC_NODE_DECLINE_ALL;
    f.size_is_global = 0;
    f.largest_submsg_bytes = (size_t) 1 << 40;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_NODE);
    f.node_local = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_ACCEPT);
}
END_TEST

START_TEST(decide_order)
{
    /* A call with every problem reports the first in the documented order. */
    MPIR_Tnbc_policy_t p = open_policy();
    MPIR_Tnbc_call_facts_t f = {
        .coll = MPIR_TNBC_COLL_BCAST, .ready = 0, .internal = 1, .is_intercomm = 1,
        .spans_worlds = 1, .device_buffer = 1, .op_type_unsupported = 1, .size_is_global = 1,
        .node_local = 1, .largest_submsg_bytes = 0,
    };
    p.enabled_colls &= ~BIT(BCAST);
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_DISABLED);
    p.enabled_colls |= BIT(BCAST);
    p.supported_colls = BIT(ALLTOALL);
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_UNSUPPORTED);
    p.supported_colls |= BIT(BCAST);
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_NOT_READY);
    f.ready = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_INTERNAL);
    f.internal = 0;
    p.job_off = 1;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_JOB_OFF);
    p.job_off = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_INTERCOMM);
    f.is_intercomm = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_WORLDS);
    f.spans_worlds = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_DEVICE_BUFFER);
    f.device_buffer = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_OP_TYPE);
    f.op_type_unsupported = 0;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_SMALL);
    f.largest_submsg_bytes = 4096;
    ck_assert_int_eq(MPIR_Tnbc_policy_decide(&p, &f), MPIR_TNBC_DECLINE_NODE);
}
END_TEST

static Suite *policy_suite(void)
{
    Suite *s = suite_create("tnbc_policy");
    TCase *parse = tcase_create("parse");
    tcase_add_test(parse, parse_all_and_none);
    tcase_add_test(parse, parse_lists);
    tcase_add_test(parse, parse_rejects_unknown);
    tcase_add_test(parse, names_round_trip);
    suite_add_tcase(s, parse);

    TCase *decide = tcase_create("decide");
    tcase_add_test(decide, decide_accepts_eligible);
    tcase_add_test(decide, decide_each_reason);
    tcase_add_test(decide, decide_empty_call_declines_even_at_threshold_zero);
    tcase_add_test(decide, decide_node_local_threshold);
    tcase_add_test(decide, decide_order);
    suite_add_tcase(s, decide);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(policy_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
