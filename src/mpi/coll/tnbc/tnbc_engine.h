/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The engine (tnbc_engine.c): operations in flight, the helper thread, the launch of a built
 * call (MPII_Tnbc_run, called by the pipeline, tnbc_entry.c), and waiting from an application
 * thread. */

#ifndef TNBC_ENGINE_H_INCLUDED
#define TNBC_ENGINE_H_INCLUDED

#include "tnbc_op.h"

/* Unpack a call's temporary receive space into the user's buffer (ctx: the caller's). */
typedef int (*MPII_Tnbc_unpack_t) (const void *ctx, const void *packed);

/* What a form's build hands to the launch: the call site whose access order it used, how to
 * copy a temporary receive space out, and (a nonblocking call, whose caller has returned
 * before its operation is done) how to free ctx once it has. */
typedef struct {
    MPIR_Tnbc_site_t *site;
    MPII_Tnbc_unpack_t unpack;
    const void *unpack_ctx;
    void (*release) (void *ctx);
} MPII_Tnbc_launch_t;

/* Launch a built call and finish it: with recv_packed, unpack (which must be given) copies the
 * temporary receive space out; a trace run's receive buffer is kept guarded for its first
 * touches at the site. */
int MPII_Tnbc_run(MPII_Tnbc_start_t * args, const MPII_Tnbc_launch_t * launch);
/* Launch a built call of a nonblocking collective. *request completes once the caller may
 * touch its buffers: the sub-messages on pages the guards cannot hold back have landed (all
 * of them, for a call that waits), and what MPII_Tnbc_run does after its operation is done,
 * it has done. An application thread completes it, in MPICH's progress (MPI_Wait, MPI_Test). */
int MPII_Tnbc_start_nonblocking(MPII_Tnbc_start_t * args, const MPII_Tnbc_launch_t * launch,
                                MPIR_Request ** request);
/* Drive progress from the calling thread (which holds the global lock) until cond(arg). */
int MPII_Tnbc_progress_until(int (*cond) (const void *), const void *arg);
/* How often the calling thread holds MPICH's global lock (0: not at all). Signal-safe. */
int MPII_Tnbc_holds_global_lock(void);
/* The engine has started (a collective returned early, or waited through it, once). */
int MPII_Tnbc_engine_started(void);
/* 1 while an operation of the communicator is in flight. */
int MPII_Tnbc_engine_uses_comm(const MPIR_Comm * comm);
/* Free the operations the helper finished (an application thread, under the global lock). */
void MPII_Tnbc_engine_reap(void);
int MPII_Tnbc_engine_finalize(void);

#endif /* TNBC_ENGINE_H_INCLUDED */
