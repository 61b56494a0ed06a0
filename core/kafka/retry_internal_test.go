package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRetryTxnStepBacksOffExponentially: while the coordinator answers
// CONCURRENT_TRANSACTIONS, retryTxnStep waits 0.5 ms, then twice as long
// each time up to 50 ms, and returns the first answer that is not to be
// retried. A fixed 500 µs (the old rule, for the first second) made a
// member of 1,024 group shards send several AddPartitionsToTxn per
// transaction to a loaded broker.
func TestRetryTxnStepBacksOffExponentially(t *testing.T) {
	var waits []time.Duration
	record := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	calls := 0
	final := errors.New("not to be retried")
	err := retryTxnStepWith(context.Background(), func() error {
		calls++
		if calls <= 10 {
			return kerr.ConcurrentTransactions
		}
		return final
	}, record)
	if !errors.Is(err, final) || calls != 11 {
		t.Fatalf("retryTxnStep returned %v after %d calls, want the 11th call's error", err, calls)
	}
	ms := time.Millisecond
	want := []time.Duration{ms / 2, ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 50 * ms, 50 * ms, 50 * ms}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	// A context that ends stops the retries with the last answer.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	err = retryTxnStep(ctx, func() error { calls++; return kerr.ConcurrentTransactions })
	if !errors.Is(err, kerr.ConcurrentTransactions) || calls != 1 {
		t.Fatalf("with its context ended: %v after %d calls", err, calls)
	}
}
