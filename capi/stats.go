package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"encoding/json"
	"unsafe"
)

// krabka_client_stats_json: the client's statistics (coord.Stats, whose
// JSON schema docs/STATISTICS.md describes) as malloc'ed JSON text, which
// the host releases with krabka_free.

//export kc_go_client_stats_json
func kc_go_client_stats_json(client *C.krabka_client_t, out **C.char, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	c, code := objectOut[*clientObj](unsafe.Pointer(client), kindClient, out)
	if code != C.KRABKA_OK {
		return code
	}
	b, err := json.Marshal(c.c.Stats())
	if err != nil {
		return C.KRABKA_ERR_INTERNAL
	}
	p := (*C.char)(C.malloc(C.size_t(len(b) + 1)))
	if p == nil {
		return C.KRABKA_ERR_INTERNAL
	}
	putString(p, string(b))
	*out = p
	if n != nil {
		*n = C.size_t(len(b))
	}
	return C.KRABKA_OK
}
