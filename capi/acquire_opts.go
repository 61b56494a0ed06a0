package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Per-call acquire options (krabka_acquire_options_t): what Go passes as
// AcquireOption values, held in an opaque object that the *_opts calls copy
// when they are made. The older calls without options take the client's
// metadata of krabka_client_set_metadata instead (clientObj.acquireOptions)
// and are wrappers of the same code.

// acquireOptsObj is the object behind a krabka_acquire_options_t.
type acquireOptsObj struct {
	mu         sync.Mutex
	meta       []byte // nil: none
	memberMeta []byte // nil: none
}

// options returns a copy of what o holds as core's options.
func (o *acquireOptsObj) options() []coord.AcquireOption {
	o.mu.Lock()
	defer o.mu.Unlock()
	var opts []coord.AcquireOption
	if o.meta != nil {
		opts = append(opts, coord.WithMetadata(o.meta))
	}
	if o.memberMeta != nil {
		opts = append(opts, coord.WithMemberMetadata(o.memberMeta))
	}
	return opts
}

// acquireOptionsArg resolves the options of an acquire: those of the
// options object when the call takes one (withOpts), else the client's
// metadata for role and member (the calls without options).
func acquireOptionsArg(c *clientObj, ro core.Role, me core.MemberID, withOpts bool, options *C.kc_cacquire_options_t) ([]coord.AcquireOption, error) {
	if !withOpts {
		return c.acquireOptions(ro, me), nil
	}
	o, err := object[*acquireOptsObj](unsafe.Pointer(options), kindAcquireOptions)
	if err != nil {
		return nil, err
	}
	return o.options(), nil
}

//export kc_go_acquire_options_new
func kc_go_acquire_options_new(out **C.krabka_acquire_options_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	if out == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	*out = (*C.krabka_acquire_options_t)(newHandle(kindAcquireOptions, &acquireOptsObj{}))
	return C.KRABKA_OK
}

//export kc_go_acquire_options_destroy
func kc_go_acquire_options_destroy(options *C.krabka_acquire_options_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(options), kindAcquireOptions, nil)
}

// setOptionMeta is a metadata setter: data checked as core checks it
// (over core.MaxMetadataBytes is INVALID_ARG naming what), then stored.
func setOptionMeta(options *C.krabka_acquire_options_t, data *C.kc_cuint8_t, n C.size_t, what string, member bool) error {
	o, err := object[*acquireOptsObj](unsafe.Pointer(options), kindAcquireOptions)
	if err != nil {
		return err
	}
	b, err := optBytes(data, n, what)
	if err != nil {
		return err
	}
	opt := coord.WithMetadata(b)
	if member {
		opt = coord.WithMemberMetadata(b)
	}
	if err := coord.CheckAcquireOptions(opt); err != nil {
		return &cError{C.KRABKA_ERR_INVALID_ARG, "krabka: " + what + ": " + err.Error()}
	}
	if len(b) == 0 {
		b = nil // empty is none, as for Go's options
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if member {
		o.memberMeta = b
	} else {
		o.meta = b
	}
	return nil
}

//export kc_go_acquire_options_set_metadata
func kc_go_acquire_options_set_metadata(options *C.krabka_acquire_options_t, data *C.kc_cuint8_t, n C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(setOptionMeta(options, data, n, "krabka_acquire_options_set_metadata: data", false), errstr, errstr_size)
}

//export kc_go_acquire_options_set_member_metadata
func kc_go_acquire_options_set_member_metadata(options *C.krabka_acquire_options_t, data *C.kc_cuint8_t, n C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(setOptionMeta(options, data, n, "krabka_acquire_options_set_member_metadata: data", true), errstr, errstr_size)
}

//export kc_go_client_acquire_opts
func kc_go_client_acquire_opts(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, options *C.kc_cacquire_options_t, timeout_ms C.int64_t, out **C.krabka_leadership_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(clientAcquire(client, r, role_len, m, member_len, true, options, timeout_ms, out), errstr, errstr_size)
}

//export kc_go_client_try_acquire_opts
func kc_go_client_try_acquire_opts(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, options *C.kc_cacquire_options_t, timeout_ms C.int64_t, out **C.krabka_leadership_t, retry_at_ms *C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(clientTryAcquire(client, r, role_len, m, member_len, true, options, timeout_ms, out, retry_at_ms), errstr, errstr_size)
}

//export kc_go_client_acquire_opts_async
func kc_go_client_acquire_opts_async(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, options *C.kc_cacquire_options_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(clientAcquireAsync(client, r, role_len, m, member_len, true, options, timeout_ms, queue, tag), errstr, errstr_size)
}

//export kc_go_client_try_acquire_opts_async
func kc_go_client_try_acquire_opts_async(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, options *C.kc_cacquire_options_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(clientTryAcquireAsync(client, r, role_len, m, member_len, true, options, timeout_ms, queue, tag), errstr, errstr_size)
}

//export kc_go_elector_new_opts
func kc_go_elector_new_opts(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, options *C.kc_cacquire_options_t, flags C.int, queue *C.krabka_queue_t, tag C.uint64_t, out **C.krabka_elector_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return electorNew(client, r, role_len, m, member_len, true, options, flags, queue, tag, out, errstr, errstr_size)
}
