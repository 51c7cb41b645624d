/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* MPI-IO (ROMIO) on a receive block whose collective is still in flight (the last rank enters
 * the Alltoall late): each process writes the block it got from the late rank right after the
 * call returned (a transpose, then a write), and reads file data into such a block (the file's
 * data must win over the late data), with every form of MPI-IO routine: independent,
 * collective, nonblocking (glibc's aio threads move the data), split collective and ordered.
 * ROMIO reads and writes user memory with its own lock and system calls, not MPICH's
 * bindings. With argument "held" the job runs with MPIR_CVAR_TNBC_TRACE: every collective
 * completes in its call but its buffer stays guarded until first touched. */

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

static int held;                /* trace run: the calls wait, their buffers stay guarded */

static int *alltoall_late(int *sbuf, int *rbuf, const char *what)
{
    unsigned long long early = tnbc_read_pvar(pvars, "tnbc_returned_early");
    tnbc_fill(sbuf, COUNT, rank, size);
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
    if (!held)
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

static void check_count(const char *what, MPI_Status * status)
{
    int n;
    MPI_Get_count(status, MPI_INT, &n);
    if (n != COUNT) {
        errs++;
        printf("rank %d %s: moved %d ints, want %d\n", rank, what, n, COUNT);
    }
}

enum { BLOCKING, COLLECTIVE, NONBLOCKING, NONBLOCKING_COLL, SPLIT, ORDERED, FORMS };
static const char *const form_name[FORMS] = {
    "MPI_File_%s_at", "MPI_File_%s_at_all", "MPI_File_i%s_at", "MPI_File_i%s_at_all",
    "MPI_File_%s_at_all_begin/end", "MPI_File_%s_ordered"
};

/* Every form moves COUNT ints at rank's slot (ordered: ranks in order from offset 0). */
static void io(MPI_File fh, int *block, int form, int write, const char *what)
{
    MPI_Offset at = (MPI_Offset) rank * COUNT * sizeof(int);
    MPI_Status status;
    MPI_Request req;
    switch (form) {
        case BLOCKING:
            (write ? MPI_File_write_at(fh, at, block, COUNT, MPI_INT, &status) :
             MPI_File_read_at(fh, at, block, COUNT, MPI_INT, &status));
            break;
        case COLLECTIVE:
            (write ? MPI_File_write_at_all(fh, at, block, COUNT, MPI_INT, &status) :
             MPI_File_read_at_all(fh, at, block, COUNT, MPI_INT, &status));
            break;
        case NONBLOCKING:
        case NONBLOCKING_COLL:
            if (form == NONBLOCKING)
                (write ? MPI_File_iwrite_at(fh, at, block, COUNT, MPI_INT, &req) :
                 MPI_File_iread_at(fh, at, block, COUNT, MPI_INT, &req));
            else
                (write ? MPI_File_iwrite_at_all(fh, at, block, COUNT, MPI_INT, &req) :
                 MPI_File_iread_at_all(fh, at, block, COUNT, MPI_INT, &req));
            MPI_Wait(&req, &status);
            break;
        case SPLIT:
            if (write) {
                MPI_File_write_at_all_begin(fh, at, block, COUNT, MPI_INT);
                MPI_File_write_at_all_end(fh, block, &status);
            } else {
                MPI_File_read_at_all_begin(fh, at, block, COUNT, MPI_INT);
                MPI_File_read_at_all_end(fh, block, &status);
            }
            break;
        case ORDERED:
            MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
            (write ? MPI_File_write_ordered(fh, block, COUNT, MPI_INT, &status) :
             MPI_File_read_ordered(fh, block, COUNT, MPI_INT, &status));
            break;
    }
    check_count(what, &status);
}

static void write_block(MPI_File fh, int *sbuf, int *rbuf, int form)
{
    char what[128];
    MPI_Offset at = (MPI_Offset) rank * COUNT * sizeof(int);
    int *v = malloc(COUNT * sizeof(int));
    snprintf(what, sizeof(what), form_name[form], "write");
    strcat(what, " of a pending block");
    int *block = alltoall_late(sbuf, rbuf, what);
    io(fh, block, form, 1, what);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_read_at(fh, at, v, COUNT, MPI_INT, MPI_STATUS_IGNORE);
    check(what, v, 0);
    free(v);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void read_block(MPI_File fh, int *sbuf, int *rbuf, int form)
{
    char what[128];
    MPI_Offset at = (MPI_Offset) rank * COUNT * sizeof(int);
    int *v = malloc(COUNT * sizeof(int));
    snprintf(what, sizeof(what), form_name[form], "read");
    strcat(what, " into a pending block");
    for (int i = 0; i < COUNT; i++)
        v[i] = file_value(rank, i);
    MPI_File_write_at(fh, at, v, COUNT, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int *block = alltoall_late(sbuf, rbuf, what);
    io(fh, block, form, 0, what);
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
    held = argc > 1 && strcmp(argv[1], "held") == 0;
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

    for (int form = 0; form < FORMS; form++) {
        write_block(fh, sbuf, rbuf, form);
        read_block(fh, sbuf, rbuf, form);
    }

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
