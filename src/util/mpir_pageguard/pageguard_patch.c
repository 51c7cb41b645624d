/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Rewriting the GOT slots of loaded objects (pageguard_patch.h). Where the dynamic linker
 * bound an object's import of a name -- a call slot (JUMP_SLOT), an address slot (GLOB_DAT) or
 * a data word holding the function's address (ABS64 without addend) -- the slot's word is
 * replaced by the hook, and given back on removal. Only imports are touched (an object's calls
 * to a name it defines itself stay its own, as do libc's internal calls), and only slots that
 * hold what the dynamic linker would have put there (the process's definition, or the lazy
 * binding stub of the object itself): a slot another interposer rewrote is left to it. Slots
 * in an object's RELRO range are made writable for the write and read-only again. The same
 * technique as UCX's libucm (reloc mode) and Open MPI's patcher; this is our own code. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_patch.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define MPII_RELOC_CALL R_X86_64_JUMP_SLOT
#define MPII_RELOC_ADDR R_X86_64_GLOB_DAT
#define MPII_RELOC_WORD R_X86_64_64
#elif defined(__aarch64__)
#define MPII_RELOC_CALL R_AARCH64_JUMP_SLOT
#define MPII_RELOC_ADDR R_AARCH64_GLOB_DAT
#define MPII_RELOC_WORD R_AARCH64_ABS64
#endif

typedef struct {
    const MPII_Pageguard_patch_t *patches;
    int count;
    unsigned char first_char[256];      /* a name starts with this byte */
    MPII_Pageguard_patch_mode_t mode;
    MPII_Pageguard_patch_skip_fn skip;
    void *arg;
    MPII_Pageguard_patch_counts_t *counts;
    uintptr_t pagesize;
    const char *path;           /* of the object being visited */
} walk_t;

typedef struct {
    uintptr_t base;             /* load bias */
    uintptr_t lo, hi;           /* mapped span */
    uintptr_t relro_lo, relro_hi;       /* made read-only after relocation */
    const ElfW(Sym) * symtab;
    const char *strtab;
    size_t strsz;
} object_t;

static int by_name(const void *name, const void *patch)
{
    return strcmp(name, ((const MPII_Pageguard_patch_t *) patch)->name);
}

static const MPII_Pageguard_patch_t *patch_named(const walk_t * w, const char *name)
{
    if (!w->first_char[(unsigned char) name[0]])
        return NULL;
    return bsearch(name, w->patches, (size_t) w->count, sizeof(w->patches[0]), by_name);
}

/* The word a slot should hold after this walk, or NULL to leave it. */
static void *wanted(const walk_t * w, const object_t * o, const MPII_Pageguard_patch_t * p,
                    void *now, int call_slot)
{
    int own_stub = call_slot && (uintptr_t) p->bound >= o->lo && (uintptr_t) p->bound < o->hi;
    if (w->mode == MPII_PAGEGUARD_PATCH_REMOVE)
        return now != p->hook ? NULL : own_stub ? p->callee : p->bound;
    if (now == p->hook)
        return NULL;
    /* a call slot not yet bound points back into its own object (the lazy binding stub) */
    if (now == p->bound || now == p->callee ||
        (call_slot && (uintptr_t) now >= o->lo && (uintptr_t) now < o->hi))
        return p->hook;
    w->counts->foreign++;
    if (!w->counts->foreign_object[p - w->patches])
        w->counts->foreign_object[p - w->patches] = w->path;
    return NULL;
}

static void rewrite(const walk_t * w, const object_t * o, void **slot, void *word)
{
    uintptr_t at = (uintptr_t) slot, page = at & ~(w->pagesize - 1);
    int relro = at >= o->relro_lo && at < o->relro_hi;
    if (relro && mprotect((void *) page, w->pagesize, PROT_READ | PROT_WRITE) != 0) {
        w->counts->failed++;
        return;
    }
    atomic_store_explicit((_Atomic(void *) *) slot, word, memory_order_release);
    if (relro)
        mprotect((void *) page, w->pagesize, PROT_READ);
}

/* The slot of a definer (libc, a preloaded allocator) for a name whose canonical address is a
 * program's stub (a program built without PIE that takes the function's address): the
 * definer's internal calls (libc's own frees) would go through that stub, so through the hook;
 * they go straight to the definition instead, as they do in every other program. */
static void own_route(const walk_t * w, const object_t * o, const MPII_Pageguard_patch_t * p,
                      void **slot)
{
    if (p->bound == p->callee)
        return;
    void *now = atomic_load_explicit((_Atomic(void *) *) slot, memory_order_acquire);
    if (w->mode == MPII_PAGEGUARD_PATCH_INSTALL && now == p->bound)
        rewrite(w, o, slot, p->callee);
    else if (w->mode == MPII_PAGEGUARD_PATCH_REMOVE && now == p->callee)
        rewrite(w, o, slot, p->bound);
}

static void visit_relocs(const walk_t * w, const object_t * o, const ElfW(Rela) * rela, size_t n)
{
#ifdef MPII_RELOC_CALL
    for (size_t i = 0; i < n; i++) {
        unsigned type = (unsigned) ELF64_R_TYPE(rela[i].r_info);
        size_t symi = ELF64_R_SYM(rela[i].r_info);
        int call_slot = type == MPII_RELOC_CALL;
        if (!symi || !(call_slot || type == MPII_RELOC_ADDR ||
                       (type == MPII_RELOC_WORD && rela[i].r_addend == 0)))
            continue;
        const ElfW(Sym) * sym = &o->symtab[symi];
        if (sym->st_name >= o->strsz)
            continue;
        const MPII_Pageguard_patch_t *p = patch_named(w, o->strtab + sym->st_name);
        if (!p)
            continue;
        void **slot = (void **) (o->base + rela[i].r_offset);
        if (sym->st_shndx != SHN_UNDEF) {
            own_route(w, o, p, slot);
            continue;
        }
        _Atomic(void *) *word_at = (_Atomic(void *) *) slot;
        void *word = wanted(w, o, p, atomic_load_explicit(word_at, memory_order_acquire),
                            call_slot);
        if (word)
            rewrite(w, o, slot, word);
        if (w->mode == MPII_PAGEGUARD_PATCH_INSTALL ?
            atomic_load_explicit(word_at, memory_order_relaxed) == p->hook : word != NULL)
            w->counts->slots++;
    }
#else
    (void) w;
    (void) o;
    (void) rela;
    (void) n;
#endif
}

/* The dynamic section's addresses are relocated by glibc on most platforms, not on all. */
static uintptr_t dyn_address(const object_t * o, ElfW(Addr) v)
{
    return v < o->base ? o->base + v : v;
}

/* A loaded object as dl_iterate_phdr lists it */
typedef struct {
    const char *path;           /* "" for the program */
    uintptr_t base;
    const ElfW(Phdr) * phdr;
    int phnum;
} listed_t;

static void visit_object(walk_t * w, const listed_t * info)
{
    object_t o = {.base = info->base,.lo = UINTPTR_MAX };
    const ElfW(Dyn) * dyn = NULL;

    for (int i = 0; i < info->phnum; i++) {
        const ElfW(Phdr) * ph = &info->phdr[i];
        uintptr_t lo = o.base + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD) {
            o.lo = lo < o.lo ? lo : o.lo;
            o.hi = hi > o.hi ? hi : o.hi;
        } else if (ph->p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *) lo;
        } else if (ph->p_type == PT_GNU_RELRO) {
            /* the dynamic linker protects the whole pages inside it */
            o.relro_lo = lo & ~(w->pagesize - 1);
            o.relro_hi = hi & ~(w->pagesize - 1);
        }
    }
    if (!dyn || w->skip(info->path, o.lo, o.hi, w->arg))
        return;
    w->path = info->path;

    uintptr_t jmprel = 0, rela = 0;
    size_t jmprel_size = 0, rela_size = 0, rela_ent = sizeof(ElfW(Rela));
    int plt_is_rela = 1;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
            case DT_SYMTAB:
                o.symtab = (const ElfW(Sym) *) dyn_address(&o, dyn->d_un.d_ptr);
                break;
            case DT_STRTAB:
                o.strtab = (const char *) dyn_address(&o, dyn->d_un.d_ptr);
                break;
            case DT_STRSZ:
                o.strsz = dyn->d_un.d_val;
                break;
            case DT_JMPREL:
                jmprel = dyn_address(&o, dyn->d_un.d_ptr);
                break;
            case DT_PLTRELSZ:
                jmprel_size = dyn->d_un.d_val;
                break;
            case DT_PLTREL:
                plt_is_rela = dyn->d_un.d_val == DT_RELA;
                break;
            case DT_RELA:
                rela = dyn_address(&o, dyn->d_un.d_ptr);
                break;
            case DT_RELASZ:
                rela_size = dyn->d_un.d_val;
                break;
            case DT_RELAENT:
                rela_ent = dyn->d_un.d_val;
                break;
        }
    }
    if (!o.symtab || !o.strtab)
        return;
    w->counts->objects++;
    if (!plt_is_rela || rela_ent != sizeof(ElfW(Rela))) {
        w->counts->failed++;    /* not a layout this platform uses */
        return;
    }
    /* some linkers count the call relocations in the general table too */
    if (rela && jmprel >= rela && jmprel < rela + rela_size)
        rela_size = jmprel - rela;
    if (jmprel)
        visit_relocs(w, &o, (const ElfW(Rela) *) jmprel, jmprel_size / sizeof(ElfW(Rela)));
    if (rela)
        visit_relocs(w, &o, (const ElfW(Rela) *) rela, rela_size / sizeof(ElfW(Rela)));
}

