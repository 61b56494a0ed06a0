package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"slices"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Group members (krabka_group_t): coord.Group (a role group's member, or
// a semaphore's with krabka_semaphore_join) on the library's goroutines. A
// pump goroutine takes every GroupEvent (Next) and posts it to the host's
// queue as a KRABKA_EVENT_GROUP; once the group stopped (leave, destroy,
// the client destroyed) and every event was posted, the pump posts one
// KRABKA_EVENT_GROUP_STOPPED, the last event of the member. The leadership
// of a SHARD_ASSIGNED event is borrowed, as an elector's STARTED
// (elector.go): the group renews, hands over and resigns it; a handle
// taken from the event only reaches it, and its calls fail once the shard
// was revoked.

// The header's KRABKA_GROUP_MAX_SHARDS is Go's MaxGroupShards: an array of
// negative length does not compile, so the build fails when they differ.
var (
	_ [C.KRABKA_GROUP_MAX_SHARDS - coord.MaxGroupShards]struct{}
	_ [coord.MaxGroupShards - C.KRABKA_GROUP_MAX_SHARDS]struct{}
)

// groupData is what a GROUP event carries.
type groupData struct {
	kind  C.krabka_group_event_kind_t
	shard uint32
	token C.krabka_token_t
}

type groupObj struct {
	g              *coord.Group
	done           chan struct{} // closed when the pump returned
	requestTimeout time.Duration // KRABKA_TIMEOUT_DEFAULT of leave

	mu   sync.Mutex
	left bool // krabka_group_leave ran (destroy then only waits)
}

func groupOf(p unsafe.Pointer) (*groupObj, error) { return object[*groupObj](p, kindGroup) }

// groupName is the group argument: valid UTF-8 of 1 to core.MaxNameBytes
// bytes (coord checks the rest, and that its shards' roles fit).
func groupName(fn string, p *C.kc_cchar_t, n C.size_t) (string, error) {
	b, err := cBytes((*C.char)(unsafe.Pointer(p)), n, "group")
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", invalidArg("krabka: %s: the group name is not valid UTF-8", fn)
	}
	return string(b), nil
}

// groupEvent turns a GroupEvent into a queue event.
func groupEvent(c *clientObj, tag uint64, ge coord.GroupEvent) *eventObj {
	ev := &eventObj{typ: C.KRABKA_EVENT_GROUP, tag: tag, group: groupData{
		kind: C.krabka_group_event_kind_t(ge.Kind), shard: uint32(ge.Shard)}}
	if ge.Leadership != nil {
		ev.group.token = cToken(ge.Leadership.Token())
		ev.deadline = ge.Leadership.Lease().Deadline
	}
	switch ge.Kind {
	case coord.ShardAssigned:
		if ge.Leadership != nil {
			lo := newLeadershipObj(c, ge.Leadership)
			lo.borrowed = true
			ev.leadership = lo
		}
	case coord.ShardRevoked:
		ev.fail(ge.Err)
	}
	return ev
}

//export kc_go_group_join
func kc_go_group_join(client *C.krabka_client_t, g *C.kc_cchar_t, group_len C.size_t, shards C.int32_t, m *C.kc_cchar_t, member_len C.size_t, weight C.int32_t, flags C.int, queue *C.krabka_queue_t, tag C.uint64_t, out **C.krabka_group_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(groupJoin("krabka_group_join", coord.NewGroup, client, g, group_len, shards, m, member_len, weight, flags, queue, tag, out), errstr, errstr_size)
}

//export kc_go_semaphore_join
func kc_go_semaphore_join(client *C.krabka_client_t, g *C.kc_cchar_t, name_len C.size_t, slots C.int32_t, m *C.kc_cchar_t, member_len C.size_t, weight C.int32_t, flags C.int, queue *C.krabka_queue_t, tag C.uint64_t, out **C.krabka_group_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(groupJoin("krabka_semaphore_join", coord.NewSemaphore, client, g, name_len, slots, m, member_len, weight, flags, queue, tag, out), errstr, errstr_size)
}

