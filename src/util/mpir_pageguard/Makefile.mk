##
## Copyright (C) by the mpich-tnbc authors
##     See COPYRIGHT in top-level directory
##

# Page guards (see mpir_pageguard.h and README.tnbc). pageguard_libc_hooks.c and
# pageguard_libc_funcs.h are generated from pageguard_libc.def by maint/gen_pageguard_hooks.py,
# which maint/merge-tree runs.

AM_CPPFLAGS += -I$(top_srcdir)/src/util/mpir_pageguard

mpi_core_sources += \
    src/util/mpir_pageguard/pageguard_state.c \
    src/util/mpir_pageguard/pageguard_register.c \
    src/util/mpir_pageguard/pageguard_fault.c \
    src/util/mpir_pageguard/pageguard_init.c \
    src/util/mpir_pageguard/pageguard_region.c \
    src/util/mpir_pageguard/pageguard_prot.c \
    src/util/mpir_pageguard/pageguard_exposed.c \
    src/util/mpir_pageguard/pageguard_staging.c \
    src/util/mpir_pageguard/pageguard_move.c \
    src/util/mpir_pageguard/pageguard_libc.c \
    src/util/mpir_pageguard/pageguard_patch.c \
    src/util/mpir_pageguard/pageguard_hooks.c \
    src/util/mpir_pageguard/pageguard_alloc.c \
    src/util/mpir_pageguard/pageguard_signal.c \
    src/util/mpir_pageguard/pageguard_defer.c \
    src/util/mpir_pageguard/pageguard_syscalls.c \
    src/util/mpir_pageguard/pageguard_libc_hooks.c \
    src/util/mpir_pageguard/pageguard_wait.c

noinst_HEADERS += \
    src/util/mpir_pageguard/mpir_pageguard.h \
    src/util/mpir_pageguard/pageguard_internal.h \
    src/util/mpir_pageguard/pageguard_libc.h \
    src/util/mpir_pageguard/pageguard_libc_funcs.h \
    src/util/mpir_pageguard/pageguard_patch.h
