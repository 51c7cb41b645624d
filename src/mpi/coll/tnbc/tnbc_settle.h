/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Settle (tnbc_settle.c): MPI calls wait here for pending pieces of their buffers; fork()
 * waits for everything. */

#ifndef TNBC_SETTLE_H_INCLUDED
#define TNBC_SETTLE_H_INCLUDED

/* fork() waits for every collective in flight (registered once, for the process's life). */
void MPII_Tnbc_settle_at_fork(void);

#endif /* TNBC_SETTLE_H_INCLUDED */
