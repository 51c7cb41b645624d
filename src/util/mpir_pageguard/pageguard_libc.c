/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The definitions the hooks call (pageguard_libc.h). Each name is bound where the dynamic
 * linker binds it for the process -- libc, or an allocator or tracing tool placed before it
 * (LD_PRELOAD) -- since libmpi defines none of them. One exception: a program built without
 * PIE that takes a function's address owns the canonical address (a stub in its PLT); the
 * code called is then the first definition after the program, as the dynamic linker binds
 * calls. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_libc.h"

#include <dlfcn.h>
#include <elf.h>
#include <gnu/lib-names.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

MPII_Pageguard_libc_t MPII_Pageguard_libc = {
    .name = {
#define MPII_PAGEGUARD_LIBC_NAME(id_, name_, hook_, optional_) #name_,
        MPII_PAGEGUARD_LIBC_FUNCS(MPII_PAGEGUARD_LIBC_NAME)
#undef MPII_PAGEGUARD_LIBC_NAME
    },
    .optional = {
#define MPII_PAGEGUARD_LIBC_OPTIONAL(id_, name_, hook_, optional_) optional_,
        MPII_PAGEGUARD_LIBC_FUNCS(MPII_PAGEGUARD_LIBC_OPTIONAL)
#undef MPII_PAGEGUARD_LIBC_OPTIONAL
    }
};

uintptr_t MPII_Pageguard_self_lo, MPII_Pageguard_self_size;
atomic_ulong MPII_Pageguard_self_calls;

static void *in_libc(const char *name)
{
    /* libc is loaded in every process libmpi is in: this only finds it, and it stays */
    void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    void *fn = libc ? dlsym(libc, name) : NULL;
    if (libc)
        dlclose(libc);
    return fn;
}

/* 1 when addr is an object's stub for a function it imports (its symbol is undefined there) */
static int is_import_stub(void *addr)
{
    Dl_info info;
    const ElfW(Sym) * sym = NULL;
    return dladdr1(addr, &info, (void **) &sym, RTLD_DL_SYMENT) && sym &&
        sym->st_shndx == SHN_UNDEF;
}

/* The loaded objects' paths in search order (the program's is ""), and where the program's
 * first segment is */
typedef struct {
    const char *path[512];
    int n;
    uintptr_t program_lo;
} objects_t;

static int list_path(struct dl_phdr_info *info, size_t size, void *arg)
{
    objects_t *o = arg;
    (void) size;
    if (o->n == 0) {
        o->program_lo = UINTPTR_MAX;
        for (int i = 0; i < info->dlpi_phnum; i++) {
            uintptr_t lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            if (info->dlpi_phdr[i].p_type == PT_LOAD && lo < o->program_lo)
                o->program_lo = lo;
        }
    }
    o->path[o->n++] = info->dlpi_name ? info->dlpi_name : "";
    return o->n == (int) (sizeof(o->path) / sizeof(o->path[0]));
}

/* The first object after the program that defines name itself */
static void *defined_after_program(const objects_t * o, const char *name)
{
    for (int i = 1; i < o->n; i++) {
        if (!o->path[i][0])
            continue;
        void *handle = dlopen(o->path[i], RTLD_LAZY | RTLD_NOLOAD);
        void *fn = handle ? dlsym(handle, name) : NULL;
        Dl_info info;
        int here = fn && dladdr(fn, &info) && info.dli_fname &&
            strcmp(info.dli_fname, o->path[i]) == 0 && !is_import_stub(fn);
        if (handle)
            dlclose(handle);
        if (here)
            return fn;
    }
    return in_libc(name);
}

static int same_object(void *a, void *b)
{
    Dl_info ia, ib;
    return a && b && dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

void MPII_Pageguard_libc_resolve(void)
{
    MPII_Pageguard_libc_t *libc = &MPII_Pageguard_libc;
    objects_t objects = { .n = 0 };
    dl_iterate_phdr(list_path, &objects);
    for (int i = 0; i < MPII_LIBC_COUNT; i++) {
        void *bound = dlsym(RTLD_DEFAULT, libc->name[i]);
        if (!bound)
            bound = in_libc(libc->name[i]);
        libc->callee[i] = bound && is_import_stub(bound) ?
            defined_after_program(&objects, libc->name[i]) : bound;
        libc->bound[i] = libc->callee[i] ? bound : NULL;
        Dl_info info;
        libc->program_defines[i] = libc->callee[i] == bound && bound &&
            dladdr(bound, &info) && (uintptr_t) info.dli_fbase == objects.program_lo;
    }
    libc->pagesize = (size_t) sysconf(_SC_PAGESIZE);
    void *usable = dlsym(RTLD_DEFAULT, "malloc_usable_size");
    if (usable && is_import_stub(usable))
        usable = defined_after_program(&objects, "malloc_usable_size");
    libc->usable_size = same_object(usable, libc->callee[MPII_LIBC_FREE]) ?
        (size_t(*)(void *)) usable : NULL;
}
