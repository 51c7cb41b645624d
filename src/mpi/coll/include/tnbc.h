/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Lifecycle of the T-NBC family. The per-collective entry points MPIR_Tnbc_<Coll> are declared
 * in coll_algos.h, which maint/gen_coll.py generates together with their call sites. */

#ifndef TNBC_H_INCLUDED
#define TNBC_H_INCLUDED

int MPIR_Tnbc_init(void);
int MPIR_Tnbc_finalize(void);

#endif /* TNBC_H_INCLUDED */
