/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Redirecting other objects' calls to a few named functions without defining those names:
 * the slots the dynamic linker filled for them (their GOT entries) are rewritten in every
 * loaded object that imports them, and written back on removal (pageguard_patch.c). Pure ELF
 * and libc; no MPICH. */

#ifndef PAGEGUARD_PATCH_H_INCLUDED
#define PAGEGUARD_PATCH_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define MPII_PAGEGUARD_PATCH_MAX 256

typedef struct {
    const char *name;
    void *hook;                 /* what the slots hold while installed */
    void *bound;                /* what the dynamic linker bound the name to (the process's
                                 * definition); slots holding it are redirected, and get it back */
    void *callee;               /* the definition's code, for the call slots of an object whose
                                 * bound address is its own stub (a program built without PIE
                                 * that takes the function's address) */
} MPII_Pageguard_patch_t;

typedef struct {
    unsigned objects;           /* objects looked at (not skipped) */
    unsigned slots;             /* slots holding a hook after the call */
    unsigned foreign;           /* slots bound elsewhere (another interposer's), left alone */
    /* per patch: the first object holding such a slot ("" for the program), or NULL */
    const char *foreign_object[MPII_PAGEGUARD_PATCH_MAX];
    unsigned failed;            /* slots that could not be made writable */
} MPII_Pageguard_patch_counts_t;

/* Leave the object at [lo, hi) (its mapped segments) named path ("" for the program) alone:
 * nonzero. */
typedef int (*MPII_Pageguard_patch_skip_fn) (const char *path, uintptr_t lo, uintptr_t hi,
                                             void *arg);

typedef enum {
    MPII_PAGEGUARD_PATCH_INSTALL,       /* bound (or a lazy binding stub) -> hook */
    MPII_PAGEGUARD_PATCH_REMOVE         /* hook -> bound */
} MPII_Pageguard_patch_mode_t;

/* Walk every loaded object that skip does not exclude and rewrite the slots of its imports of
 * the names in patches (at most MPII_PAGEGUARD_PATCH_MAX, sorted by name as strcmp orders
 * them): function-call and address slots. Objects still being loaded by another thread are
 * waited for; objects of other link namespaces (dlmopen) are left alone. Idempotent; other
 * threads may call through the slots meanwhile (each slot is one aligned word), but a lazy
 * binding they resolve at the same moment may write over a hook (walk again). Returns 0, -1
 * when the list of objects could not be made (no memory, too many patches), or -2 where the
 * processor's relocations are not understood (x86-64 and AArch64 are). Not async-signal-safe. */
int MPII_Pageguard_patch_objects(const MPII_Pageguard_patch_t * patches, int count,
                                 MPII_Pageguard_patch_mode_t mode,
                                 MPII_Pageguard_patch_skip_fn skip, void *arg,
                                 MPII_Pageguard_patch_counts_t * counts);

/* Changes whenever an object is loaded or unloaded (dlopen, dlclose). */
unsigned long long MPII_Pageguard_patch_generation(void);

#endif /* PAGEGUARD_PATCH_H_INCLUDED */