typedef struct {
    listed_t *objects;
    int n, cap, incomplete;
} list_t;

static int list_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    list_t *l = arg;
    (void) size;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        listed_t *grown = realloc(l->objects, cap * sizeof(*grown));
        if (!grown) {
            l->incomplete = 1;
            return 1;
        }
        l->objects = grown;
        l->cap = cap;
    }
    l->objects[l->n++] = (listed_t) {
    .path = info->dlpi_name ? info->dlpi_name : "",.base = info->dlpi_addr,
            .phdr = info->dlpi_phdr,.phnum = info->dlpi_phnum};
    return 0;
}

/* Pin object i of the list (the program is the first) once its loading is complete: the list
 * shows an object being loaded by another thread before its relocations are done, and
 * dlopen(RTLD_NOLOAD) waits for that. NULL: gone, not finished, or in a namespace of its own
 * (dlmopen: bound to its own copies of the C library), where nothing is rewritten. */
static void *pin(const list_t * l, int i)
{
    const listed_t *o = &l->objects[i];
    if (i > 0 && !o->path[0])
        return NULL;
    void *handle = dlopen(i == 0 ? NULL : o->path, RTLD_LAZY | RTLD_NOLOAD);
    struct link_map *map = NULL;
    Lmid_t lmid = LM_ID_BASE;
    if (handle && (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map ||
                   map->l_addr != o->base || dlinfo(handle, RTLD_DI_LMID, &lmid) != 0 ||
                   lmid != LM_ID_BASE)) {
        dlclose(handle);
        handle = NULL;
    }
    return handle;
}

