/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* libmpi loaded with dlopen at run time, as Python bindings load it: the program is not
 * linked with any MPI library. argv[1] is the library to open (libmpi.so.12 by default). */

#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char *argv[])
{
    const char *lib = argc > 1 ? argv[1] : "libmpi.so.12";
    void *mpi = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    void *coll = mpi ? dlopen(argc > 2 ? argv[2] : "./libtnbc_link.so", RTLD_NOW) : NULL;
    if (!coll) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    int (*run)(int *, char ***) = (int (*)(int *, char ***)) dlsym(coll, "tnbc_link_run");
    if (!run) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 2;
    }
    return run(&argc, &argv);
}
