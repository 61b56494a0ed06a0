// Command capi is the C ABI of krabka-coord, built with -buildmode=c-shared
// into libkrabka_coord.so. It is a thin translation layer: opaque handles,
// marshalling between C types and core, panic recovery and the one table that
// maps core errors onto krabka_err_t codes. There is no business logic here;
// every rule lives in core.
//
// The contract is the hand-written include/krabka_coord.h. The preamble below
// includes it, so cgo's own prototypes for the //export functions are checked
// against it while the library compiles (a conflicting declaration fails the
// build). const-qualified parameters use the kc_c* typedefs so that cgo's
// prototypes carry the same qualifiers as the header.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include "kc_types.h"
*/
import "C"

func main() {}
