/* Compiled by build.sh, never linked: the prototypes cgo generated for the
 * //export functions and the hand-written contract in one translation unit.
 * A function whose parameter or return types drifted from the header makes
 * the declarations conflict, and this file fails to compile. */
#include "krabka_coord.h"
#include "krabka_coord_cgo.h"
#include "krabka_coord.h" /* include guard: harmless twice */

typedef int kc_header_drift_check_nonempty;
