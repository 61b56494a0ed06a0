/* Compiled by build.sh, never linked: the prototypes cgo generated for the
 * //export functions (kc_go_*, behind the fork guard of capi/kc_guard.c) and
 * the hand-written contract in one translation unit: the two headers must
 * stay compatible. The per-function type check is in capi/kc_guard.c, which
 * redeclares every kc_go_* export with the header's own types next to
 * _cgo_export.h, so a drifted Go export fails the library's build. */
#include "krabka_coord.h"
#include "krabka_coord_cgo.h"
#include "krabka_coord.h" /* include guard: harmless twice */

typedef int kc_header_drift_check_nonempty;
