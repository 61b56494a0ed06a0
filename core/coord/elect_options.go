package coord

import (
	"time"
)

// ElectOption adjusts an Elector.
type ElectOption func(*electOptions) error

type electOptions struct {
	recampaign    bool
	backoffMin    time.Duration
	backoffMax    time.Duration
	stopMargin    time.Duration // -1: Config.StopMargin
	eligible      bool
	acquire       []AcquireOption
	manualRelease bool // RunWithCallbacks: a term is released after OnStopped returned
	rideOutage    int  // ElectRideOutage: 0 krabka.elector.ride.outage, 1 on, -1 off
	// ElectOnLease (elect_lease.go)
	onLease func(LeaseEvent)
}

// ElectRecampaign says whether the elector campaigns again after it lost a
// term (fenced, expired, lost at risk, or the leadership was resigned or
// closed by its owner). Default true; false makes Run return the loss's
// error after the term's STOPPED.
func ElectRecampaign(on bool) ElectOption {
	return func(o *electOptions) error { o.recampaign = on; return nil }
}

// ElectBackoff sets the wait before campaigning again after a loss: min
// after a term that lasted at least one lease, doubling after each shorter
// one up to max. Default 100 ms and krabka.lease.ms. 0 < min <= max.
func ElectBackoff(min, max time.Duration) ElectOption {
	return func(o *electOptions) error {
		if min <= 0 || max < min {
			return WrapError(ErrInvalidArgument, nil, "ElectBackoff(%v, %v): need 0 < min <= max", min, max)
		}
		o.backoffMin, o.backoffMax = min, max
		return nil
	}
}

// ElectStopMargin sets how long before the lease deadline a term whose
// lease is at risk ends (TermStopped with StopLostAtRisk; the term context
// is cancelled and the leadership closed): the term ends at the later of
// the AT_RISK instant and deadline - d. Default Config.StopMargin
// (krabka.lease.stop.margin.ms); at most Config.RiskMargin; 0 keeps the
// term until the leadership itself ends (EXPIRED at the deadline).
func ElectStopMargin(d time.Duration) ElectOption {
	return func(o *electOptions) error {
		if d < 0 {
			return WrapError(ErrInvalidArgument, nil, "ElectStopMargin(%v): must not be negative", d)
		}
		o.stopMargin = d
		return nil
	}
}

// ElectEligible sets whether the member starts as a candidate (default
// true). See Elector.SetEligible.
func ElectEligible(on bool) ElectOption {
	return func(o *electOptions) error { o.eligible = on; return nil }
}

// ElectManualRelease makes the elector wait, before it campaigns after a
// term, for Release of that term instead of for Next to take the term's
// TermStopped. A consumer that hands the events on (the C API posts them to
// a queue) releases a term once its host has processed the STOPPED event,
// so that the guarantee "no STARTED before the previous STOPPED was dealt
// with" holds end to end.
func ElectManualRelease() ElectOption {
	return func(o *electOptions) error { o.manualRelease = true; return nil }
}

// ElectAcquireOptions passes opts to every Acquire of the elector (term and
// member metadata).
func ElectAcquireOptions(opts ...AcquireOption) ElectOption {
	return func(o *electOptions) error {
		if err := CheckAcquireOptions(opts...); err != nil {
			return err
		}
		o.acquire = append(o.acquire, opts...)
		return nil
	}
}

// ElectRideOutage makes a term ride out an outage of the whole cluster
// (default: krabka.elector.ride.outage, false). When renewals fail because
// no broker answers (ErrTransport, ErrTimeout), the term is not stopped at
// the stop margin: a TermSuspended is delivered there instead (deadline -
// ElectStopMargin; at the deadline with a margin of 0) and the term's
// leadership is kept past its deadline, renewing. The host must stop
// dispatching on TermSuspended (its guarded writes fail anyway while no
// broker answers). When the cluster answers again, either a renewal
// succeeds (nobody minted meanwhile): TermRecovered, same token, and the
// host goes on; or the broker refuses the old token (a standby that could
// still reach the cluster minted): TermStopped with StopFenced, and
// nothing the suspended term wrote is in the log. A renewal refused for
// another reason ends the term as without this option (StopExpired). As a
// standby, an elector with this option that could not reach the cluster
// either gives the holder one krabka.lease.ms after the cluster answers
// again before it challenges (the outage does not count against the
// holder's lease), so that the two do not race at the restart.
// docs/ELECTOR.md says when not to use it.
func ElectRideOutage(on bool) ElectOption {
	return func(o *electOptions) error {
		o.rideOutage = -1
		if on {
			o.rideOutage = 1
		}
		return nil
	}
}
