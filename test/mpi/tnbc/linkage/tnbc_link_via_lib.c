/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A program that reaches MPI only through a shared library of its own (as codes built on
 * PETSc or HDF5 do): main() names no MPI symbol. Linked with plain cc, libmpi comes after libc
 * in the load order; linked with mpicc, before. */

int tnbc_link_run(int *argc, char ***argv);

int main(int argc, char *argv[])
{
    return tnbc_link_run(&argc, &argv);
}
