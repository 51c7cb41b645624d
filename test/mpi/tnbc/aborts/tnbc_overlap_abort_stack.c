/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* tnbc_overlap_abort with the receive buffer in a live frame (main's): the page MPICH writes
 * under its lock is on the calling thread's stack, above the frame of the MPI routine, so it
 * must not be given up as a frame that has returned (which would drop the rest of the late
 * block silently). The job must abort with mpich-tnbc's message. Run by maint/run-tests. */

#define TNBC_RBUF_IN_FRAME
#include "tnbc_overlap_abort.c"
