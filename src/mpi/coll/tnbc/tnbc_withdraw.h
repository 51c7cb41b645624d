/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A call this process accepted and cannot run (tnbc_withdraw.c): fail it on every process,
 * never on this one alone. */

#ifndef TNBC_WITHDRAW_H_INCLUDED
#define TNBC_WITHDRAW_H_INCLUDED

#include "tnbc_policy.h"
#include "tnbc_sched.h"

/* Before any of the call's messages: draw its tags, send the empty messages that tell the
 * peers of error, take theirs. Ends the job (MPII_Tnbc_give_up) when s was not built. Under
 * the global lock. */
int MPII_Tnbc_withdraw(MPIR_Comm * comm, MPIR_Tnbc_coll_t coll, const MPIR_Tnbc_sched_t * s,
                       int error);

/* A call failed where this process cannot know whether its peers took it (it could not tell
 * which messages they expect): end the job with a message that says why. */
void MPII_Tnbc_give_up(MPIR_Comm * comm, MPIR_Tnbc_coll_t coll, int error);

/* MPIR_CVAR_TNBC_FAULT_INJECT asks this stage to fail now (once). */
#define MPII_TNBC_FAULT_AFTER_SCHEDULE 1
#define MPII_TNBC_FAULT_BEFORE_SCHEDULE 2
int MPII_Tnbc_fault_injected(int stage);

#endif /* TNBC_WITHDRAW_H_INCLUDED */
