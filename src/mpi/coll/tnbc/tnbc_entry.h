/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The way into the family (tnbc_entry.c): the one pipeline every entry point runs its call
 * through, check (can T-NBC schedule it at all) -> settle -> describe -> decide -> build ->
 * launch -> finish, and the policy the decision reads. A collective supplies a form: how to
 * settle its buffers, the facts of a call, and its schedule. */

#ifndef TNBC_ENTRY_H_INCLUDED
#define TNBC_ENTRY_H_INCLUDED

#include "tnbc_engine.h"

/* A collective's part of the pipeline. call is the form's own description of one call. */
typedef struct {
    /* settle the buffers the call names before anything reads them; called only while T-NBC
     * holds buffers. NULL: every buffer T-NBC holds (also used for any call T-NBC cannot
     * schedule) */
    int (*settle) (const void *call, MPIR_Comm * comm);
    int needs_topology;         /* only a topology communicator has a schedule */
    /* the facts the decision needs (sizes, op), and what build will need; called on an
     * intracommunicator only */
    int (*describe) (void *call, MPII_Tnbc_start_t * args, MPIR_Tnbc_call_facts_t * facts);
    /* once accepted: the schedule, buffers and orders into args */
    int (*build) (void *call, MPII_Tnbc_start_t * args, MPII_Tnbc_launch_t * launch);
    /* frees what describe and build allocated; called whenever describe was, unless hold took
     * it over */
    void (*finish) (void *call);
    /* a form whose build may set recv_packed: a copy of its unpack context (the launch's) that
     * outlives the call, for a nonblocking call's unpack after its caller returned; it takes
     * over what describe and build allocated (NULL: no memory). release frees the copy. */
    void *(*hold) (const void *unpack_ctx);
    void (*release) (void *held);
} MPII_Tnbc_form_t;

/* Run one call of collective coll through the pipeline. *handled is set to 1 only when the
 * call now belongs to T-NBC (done, returned early, or started); 0: the stock algorithm must
 * run. errflag (NULL for the neighbourhood and nonblocking collectives) is MPICH's: raised on
 * entry, our messages carry it to the peers; an error of this call raises it, handled or not.
 * request: NULL for a blocking call; a nonblocking call's request (MPII_Tnbc_start_nonblocking)
 * is stored there. */
int MPII_Tnbc_enter(const MPII_Tnbc_form_t * form, void *call, MPIR_Tnbc_coll_t coll,
                    MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag, MPIR_Request ** request,
                    int *handled);

#endif /* TNBC_ENTRY_H_INCLUDED */