int MPII_Pageguard_patch_objects(const MPII_Pageguard_patch_t * patches, int count,
                                 MPII_Pageguard_patch_mode_t mode,
                                 MPII_Pageguard_patch_skip_fn skip, void *arg,
                                 MPII_Pageguard_patch_counts_t * counts)
{
    memset(counts, 0, sizeof(*counts));
#ifndef MPII_RELOC_CALL
    return -2;
#endif
    if (count > MPII_PAGEGUARD_PATCH_MAX)
        return -1;
    walk_t w = {.patches = patches,.count = count,.mode = mode,.skip = skip,.arg = arg,
        .counts = counts,.pagesize = (uintptr_t) sysconf(_SC_PAGESIZE)
    };
    memset(w.first_char, 0, sizeof(w.first_char));
    for (int i = 0; i < count; i++)
        w.first_char[(unsigned char) patches[i].name[0]] = 1;
    list_t l = { 0 };
    dl_iterate_phdr(list_object, &l);
    for (int i = 0; i < l.n; i++) {
        void *handle = pin(&l, i);
        if (!handle)
            continue;
        visit_object(&w, &l.objects[i]);
        dlclose(handle);
    }
    free(l.objects);
    return l.incomplete ? -1 : 0;
}

static int read_generation(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
        *(unsigned long long *) arg = info->dlpi_adds + info->dlpi_subs;
    return 1;   /* the counters are the same in every entry: one is enough */
}

unsigned long long MPII_Pageguard_patch_generation(void)
{
    unsigned long long generation = 0;
    dl_iterate_phdr(read_generation, &generation);
    return generation;
}
