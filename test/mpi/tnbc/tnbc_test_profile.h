/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Write a T-NBC access-order profile before MPI_Init (tests of test/mpi/tnbc). */

#ifndef TNBC_TEST_PROFILE_H_INCLUDED
#define TNBC_TEST_PROFILE_H_INCLUDED

#include <stdio.h>
#include <stdlib.h>

/* One Alltoall site (any caller) per communicator size 1..max_size with block bytes per pair,
 * read in source order or in reverse; extra (or NULL) is appended as it is. The first line is
 * a comment, so line numbers of extra are 2 * max_size + 2 onwards. */
static void tnbc_write_profile(const char *path, int block, int max_size, int reverse,
                               const char *extra)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "# %s source order for every communicator size up to %d\n",
            reverse ? "reverse" : "forward", max_size);
    for (int n = 1; n <= max_size; n++) {
        fprintf(f, "site alltoall %d %d %d *\norder", n, n * block, n);
        for (int b = 0; b < n; b++)
            fprintf(f, " %d", reverse ? n - 1 - b : b);
        fprintf(f, "\n");
    }
    if (extra)
        fputs(extra, f);
    fclose(f);
}

#endif /* TNBC_TEST_PROFILE_H_INCLUDED */
