package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestTrace is one Kafka request a transport built WithRequestTrace sent
// and the answer it read: which of the transport's clients sent it, the
// request's name, the broker, when it was written and when its answer was
// read (the system clock), and the error of the write or read, if any.
type RequestTrace struct {
	// Client is "admin" (metadata, listings, one-shot reads, describes),
	// "registrar" (registrations), "producer" (the transactional producer
	// of an acquisition, prepared or minted), "engine-control" or
	// "engine-data" (the shared engine's planes, krabka.engine=shared) or
	// "follower" (the long polls of a followed partition).
	Client string
	// TxnID is the producer's transactional.id: of the "producer" client,
	// and of the engine planes' Produce requests (each carries one role's
	// transactions); "" otherwise.
	TxnID  string
	Key    string // the request's name, e.g. "Produce", "EndTxn"
	Broker int32
	// Start is when the client began writing the request (after any wait
	// for the connection), End when the answer was read.
	Start, End time.Time
	Err        error
}

// WithRequestTrace calls fn for every request any client of the transport
// sends, once its answer was read (or the write or read failed). fn runs
// on the client's connection goroutine, so it must be quick and must not
// block; the shared engine's Produce requests are the exception: fn runs on
// the goroutine of the role's transaction (engineTrace), and blocking there
// holds that role's transaction with its answer unread.
// For benchmarks and tests that want the ledger of an operation (bench/handoff);
// without it no hook is installed and nothing is measured.
func WithRequestTrace(fn func(RequestTrace)) Option {
	return func(o *options) { o.trace = fn }
}

// traceHook is the kgo hook of one traced client.
type traceHook struct {
	client, txnID string
	fn            func(RequestTrace)
	// engine: a plane of the shared engine, which traces its Produce
	// requests itself (engineTrace), naming their transactional id.
	engine bool
}

func (h traceHook) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if h.engine && key == kmsg.Produce.Int16() {
		return
	}
	end := time.Now()
	start := end.Add(-(e2e.TimeToWrite + e2e.ReadWait + e2e.TimeToRead))
	name := kmsg.NameForKey(key)
	if name == "" {
		name = "Unknown"
	}
	err := e2e.WriteErr
	if err == nil {
		err = e2e.ReadErr
	}
	h.fn(RequestTrace{Client: h.client, TxnID: h.txnID, Key: name, Broker: meta.NodeID, Start: start, End: end, Err: err})
}

// clientOpts returns the connection options of a new kgo client of the
// transport, with the trace hook labelled client when tracing is on.
func (t *Transport) clientOpts(client, txnID string) []kgo.Opt {
	return t.tracedOpts(traceHook{client: client, txnID: txnID})
}

// tracedOpts is clientOpts with the trace hook h (its fn set here).
func (t *Transport) tracedOpts(h traceHook) []kgo.Opt {
	opts := append([]kgo.Opt(nil), t.opts...)
	if t.trace != nil {
		h.fn = t.trace
		opts = append(opts, kgo.WithHooks(h))
	}
	return opts
}

// engineTrace reports one Produce of the shared engine for txnID, sent
// through the plane named client to broker, from start until now (the
// wait for the connection included). It runs on the goroutine of the
// role's transaction, after the answer was read and before the engine
// looks at it: a trace function that blocks holds that transaction alone
// (the kgo hooks of the other requests run on the connection's goroutine).
func (t *Transport) engineTrace(client, txnID string, broker int32, start time.Time, err error) {
	if t.trace != nil {
		t.trace(RequestTrace{Client: client, TxnID: txnID, Key: "Produce", Broker: broker, Start: start, End: time.Now(), Err: err})
	}
}
