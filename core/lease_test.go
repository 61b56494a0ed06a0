package core

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestDefaultLeaseConfigIsValidAndRenewsWithMargin(t *testing.T) {
	c := DefaultLeaseConfig()
	if c != (LeaseConfig{30000, 10000, 5000}) || c.Validate() != nil || !c.RenewsWithMargin() {
		t.Fatalf("defaults %+v: %v", c, c.Validate())
	}
}

func TestValidateRejectsNonPositiveExtentsAndALongRenewInterval(t *testing.T) {
	bad := []LeaseConfig{{0, 1, 1}, {10, 0, 1}, {10, 1, 0}, {-1, 1, 1}, {10, 10, 1}, {10, 11, 1}}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidLeaseConfig) {
			t.Errorf("%+v: %v, want invalid_lease_config", c, err)
		}
	}
}

func TestRenewsWithMarginIsExactNearTheInt64Limit(t *testing.T) {
	max := int64(math.MaxInt64)
	cases := []struct {
		d, r int64
		want bool
	}{
		{30000, 10000, true}, {29999, 10000, false}, {30001, 10000, true},
		{max, max / 3, true}, {max, max/3 + 1, false}, {max, max - 1, false},
	}
	for _, c := range cases {
		if got := (LeaseConfig{c.d, c.r, 1}).RenewsWithMargin(); got != c.want {
			t.Errorf("duration %d renew %d: %v, want %v", c.d, c.r, got, c.want)
		}
	}
}

func TestLeaseClockArithmeticSaturates(t *testing.T) {
	c := DefaultLeaseConfig()
	l := c.Grant(n1, FencingToken{1, 0}, math.MaxInt64-5)
	if l.Deadline != math.MaxInt64 || l.GrantedAt != math.MaxInt64-5 {
		t.Errorf("grant near the limit: %+v", l)
	}
	if got := c.RenewAt(l); got != math.MaxInt64 {
		t.Errorf("RenewAt %d", got)
	}
	if got := (Lease{Deadline: math.MaxInt64}).RemainingAt(math.MinInt64); got != math.MaxInt64 {
		t.Errorf("RemainingAt %d", got)
	}
	if got := (Lease{Deadline: 0}).RemainingAt(5); got != 0 {
		t.Errorf("RemainingAt after the deadline %d, want 0", got)
	}
	if got := c.ChallengeDelay(math.MaxInt32); got != int64(math.MaxInt32)*5000 {
		t.Errorf("ChallengeDelay(max) %d", got)
	}
	if got := (LeaseConfig{3, 1, math.MaxInt64}).ChallengeDelay(2); got != math.MaxInt64 {
		t.Errorf("ChallengeDelay overflow %d", got)
	}
	if got := c.ChallengeDelay(-1); got != 0 {
		t.Errorf("negative rank delay %d, want 0", got)
	}
	if got := c.ChallengeAt(Lease{Deadline: math.MaxInt64 - 1}, 1); got != math.MaxInt64 {
		t.Errorf("ChallengeAt %d", got)
	}
}

func TestALeaseIsLiveStrictlyBeforeItsDeadlineAndRenewalIsDueFromRenewAt(t *testing.T) {
	c := DefaultLeaseConfig()
	l := c.Grant(n1, FencingToken{1, 0}, 1000)
	if !l.LiveAt(30999) || l.LiveAt(31000) || l.ExpiresAt() != 31000 {
		t.Errorf("liveness around the deadline of %+v", l)
	}
	if c.RenewAt(l) != 11000 || c.RenewDueAt(l, 10999) || !c.RenewDueAt(l, 11000) {
		t.Errorf("renewal of %+v", l)
	}
	short := Lease{GrantedAt: 1000, Deadline: 5000}
	if c.RenewAt(short) != 5000 {
		t.Errorf("renew_at is capped by the deadline: %d", c.RenewAt(short))
	}
}

func TestEvaluateFollowsTheSuccessionTable(t *testing.T) {
	c := DefaultLeaseConfig()
	noLease := Fold(ctl, []DecodedRecord{reg(10, n1, 100), reg(20, n2, 200)})
	withLease := Fold(ctl, []DecodedRecord{reg(10, n1, 100), reg(20, n2, 200), leaseRec(30, n1, 30000)})
	cases := []struct {
		name  string
		s     State
		me    MemberID
		now   int64
		want  DecisionKind
		until int64
	}{
		{"not in the roster", withLease, n3, 0, NotRegistered, 0},
		{"my live lease", withLease, n1, 29999, Hold, 0},
		{"my expired lease", withLease, n1, 30000, Challenge, 0},
		{"standby before the deadline", withLease, n2, 29999, Wait, 30000},
		{"standby at the deadline", withLease, n2, 30000, Challenge, 0},
		{"no lease, rank 0 from registration", noLease, n1, 100, Challenge, 0},
		{"no lease, rank 0 just before", noLease, n1, 99, Wait, 100},
		{"no lease, rank 1 staggered from its registration", noLease, n2, 5199, Wait, 5200},
		{"anchor does not move with now", noLease, n2, -1000000, Wait, 5200},
	}
	for _, tc := range cases {
		d := Evaluate(tc.s, tc.me, tc.now, c)
		if d.Kind != tc.want || d.WaitUntil != tc.until {
			t.Errorf("%s: %v until %d, want %v until %d", tc.name, d.Kind, d.WaitUntil, tc.want, tc.until)
		}
	}
	if s := Wait.String(); s != "WAIT" || NotRegistered.String() != "NOT_REGISTERED" || Hold.String() != "HOLD" || Challenge.String() != "CHALLENGE" {
		t.Errorf("decision names: %s", s)
	}
}

func TestManualClockSleepReturnsOnlyOnceAdvancedPastItsEnd(t *testing.T) {
	clk := NewManualClock(1000)
	done := make(chan error, 1)
	go func() { done <- clk.Sleep(context.Background(), 5*time.Second) }()
	waitForSleepers(t, clk, 1)
	clk.Advance(4999 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Sleep returned %v at %d, before 6000", err, clk.NowMs())
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil || clk.NowMs() != 6000 {
		t.Fatalf("Sleep returned %v at %d", err, clk.NowMs())
	}
}

func TestManualClockSleepStopsWhenTheContextIsDone(t *testing.T) {
	clk := NewManualClock(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clk.Sleep(ctx, time.Hour) }()
	waitForSleepers(t, clk, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep returned %v, want context.Canceled", err)
	}
	waitForSleepers(t, clk, 0)
}

func TestSystemClockReadsWallTimeAndSleepHonoursTheContext(t *testing.T) {
	before := time.Now().UnixMilli()
	if now := SystemClock.NowMs(); now < before || now > time.Now().UnixMilli() {
		t.Fatalf("NowMs %d outside [%d, now]", now, before)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SystemClock.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context: %v", err)
	}
}

func waitForSleepers(t *testing.T, c *ManualClock, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.waiters)
		c.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sleepers, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}
