/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of the per-site choice between returning early and waiting in the call. */

#include "tnbc_gain.h"

#include <check.h>
#include <stdlib.h>

#define MS 1000000ull

/* Run calls whose messages take 10 ms and whose early calls show the application seen[i % n]
 * of that; returns how many returned early. */
static int run_mix(MPIR_Tnbc_gain_t * g, int calls, const double *seen, int n)
{
    int early = 0;
    for (int i = 0; i < calls; i++) {
        if (!MPIR_Tnbc_gain_choose(g)) {
            MPIR_Tnbc_gain_note_early(g, (uint64_t) (seen[early % n] * 10 * MS), 10 * MS, 0);
            early++;
        }
    }
    return early;
}

static int run(MPIR_Tnbc_gain_t * g, int calls, double seen)
{
    return run_mix(g, calls, &seen, 1);
}

/* One call that returns early and is then noted (times in ms). */
static void early_call(MPIR_Tnbc_gain_t * g, uint64_t visible, uint64_t wait, uint64_t idle)
{
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(g), 0);
    MPIR_Tnbc_gain_note_early(g, visible * MS, wait * MS, idle * MS);
}

START_TEST(first_call_returns_early)
{
    MPIR_Tnbc_gain_t g = { 0 };
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 0);
    /* no measurement yet (the operation is still in flight): still early */
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 0);
}
END_TEST

START_TEST(hiding_site_never_waits)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* the application sees 1 ms of a 10 ms transfer: nothing to try */
    ck_assert_int_eq(run(&g, 10000, 0.1), 10000);
    ck_assert_int_eq(g.switches, 0);
}
END_TEST

START_TEST(reading_at_once_waits)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* the application blocks for the whole transfer and the guards' faults on top: 1.3x */
    int early = run(&g, 1000, 1.3);
    ck_assert_int_eq(g.waiting, 1);
    ck_assert_int_eq(g.switches, 1);
    /* the first call, a second look 4 calls later, then a try every 30 calls (30% more each:
     * 1% of 30 calls) */
    ck_assert_int_ge(early, 30);
    ck_assert_int_le(early, 40);
}
END_TEST

START_TEST(partial_overlap_that_pays_stays_early)
{
    MPIR_Tnbc_gain_t g = { 0 };
    ck_assert_int_eq(run(&g, 1000, 0.6), 1000);
    ck_assert_int_eq(g.switches, 0);
}
END_TEST

START_TEST(small_gain_stays_early)
{
    MPIR_Tnbc_gain_t g = { 0 };
    ck_assert_int_eq(run(&g, 1000, 0.98), 1000);
}
END_TEST

/* A Bcast child whose parent is sometimes late: calls hide all or nothing. Each call is still
 * judged against its own messages, so the site stays early. */
START_TEST(all_or_nothing_calls_that_pay_stay_early)
{
    MPIR_Tnbc_gain_t g = { 0 };
    const double mix[] = { 0.02, 1.1, 0.02, 1.1, 1.1, 0.02 };
    ck_assert_int_eq(run_mix(&g, 600, mix, 6), 600);
}
END_TEST

START_TEST(waiting_site_returns_to_early_when_work_appears)
{
    MPIR_Tnbc_gain_t g = { 0 };
    run(&g, 100, 1.3);
    ck_assert_int_eq(g.waiting, 1);
    /* the application now works while the data moves: the next try finds early cheap */
    int early = run(&g, 100, 0.5);
    ck_assert_int_eq(g.waiting, 0);
    ck_assert_int_eq(g.switches, 2);
    ck_assert_int_ge(early, 100 - 31);
}
END_TEST

START_TEST(just_below_the_margin_keeps_waiting)
{
    MPIR_Tnbc_gain_t g = { 0 };
    run(&g, 20, 1.3);
    run(&g, 100, 0.97);
    ck_assert_int_eq(g.waiting, 1);
}
END_TEST

START_TEST(lost_try_is_planned_again)
{
    MPIR_Tnbc_gain_t g = { 0 };
    run(&g, 10, 1.3);
    ck_assert_int_eq(g.waiting, 1);
    /* tries of early whose operations never report (they failed) */
    int tries = 0;
    for (int i = 0; i < 1000; i++)
        tries += !MPIR_Tnbc_gain_choose(&g);
    ck_assert_int_ge(tries, 2);
    ck_assert_int_eq(g.waiting, 1);
}
END_TEST

START_TEST(late_notes_are_taken)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* three early calls before the first reports */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 0);
    for (int i = 0; i < 3; i++)
        MPIR_Tnbc_gain_note_early(&g, 15 * MS, 10 * MS, 0);
    ck_assert_int_eq(g.waiting, 1);
    ck_assert_int_eq(MPIR_Tnbc_gain_choose(&g), 1);
}
END_TEST

