/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of the per-site choice between returning early and waiting in the call. */

#include "tnbc_gain.h"

#include <check.h>
#include <stdlib.h>

#define MS 1000000ull

/* Run calls with fixed costs; returns how many returned early. */
static int run(MPIR_Tnbc_gain_t * g, int calls, uint64_t early_ns, uint64_t wait_ns)
{
    int early = 0;
    for (int i = 0; i < calls; i++) {
        if (MPIR_Tnbc_gain_choose(g)) {
            MPIR_Tnbc_gain_note_wait(g, wait_ns);
        } else {
            early++;
            MPIR_Tnbc_gain_note_early(g, early_ns);
        }
    }
    return early;
}

START_TEST(first_call_returns_early)
{
    MPIR_Tnbc_gain_t g = { 0 };
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 0);
    /* no measurement yet (the operation is still in flight): still early */
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 0);
}
END_TEST

START_TEST(hiding_site_waits_only_to_compare)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* early costs 1 ms of a 10 ms transfer: a try of waiting costs 9 ms more, so one in 900
     * calls keeps the tries within 1% */
    int early = run(&g, 10000, 1 * MS, 10 * MS);
    ck_assert_int_eq(g.waiting, 0);
    ck_assert_int_ge(early, 10000 - 13);
    ck_assert_int_le(early, 10000 - 10);
}
END_TEST

START_TEST(reading_at_once_waits)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* the application blocks for the whole transfer, and waiting is 4x cheaper */
    int early = run(&g, 1000, 8 * MS, 2 * MS);
    ck_assert_int_eq(g.waiting, 1);
    ck_assert_int_eq(g.switches, 1);
    /* the first call, then a try every 300 calls (6 ms more each: 1% of 300 calls of 2 ms) */
    ck_assert_int_le(early, 5);
    ck_assert_int_ge(early, 3);
}
END_TEST

START_TEST(partial_overlap_that_pays_stays_early)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* blocked 6 ms of a 10 ms transfer, which waiting would pay in full */
    int early = run(&g, 1000, 6 * MS, 10 * MS);
    ck_assert_int_eq(g.waiting, 0);
    ck_assert_int_eq(g.switches, 0);
    ck_assert_int_ge(early, 980);
}
END_TEST

START_TEST(small_difference_does_not_flip)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* waiting 2% cheaper: inside the 5% margin */
    run(&g, 1000, 100 * MS, 98 * MS);
    ck_assert_int_eq(g.waiting, 0);
    ck_assert_int_eq(g.switches, 0);
}
END_TEST

START_TEST(waiting_site_returns_to_early_when_work_appears)
{
    MPIR_Tnbc_gain_t g = { 0 };
    run(&g, 100, 8 * MS, 2 * MS);
    ck_assert_int_eq(g.waiting, 1);
    /* the application now works while the data moves: the next try finds early cheap */
    run(&g, 600, 1 * MS, 2 * MS);
    ck_assert_int_eq(g.waiting, 0);
    ck_assert_int_eq(g.switches, 2);
}
END_TEST

START_TEST(lost_try_is_planned_again)
{
    MPIR_Tnbc_gain_t g = { 0 };
    run(&g, 10, 8 * MS, 2 * MS);
    ck_assert_int_eq(g.waiting, 1);
    /* tries of early whose operations never report (they failed) */
    int tries = 0;
    for (int i = 0; i < 1000; i++)
        tries += !MPIR_Tnbc_gain_choose(&g);
    ck_assert_int_ge(tries, 2);
    ck_assert_int_eq(g.waiting, 1);
}
END_TEST

START_TEST(close_ways_are_tried_often)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* waiting 10% cheaper (an application that reads at once on a real network) */
    run(&g, 20, 110 * MS, 100 * MS);
    ck_assert_int_eq(g.waiting, 1);
    /* then work appears: within a few calls the site returns early again */
    int early = run(&g, 12, 10 * MS, 100 * MS);
    ck_assert_int_eq(g.waiting, 0);
    ck_assert_int_ge(early, 3);
}
END_TEST

START_TEST(late_notes_are_taken)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* three early calls before the first reports */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 0);
    for (int i = 0; i < 3; i++)
        MPIR_Tnbc_gain_note_early(&g, 8 * MS);
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 1);
    MPIR_Tnbc_gain_note_wait(&g, 2 * MS);
    ck_assert_int_eq(g.waiting, 1);
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tnbc_gain");
    TCase *tc = tcase_create("choose");
    tcase_add_test(tc, first_call_returns_early);
    tcase_add_test(tc, hiding_site_waits_only_to_compare);
    tcase_add_test(tc, reading_at_once_waits);
    tcase_add_test(tc, partial_overlap_that_pays_stays_early);
    tcase_add_test(tc, small_difference_does_not_flip);
    tcase_add_test(tc, waiting_site_returns_to_early_when_work_appears);
    tcase_add_test(tc, lost_try_is_planned_again);
    tcase_add_test(tc, close_ways_are_tried_often);
    tcase_add_test(tc, late_notes_are_taken);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
