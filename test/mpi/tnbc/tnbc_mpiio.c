/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI-IO (ROMIO) on a receive block whose collective is still in flight (the last rank enters
 * the Alltoall late): each process writes the block it got from the late rank right after the
 * call returned (a transpose, then a write; independent and collective), and reads file data
 * into such a block (the file's data must win over the late data). ROMIO reads and writes
 * user memory with its own lock and system calls, not MPICH's bindings. */

#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include "tnbc_test_pvar.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MPI_MODE_RDWR

#define COUNT 4096              /* ints per pair: 4 pages */

static int rank, size, late, errs;
static MPI_T_pvar_session pvars;

static int *alltoall_late(int *sbuf, int *rbuf, const char *what)
{
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    tnbc_fill(sbuf, COUNT, rank, size);
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
    errs += tnbc_missed_early(pvars, early, rank, what);
    return &rbuf[late * COUNT];
}

/* value i of rank r's slot in the file written from a plain buffer */
static int file_value(int r, int i)
{
    return -tnbc_value(late, r, i) - 1;
}

static void check(const char *what, const int *v, int want_file)
{
    for (int i = 0; i < COUNT; i++) {
        int want = want_file ? file_value(rank, i) : tnbc_value(late, rank, i);
        if (v[i] != want) {
            errs++;
            printf("rank %d %s: [%d] = %d, want %d\n", rank, what, i, v[i], want);
            return;
        }
    }
}

static void write_block(MPI_File fh, int *sbuf, int *rbuf, int collective, const char *what)
{
    MPI_Offset at = (MPI_Offset) rank * COUNT * sizeof(int);
    int *block = alltoall_late(sbuf, rbuf, what), *v = malloc(COUNT * sizeof(int));
    if (collective)
        MPI_File_write_at_all(fh, at, block, COUNT, MPI_INT, MPI_STATUS_IGNORE);
    else
        MPI_File_write_at(fh, at, block, COUNT, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_read_at(fh, at, v, COUNT, MPI_INT, MPI_STATUS_IGNORE);
    check(what, v, 0);
    free(v);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void read_block(MPI_File fh, int *sbuf, int *rbuf, int collective, const char *what)
{
    MPI_Offset at = (MPI_Offset) rank * COUNT * sizeof(int);
    int *v = malloc(COUNT * sizeof(int));
    for (int i = 0; i < COUNT; i++)
        v[i] = file_value(rank, i);
    MPI_File_write_at(fh, at, v, COUNT, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int *block = alltoall_late(sbuf, rbuf, what);
    if (collective)
        MPI_File_read_at_all(fh, at, block, COUNT, MPI_INT, MPI_STATUS_IGNORE);
    else
        MPI_File_read_at(fh, at, block, COUNT, MPI_INT, MPI_STATUS_IGNORE);
    check(what, block, 1);
    free(v);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    char path[256];
    MPI_File fh;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &(int) { 0 });
    MPI_T_pvar_session_create(&pvars);
    late = size - 1;
    size_t len = (size_t) size * COUNT * sizeof(int);
    int *sbuf = malloc(len), *rbuf = tnbc_page_aligned(len);
    if (rank == 0)
        snprintf(path, sizeof(path), "%s/tnbc_mpiio.%d",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int) getpid());
    MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh)
        != MPI_SUCCESS) {
        printf("rank %d: cannot open %s\n", rank, path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    write_block(fh, sbuf, rbuf, 0, "MPI_File_write_at of a pending block");
    write_block(fh, sbuf, rbuf, 1, "MPI_File_write_at_all of a pending block");
    read_block(fh, sbuf, rbuf, 0, "MPI_File_read_at into a pending block");
    read_block(fh, sbuf, rbuf, 1, "MPI_File_read_at_all into a pending block");

    MPI_File_close(&fh);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    free(sbuf);
    free(rbuf);
    MPI_T_pvar_session_free(&pvars);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return 0;
}
#else
/* built with --disable-romio: no MPI-IO to test */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MTest_Finalize(0);
    return 0;
}
#endif /* MPI_MODE_RDWR */
