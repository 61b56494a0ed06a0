package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// confObj is the object behind a krabka_conf_t. The header says conf_set is
// not safe concurrently with other calls on the same conf; the mutex makes a
// violation harmless anyway.
type confObj struct {
	mu  sync.Mutex
	cfg coord.Config
	log logSetup // krabka_conf_set_log_cb / krabka_conf_set_log_queue (log.go)
}

func confOf(p unsafe.Pointer) (*confObj, error) { return object[*confObj](p, kindConf) }

//export kc_go_conf_new
func kc_go_conf_new() (out *C.krabka_conf_t) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	return (*C.krabka_conf_t)(newHandle(kindConf, &confObj{cfg: coord.DefaultConfig()}))
}

//export kc_go_conf_set
func kc_go_conf_set(conf *C.krabka_conf_t, name, value *C.kc_cchar_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	c, err := confOf(unsafe.Pointer(conf))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if name == nil || value == nil {
		return fail(invalidArg("krabka: conf_set: name or value is NULL"), errstr, errstr_size)
	}
	n, v := C.GoString((*C.char)(unsafe.Pointer(name))), C.GoString((*C.char)(unsafe.Pointer(value)))
	c.mu.Lock()
	err = c.cfg.Set(n, v)
	c.mu.Unlock()
	return finish(err, errstr, errstr_size)
}

//export kc_go_conf_get
func kc_go_conf_get(conf *C.kc_cconf_t, name *C.kc_cchar_t, value *C.char, value_size *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	c, err := confOf(unsafe.Pointer(conf))
	if err != nil {
		return err.(*cError).code
	}
	if name == nil || value_size == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	c.mu.Lock()
	s, err := c.cfg.Get(C.GoString((*C.char)(unsafe.Pointer(name))))
	c.mu.Unlock()
	if err != nil {
		return codeOf(err)
	}
	have := *value_size
	*value_size = C.size_t(len(s) + 1)
	if value == nil {
		return C.KRABKA_OK // a size query
	}
	if uint64(have) < uint64(len(s))+1 {
		return C.KRABKA_ERR_BUFFER_TOO_SMALL
	}
	putString(value, s)
	return C.KRABKA_OK
}

//export kc_go_conf_destroy
func kc_go_conf_destroy(conf *C.krabka_conf_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(conf), kindConf, nil)
}
