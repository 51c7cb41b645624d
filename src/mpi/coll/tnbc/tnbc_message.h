/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What T-NBC tells the user on stderr (tnbc_message.c): one line per message, written at once
 * so that the lines of several processes do not interleave. Messages name the process's rank
 * (once it has one) and are filtered by MPIR_CVAR_TNBC_VERBOSE and MPICH's
 * MPIR_CVAR_DEBUG_SUMMARY. */

#ifndef TNBC_MESSAGE_H_INCLUDED
#define TNBC_MESSAGE_H_INCLUDED

typedef enum {
    MPII_TNBC_SAY_ERROR,        /* an error the application has no other way to learn */
    MPII_TNBC_SAY_WARNING,      /* a setting or a facility T-NBC cannot use, and what it does
                                 * instead */
    MPII_TNBC_SAY_NOTE          /* what T-NBC set up for the job */
} MPII_Tnbc_say_t;

/* One message of this kind, if the verbosity allows it. fmt has no trailing newline. */
void MPII_Tnbc_say(MPII_Tnbc_say_t kind, const char *fmt, ...)
    ATTRIBUTE((format(printf, 2, 3)));

/* One line of the statistics MPIR_CVAR_TNBC_STATS asked for, whatever the verbosity; the text
 * names the process or the job itself. */
void MPII_Tnbc_report(const char *fmt, ...) ATTRIBUTE((format(printf, 1, 2)));

#endif /* TNBC_MESSAGE_H_INCLUDED */
