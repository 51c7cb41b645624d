/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Small helpers every layer of the family uses: the clock, whether a datatype is one plain
 * byte range, and the errflag of an error. */

#ifndef TNBC_UTIL_H_INCLUDED
#define TNBC_UTIL_H_INCLUDED

#include <stdint.h>
#include <time.h>

static inline uint64_t MPII_Tnbc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A datatype whose count elements are one plain byte range starting at the buffer. */
static inline int MPII_Tnbc_is_flat(MPI_Datatype type)
{
    int contig;
    MPI_Aint true_lb, true_extent, extent, size;

    MPIR_Datatype_is_contig(type, &contig);
    if (!contig)
        return 0;
    MPIR_Type_get_true_extent_impl(type, &true_lb, &true_extent);
    MPIR_Datatype_get_extent_macro(type, extent);
    MPIR_Datatype_get_size_macro(type, size);
    return true_lb == 0 && extent == size;
}

/* The errflag MPICH's algorithms raise for a failed message with this error code. */
static inline MPIR_Errflag_t MPII_Tnbc_errflag_of(int mpi_errno)
{
    return MPIR_ERR_GET_CLASS(mpi_errno) == MPIX_ERR_PROC_FAILED ? MPIR_ERR_PROC_FAILED :
        MPIR_ERR_OTHER;
}

#endif /* TNBC_UTIL_H_INCLUDED */
