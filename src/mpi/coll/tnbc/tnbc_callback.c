/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* User callbacks that MPICH runs while it holds its global lock (error handlers) are run
 * without it, as MPICH itself runs user ops, attribute and generalized-request callbacks: a
 * callback that reads a buffer of a collective that returned early then waits for its data in
 * the page-guard handler, which a thread holding the lock cannot do. Only with T-NBC on and
 * only where the thread holds the lock once (the MPI call's own entry), so that stock
 * behaviour is unchanged otherwise. */

#include "mpiimpl.h"
#include "tnbc_engine.h"

int MPIR_Tnbc_callback_begin(void)
{
    if (!MPIR_Tnbc_enabled || MPII_Tnbc_holds_global_lock() != 1)
        return 0;
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    return 1;
}

void MPIR_Tnbc_callback_end(int released)
{
    if (released)
        MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
}
