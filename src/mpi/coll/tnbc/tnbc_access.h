/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Access orders (tnbc_access.c): trace runs, profiles, call sites. */

#ifndef TNBC_ACCESS_H_INCLUDED
#define TNBC_ACCESS_H_INCLUDED

#include "tnbc_policy.h"
#include "tnbc_sched.h"
#include "tnbc_priority.h"

int MPII_Tnbc_access_init(void);
int MPII_Tnbc_access_finalize(void);
/* The site of the application's current call (NULL: no memory); counts the call. */
MPIR_Tnbc_site_t *MPII_Tnbc_access_site(MPIR_Tnbc_coll_t coll, int comm_size, int nblocks,
                                        uint64_t recv_bytes);
/* The positions of the site's blocks to post by, or NULL (unknown, priorities off, tracing). */
const int *MPII_Tnbc_access_order(const MPIR_Tnbc_site_t * site);
/* The order another process reported for the site (a Bcast child), or NULL (none, priorities
 * off, tracing). */
const int *MPII_Tnbc_access_peer_order(const MPIR_Tnbc_site_t * site, int peer);
int MPII_Tnbc_access_tracing(void);
/* Is this call of the site a sample (recorded like a trace run)? order_used: the order steers
 * this collective. */
int MPII_Tnbc_access_sampling(MPIR_Tnbc_site_t * site, int order_used);
/* Trace run: guard the completed receive buffer of a call and keep it for its first touches
 * (the schedule's blocks: MPIR_Tnbc_sched_recv_sub_blocks); t_enter_ns: when the call began. */
void MPII_Tnbc_access_trace(MPIR_Tnbc_site_t * site, void *recv_user,
                            const MPIR_Tnbc_sched_t * sched, uint64_t t_enter_ns);
/* Record and release the trace regions kept so far (before a new collective guards). */
void MPII_Tnbc_access_harvest(void);
/* The same for those that overlap [addr, addr + len) (an MPI routine is about to use it). */
void MPII_Tnbc_access_release(const void *addr, size_t len);

#endif /* TNBC_ACCESS_H_INCLUDED */
