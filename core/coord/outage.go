package coord

import "github.com/krabka/krabka-coord/core"

// Riding out an outage of the cluster (issue 39; docs/ELECTOR.md "Riding
// out an outage"). By default a leadership whose renewals keep failing
// ends Expired at its lease deadline, and an elector ends the term before
// that (ElectStopMargin). An elector built with ElectRideOutage (or
// krabka.elector.ride.outage) keeps the leadership instead while every
// failure is one in which no broker answered (ErrTransport, ErrTimeout):
// nobody can mint while the whole cluster is unreachable, and a standby
// that could still reach it and minted makes the broker refuse the first
// request of the old token (ErrFenced). The leadership keeps renewing past
// its deadline; the first renewal that succeeds resumes the term under
// the same token, the first that the broker refuses ends it Fenced. A
// failure in which a broker answered (an ACL, say) ends it Expired as
// before.

// A standby has its part when its elector rides out outages too: a
// standby that could not reach the cluster either, and is back, would
// otherwise challenge at once a lease whose deadline passed during the
// outage, and race the holder's first renewal (on a restarted cluster the
// standby's mint often wins). The time the standby spent without the
// cluster does not count against the holder's lease: after a streak of
// failed reads ends, the standby does not challenge another member's
// lease for one krabka.lease.ms, as if the holder had renewed at that
// instant. A holder that renews meanwhile keeps the role; one that is
// gone is taken over one lease later than without riding out.

// backAgain starts the grace when a streak of failed reads ended.
func (r *rideThrough) backAgain() {
	if r.ride && r.blind {
		r.grace = core.SatAdd(r.c.clock.NowMs(), r.c.cfg.Lease.DurationMs)
		r.c.log().Info("krabka: acquire: the cluster answers again; the holder's lease counts as live for one lease (riding out an outage)",
			"role", r.role.String(), "until_ms", r.grace)
	}
	r.blind = false
}

// holdOff returns until when a challenge of st is held off (0: it is not):
// during the grace, when another member's lease is there to be renewed.
func (r *rideThrough) holdOff(st core.State, me core.MemberID, now int64) int64 {
	if now >= r.grace || st.Lease == nil || st.Lease.Member == me {
		return 0
	}
	return r.grace
}

// rideState is a leadership's part of that rule; every field is guarded
// by the leadership's mu.
type rideState struct {
	on     bool // the elector asked for it (Leadership.rideOutage)
	outage bool // the last renewal failed without an answer from a broker
}

// failed records the outcome of a renewal: nil when it succeeded.
func (r *rideState) failed(err error) {
	k := ClientErrorKind(err)
	r.outage = err != nil && (k == ErrTransport || k == ErrTimeout)
}

// riding reports whether a failing renewal does not end the leadership at
// its deadline: riding out is on and the last renewal failed without an
// answer from a broker.
func (r *rideState) riding() bool { return r.on && r.outage }

// rideOutage turns riding out on for l (the elector does, before the first
// renewal of a term).
func (l *Leadership) rideOutage() {
	l.mu.Lock()
	l.ride.on = true
	l.mu.Unlock()
	l.nudge()
}

// Riding reports whether the leadership rides out an outage: its renewals
// fail without an answer from any broker and it is kept past its lease
// deadline until the cluster answers (the elector's ElectRideOutage).
// Never blocks.
func (l *Leadership) Riding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ride.on && l.renewFailing && l.ride.outage
}
