/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* libmpi loaded with dlopen at run time, as Python bindings load it: the program is not
 * linked with any MPI library. The code that makes the collectives and writes a receive
 * buffer to a file is a library opened only after MPI_Init, so the page guards' hooks reach it
 * late (at its first guarded collective). argv[1] is the MPI library to open (libmpi.so.12 by
 * default), argv[2] that library (./libtnbc_link.so). */

#include <dlfcn.h>
#include <stdio.h>

static void *symbol(void *lib, const char *name)
{
    void *fn = lib ? dlsym(lib, name) : NULL;
    if (!fn)
        fprintf(stderr, "%s: %s\n", name, dlerror());
    return fn;
}

int main(int argc, char *argv[])
{
    void *mpi = dlopen(argc > 1 ? argv[1] : "libmpi.so.12", RTLD_NOW | RTLD_GLOBAL);
    int (*init)(int *, char ***) = (int (*)(int *, char ***)) symbol(mpi, "MPI_Init");
    int (*finalize)(void) = (int (*)(void)) symbol(mpi, "MPI_Finalize");
    if (!init || !finalize)
        return 2;
    init(&argc, &argv);
    void *coll = dlopen(argc > 2 ? argv[2] : "./libtnbc_link.so", RTLD_NOW);
    int (*rounds)(void) = (int (*)(void)) symbol(coll, "tnbc_link_rounds");
    if (!rounds)
        return 2;
    int rc = rounds();
    finalize();
    return rc;
}
