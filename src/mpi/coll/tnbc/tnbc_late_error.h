/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Errors after the early return (tnbc_late_error.c): kept per communicator, reported by the
 * next call on it. */

#ifndef TNBC_LATE_ERROR_H_INCLUDED
#define TNBC_LATE_ERROR_H_INCLUDED

/* Raise when an operation retires with one; take returns the one kept for comm (MPI_SUCCESS
 * if none); drop reports and forgets those of comm (NULL: all). Under the global lock. */
void MPII_Tnbc_late_error_raise(MPIR_Comm * comm, int coll, int error);
int MPII_Tnbc_late_error_take(MPIR_Comm * comm);
void MPII_Tnbc_late_error_drop(MPIR_Comm * comm);

#endif /* TNBC_LATE_ERROR_H_INCLUDED */
