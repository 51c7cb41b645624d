/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

#include "mpiimpl.h"
#include "tnbc_message.h"

#include <stdarg.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_VERBOSE
      category    : TNBC
      type        : int
      default     : 1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        What T-NBC prints on stderr. 0: only errors the application cannot learn otherwise (a
        collective that failed after it returned early, when no later call can report it).
        1 (default): also warnings, a setting or facility T-NBC cannot use and what it does
        instead (T-NBC off for the job, a profile ignored, a trace lost, no page guards).
        2: also what T-NBC set up for the job at MPI_Init, as MPIR_CVAR_DEBUG_SUMMARY does.
        The statistics (MPIR_CVAR_TNBC_STATS) are printed whatever this says.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

static int verbosity(void)
{
    return MPIR_CVAR_DEBUG_SUMMARY ? MPL_MAX(MPIR_CVAR_TNBC_VERBOSE, 2) : MPIR_CVAR_TNBC_VERBOSE;
}

/* prefix, then fmt, then a newline; one write */
static void print_line(const char *prefix, const char *fmt, va_list ap)
{
    char line[2048];
    int n = snprintf(line, sizeof(line), "%s", prefix);
    int len = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    n = len < 0 ? n : MPL_MIN(n + len, (int) sizeof(line) - 2);
    line[n++] = '\n';
    line[n] = '\0';
    MPL_error_printf("%s", line);
}

void MPII_Tnbc_say(MPII_Tnbc_say_t kind, const char *fmt, ...)
{
    static const int level[] = {
        [MPII_TNBC_SAY_ERROR] = 0,[MPII_TNBC_SAY_WARNING] = 1,[MPII_TNBC_SAY_NOTE] = 2
    };
    if (level[kind] > verbosity())
        return;
    char prefix[32] = "[tnbc] ";    /* MPI_Init before the process manager gave us a rank */
    if (MPIR_Process.size > 0)
        snprintf(prefix, sizeof(prefix), "[tnbc %d] ", MPIR_Process.rank);
    va_list ap;
    va_start(ap, fmt);
    print_line(prefix, fmt, ap);
    va_end(ap);
}

void MPII_Tnbc_report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    print_line("", fmt, ap);
    va_end(ap);
}
