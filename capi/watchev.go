package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// watchEventC is a krabka_watch_event_t (and its roster) in C memory.
type watchEventC struct {
	c      *C.krabka_watch_event_t
	roster *C.krabka_roster_entry_t
}

func (w *watchEventC) free() {
	if w == nil {
		return
	}
	if w.roster != nil {
		C.free(unsafe.Pointer(w.roster))
		w.roster = nil
	}
	if w.c != nil {
		C.free(unsafe.Pointer(w.c))
		w.c = nil
	}
}

func dropLine(n int) string {
	return fmt.Sprintf("krabka: %d log lines dropped (the consumer did not keep up)", n)
}