START_TEST(first_comparison_is_looked_at_again_soon)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* the first call paid one-time costs (3x), later ones show half the messages' time */
    early_call(&g, 30, 10, 0);
    ck_assert_int_eq(g.waiting, 1);
    int early = run(&g, 11, 0.5);
    ck_assert_int_eq(g.waiting, 0);
    ck_assert_int_ge(early, 7);
}
END_TEST

START_TEST(new_order_is_measured_again)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* early calls in an order the application does not read in: waiting is cheaper */
    run(&g, 20, 1.2);
    ck_assert_int_eq(g.waiting, 1);
    /* a sample taught the order, with which early calls show 10%: the next call tries */
    MPIR_Tnbc_gain_forget_early(&g);
    early_call(&g, 1, 10, 0);
    ck_assert_int_eq(g.waiting, 0);
    ck_assert_int_eq(run(&g, 10, 0.1), 10);
}
END_TEST

START_TEST(new_order_that_does_not_pay_keeps_waiting)
{
    MPIR_Tnbc_gain_t g = { 0 };
    run(&g, 20, 1.3);
    MPIR_Tnbc_gain_forget_early(&g);
    int early = run(&g, 100, 1.3);
    ck_assert_int_eq(g.waiting, 1);
    /* the forced try, the second look after it, then one in 30 calls */
    ck_assert_int_le(early, 6);
}
END_TEST

START_TEST(one_late_call_does_not_park_the_site)
{
    MPIR_Tnbc_gain_t g = { 0 };
    run(&g, 20, 0.5);
    /* this process came 50x the messages' time late: its data was all there */
    early_call(&g, 500, 10, 0);
    ck_assert_int_eq(g.waiting, 1);
    /* counted as twice the messages' time, it costs a gap of 25 calls, not thousands */
    run(&g, 30, 0.5);
    ck_assert_int_eq(g.waiting, 0);
}
END_TEST

START_TEST(no_time_to_wait_for_counts_as_not_paying)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* the messages were there before the guards were set: nothing could hide */
    early_call(&g, 1, 0, 0);
    ck_assert_int_eq(g.waiting, 1);
}
END_TEST

START_TEST(time_before_any_data_is_left_out)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* a parent 100 ms late, then 10 ms of data of which the application saw 3 ms: counted in,
     * 103 / 110 would read as hiding almost nothing */
    early_call(&g, 103, 110, 100);
    ck_assert(g.seen > 0.29 && g.seen < 0.31);
    /* computing through part of the idle time counts in early's favour, never below nothing */
    early_call(&g, 50, 110, 100);
    ck_assert(g.seen > 0.14 && g.seen < 0.16);
    /* and a call that paid for its faults on top still reads as not paying */
    MPIR_Tnbc_gain_t h = { 0 };
    early_call(&h, 113, 110, 100);
    ck_assert_int_eq(h.waiting, 1);
}
END_TEST

START_TEST(all_idle_is_not_judged)
{
    MPIR_Tnbc_gain_t g = { 0 };
    /* the data came all at once after the wait: early neither hid nor cost anything */
    early_call(&g, 40, 40, 40);
    ck_assert_int_eq(g.n_early, 0);
    ck_assert_int_eq(g.waiting, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tnbc_gain");
    TCase *tc = tcase_create("choose");
    tcase_add_test(tc, first_call_returns_early);
    tcase_add_test(tc, hiding_site_never_waits);
    tcase_add_test(tc, reading_at_once_waits);
    tcase_add_test(tc, partial_overlap_that_pays_stays_early);
    tcase_add_test(tc, small_gain_stays_early);
    tcase_add_test(tc, all_or_nothing_calls_that_pay_stay_early);
    tcase_add_test(tc, waiting_site_returns_to_early_when_work_appears);
    tcase_add_test(tc, just_below_the_margin_keeps_waiting);
    tcase_add_test(tc, lost_try_is_planned_again);
    tcase_add_test(tc, late_notes_are_taken);
    tcase_add_test(tc, first_comparison_is_looked_at_again_soon);
    tcase_add_test(tc, new_order_is_measured_again);
    tcase_add_test(tc, new_order_that_does_not_pay_keeps_waiting);
    tcase_add_test(tc, one_late_call_does_not_park_the_site);
    tcase_add_test(tc, no_time_to_wait_for_counts_as_not_paying);
    tcase_add_test(tc, time_before_any_data_is_left_out);
    tcase_add_test(tc, all_idle_is_not_judged);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
