/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Errors after the early return. An operation that fails once its call has returned (a
 * truncation from mismatched counts, a failed peer, a landing that could not be done) cannot
 * change what that call returned. Its error goes through the communicator's error handler:
 *  - at once when the handler aborts (MPI_ERRORS_ARE_FATAL, the default, or MPI_ERRORS_ABORT):
 *    the program never goes on with partial data;
 *  - otherwise it is kept and returned by the next collective on that communicator that
 *    returns early (the handler runs there, in the application's thread), or reported on
 *    stderr if the communicator is freed or MPI finalized first.
 * Raised from the helper thread too, so keeping an error allocates nothing: a few slots, each
 * holding a reference to its communicator. All under MPICH's global lock. */

#include "mpiimpl.h"
#include "tnbc_late_error.h"

#include "mpir_ext.h"    /* MPIR_Err_get_string */
#include "tnbc_message.h"
#include "tnbc_policy.h"

#define MPII_TNBC_LATE_ERRORS 16

static struct {
    MPIR_Comm *comm;
    int error;
    int coll;
} late[MPII_TNBC_LATE_ERRORS];

/* kind: an error that will be returned later is a warning here; one that will not, or that
 * aborts, is the only word the user gets */
static void report(MPII_Tnbc_say_t kind, int coll, int error, const char *fate)
{
    char msg[MPI_MAX_ERROR_STRING];
    MPIR_Err_get_string(error, msg, MPI_MAX_ERROR_STRING, NULL);
    MPII_Tnbc_say(kind, "%s failed after it returned early (%s): %s", MPIR_Tnbc_coll_name(coll),
                  fate, msg);
}

static int handler_aborts(MPIR_Comm * comm)
{
    MPIR_Comm *c = comm->errhandler ? comm : MPIR_Process.comm_world;
    return !c || !c->errhandler || c->errhandler->handle == MPI_ERRORS_ARE_FATAL ||
        c->errhandler->handle == MPI_ERRORS_ABORT;
}

void MPII_Tnbc_late_error_raise(MPIR_Comm * comm, int coll, int error)
{
    if (handler_aborts(comm)) {
        report(MPII_TNBC_SAY_ERROR, coll, error, "the communicator's error handler aborts");
        MPIR_Err_return_comm(comm, MPIR_Tnbc_coll_name(coll), error);   /* does not return */
        return;
    }
    int free_slot = -1;
    for (int i = 0; i < MPII_TNBC_LATE_ERRORS; i++) {
        if (late[i].comm == comm) {
            report(MPII_TNBC_SAY_ERROR, coll, error,
                   "not returned: an earlier one is kept for the communicator");
            return;
        }
        if (!late[i].comm && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0) {
        report(MPII_TNBC_SAY_ERROR, coll, error, "not returned: too many kept");
        return;
    }
    report(MPII_TNBC_SAY_WARNING, coll, error,
           "returned by the next collective on the communicator");
    MPIR_Comm_add_ref(comm);
    late[free_slot].comm = comm;
    late[free_slot].error = error;
    late[free_slot].coll = coll;
}

int MPII_Tnbc_late_error_take(MPIR_Comm * comm)
{
    for (int i = 0; i < MPII_TNBC_LATE_ERRORS; i++) {
        if (late[i].comm == comm) {
            /* stacked on the original, whose class MPI_ERR_OTHER passes through; stderr said
             * which operation it was */
            int error = MPIR_Err_create_code(late[i].error, MPIR_ERR_RECOVERABLE, __func__,
                                             __LINE__, MPI_ERR_OTHER, "**fail", 0);
            late[i].comm = NULL;
            MPIR_Comm_release(comm);
            return error;
        }
    }
    return MPI_SUCCESS;
}

void MPII_Tnbc_late_error_drop(MPIR_Comm * comm)
{
    for (int i = 0; i < MPII_TNBC_LATE_ERRORS; i++) {
        if (late[i].comm && (!comm || late[i].comm == comm)) {
            MPIR_Comm *c = late[i].comm;
            report(MPII_TNBC_SAY_ERROR, late[i].coll, late[i].error,
                   "no later collective returned it");
            late[i].comm = NULL;
            MPIR_Comm_release(c);
        }
    }
}

/* A nonblocking or persistent call T-NBC declined after an error (settling an earlier
 * operation's pieces): MPICH's schedule has started, so the error goes to the next call. */
void MPIR_Tnbc_error_later(MPIR_Comm * comm, int error)
{
    MPII_Tnbc_late_error_raise(comm, -1, error);
}