// groupJoin is krabka_group_join and krabka_semaphore_join (newGroup:
// coord.NewGroup or coord.NewSemaphore). The arguments are checked in
// order, each failure naming its argument.
func groupJoin(fn string, newGroup func(*coord.Client, coord.GroupLog, string, int, core.MemberID, ...coord.GroupOption) (*coord.Group, error),
	client *C.krabka_client_t, g *C.kc_cchar_t, groupLen C.size_t, shards C.int32_t, m *C.kc_cchar_t, memberLen C.size_t,
	weight C.int32_t, flags C.int, queue *C.krabka_queue_t, tag C.uint64_t, out **C.krabka_group_t) error {
	if out != nil {
		*out = nil
	}
	c, err := clientOf(unsafe.Pointer(client))
	if err != nil {
		return err
	}
	name, err := groupName(fn, g, groupLen)
	if err != nil {
		return err
	}
	me, err := member(m, memberLen)
	if err != nil {
		return err
	}
	q, err := queueOf(unsafe.Pointer(queue))
	if err != nil {
		return err
	}
	if out == nil {
		return invalidArg("krabka: %s: out is NULL", fn)
	}
	if flags&^C.KRABKA_GROUP_INELIGIBLE != 0 {
		return invalidArg("krabka: %s: unknown flags 0x%x", fn, int(flags&^C.KRABKA_GROUP_INELIGIBLE))
	}
	log, err := c.groupLog()
	if err != nil {
		return err
	}
	opts := []coord.GroupOption{coord.WithWeight(int(weight))}
	if flags&C.KRABKA_GROUP_INELIGIBLE != 0 {
		opts = append(opts, coord.WithEligible(false))
	}
	grp, err := newGroup(c.c, log, name, int(shards), me, opts...)
	if err != nil {
		return err
	}
	o := &groupObj{g: grp, done: make(chan struct{}), requestTimeout: c.requestTimeout}
	go func() {
		defer close(o.done)
		for {
			ge, err := grp.Next(context.Background())
			if err != nil {
				// The group stopped and every event was taken: the last event.
				ev := &eventObj{typ: C.KRABKA_EVENT_GROUP_STOPPED, tag: uint64(tag)}
				if !o.wasLeft() {
					ev.fail(err) // CLOSED: the client was destroyed
				}
				post(q, ev)
				return
			}
			post(q, groupEvent(c, uint64(tag), ge))
		}
	}()
	*out = (*C.krabka_group_t)(newHandle(kindGroup, o))
	return nil
}

// heldShards is the shards g holds now, in order.
func heldShards(g *coord.Group) []int {
	held := g.Held()
	out := make([]int, 0, len(held))
	for k := range held {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (o *groupObj) wasLeft() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.left
}

//export kc_go_group_set_eligible
func kc_go_group_set_eligible(group *C.krabka_group_t, eligible C.int, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := groupOf(unsafe.Pointer(group))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	o.g.SetEligible(eligible != 0)
	return C.KRABKA_OK
}

//export kc_go_group_set_weight
func kc_go_group_set_weight(group *C.krabka_group_t, weight C.int32_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := groupOf(unsafe.Pointer(group))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(o.g.SetWeight(int(weight)), errstr, errstr_size)
}

//export kc_go_group_held
func kc_go_group_held(group *C.krabka_group_t, shards *C.int32_t, capacity C.size_t, count *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := groupOf(unsafe.Pointer(group))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if count == nil {
		return fail(invalidArg("krabka: krabka_group_held: count is NULL"), errstr, errstr_size)
	}
	if shards == nil && capacity != 0 {
		return fail(invalidArg("krabka: krabka_group_held: shards is NULL with cap %d", uint64(capacity)), errstr, errstr_size)
	}
	held := heldShards(o.g)
	*count = C.size_t(len(held))
	n := len(held)
	if uint64(capacity) < uint64(n) {
		n = int(capacity)
	}
	if n > 0 {
		dst := unsafe.Slice(shards, n)
		for i := range dst {
			dst[i] = C.int32_t(held[i])
		}
	}
	return C.KRABKA_OK
}

//export kc_go_group_shard_role
func kc_go_group_shard_role(group *C.krabka_group_t, shard C.int32_t, buf *C.char, buf_size C.size_t, n *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := groupOf(unsafe.Pointer(group))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if shard < 0 || int(shard) >= o.g.Shards() {
		return fail(invalidArg("krabka: krabka_group_shard_role: shard %d out of range [0, %d)", int(shard), o.g.Shards()), errstr, errstr_size)
	}
	return nameOut("krabka_group_shard_role", "role", o.g.ShardRole(int(shard)).String(), buf, buf_size, n, errstr, errstr_size)
}

//export kc_go_group_leave
func kc_go_group_leave(group *C.krabka_group_t, timeout_ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := groupOf(unsafe.Pointer(group))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ctx, cancel, err := callContext(timeout_ms, o.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	defer cancel()
	o.mu.Lock()
	o.left = true
	o.mu.Unlock()
	return finish(o.g.Close(ctx), errstr, errstr_size)
}

//export kc_go_group_destroy
func kc_go_group_destroy(group *C.krabka_group_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(group), kindGroup, func(a any) {
		o := a.(*groupObj)
		if !o.wasLeft() {
			// No handover: what the member holds is resigned now.
			o.mu.Lock()
			o.left = true
			o.mu.Unlock()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = o.g.Close(ctx)
		}
		<-o.done
	})
}

// ---- GROUP accessors ----

//export kc_go_event_group_kind
func kc_go_event_group_kind(ev *C.kc_cevent_t, out *C.krabka_group_event_kind_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return eventScalar(unsafe.Pointer(ev), out, "krabka_event_group_kind", "group event kind",
		func(e *eventObj) C.krabka_group_event_kind_t { return e.group.kind }, errstr, errstr_size, C.KRABKA_EVENT_GROUP)
}

//export kc_go_event_shard
func kc_go_event_shard(ev *C.kc_cevent_t, out *C.int32_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return eventScalar(unsafe.Pointer(ev), out, "krabka_event_shard", "shard",
		func(e *eventObj) C.int32_t { return C.int32_t(e.group.shard) }, errstr, errstr_size, C.KRABKA_EVENT_GROUP)
}
