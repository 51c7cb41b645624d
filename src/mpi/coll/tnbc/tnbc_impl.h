/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Internal interface of the T-NBC family (transparent non-blocking collectives). */

#ifndef TNBC_IMPL_H_INCLUDED
#define TNBC_IMPL_H_INCLUDED

#include "tnbc_policy.h"

/* Set by MPIR_Tnbc_init from the CVARs; read by every entry point. */
extern MPIR_Tnbc_policy_t MPII_Tnbc_policy;

/* Offer one call: decide, count the decision, and (once builders exist) start it.
 * *handled is set to 1 only when the call now belongs to T-NBC. */
int MPII_Tnbc_offer(const MPIR_Tnbc_call_facts_t * facts, int *handled);

void MPII_Tnbc_stats_count(MPIR_Tnbc_coll_t coll, MPIR_Tnbc_decision_t decision);
int MPII_Tnbc_stats_report(void *unused);

#endif /* TNBC_IMPL_H_INCLUDED */
