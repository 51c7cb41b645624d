/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The way into the family: the policy every entry point reads, the decision on one call,
 * and the way a call is declined (tnbc_entry.c). */

#ifndef TNBC_ENTRY_H_INCLUDED
#define TNBC_ENTRY_H_INCLUDED

#include "tnbc_policy.h"

/* Set by MPIR_Tnbc_init from the CVARs; read by every entry point. */
extern MPIR_Tnbc_policy_t MPII_Tnbc_policy;

/* Decide on one call from the facts every process shares, and count the decision. */
MPIR_Tnbc_decision_t MPII_Tnbc_decide(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr);

/* Decide on a call of a collective without a builder: always declined.
 * *handled is set to 1 only when the call now belongs to T-NBC. */
int MPII_Tnbc_offer(MPIR_Tnbc_call_facts_t * facts, MPIR_Comm * comm_ptr, int *handled);

/* Peers a rank may exchange with: enough to bound a buffer on either kind of communicator. */
#define MPII_Tnbc_peers(comm_ptr_) MPL_MAX((comm_ptr_)->local_size, (comm_ptr_)->remote_size)

#endif /* TNBC_ENTRY_H_INCLUDED */
