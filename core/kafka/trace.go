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
	// TxnID is the producer's transactional.id ("" for the other clients).
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
// on the client's connection goroutine: it must be quick and must not block.
// For benchmarks and tests that want the ledger of an operation (bench/handoff);
// without it no hook is installed and nothing is measured.
func WithRequestTrace(fn func(RequestTrace)) Option {
	return func(o *options) { o.trace = fn }
}

// traceHook is the kgo hook of one traced client.
type traceHook struct {
	client, txnID string
	fn            func(RequestTrace)
}

func (h traceHook) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
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
	opts := append([]kgo.Opt(nil), t.opts...)
	if t.trace != nil {
		opts = append(opts, kgo.WithHooks(traceHook{client: client, txnID: txnID, fn: t.trace}))
	}
	return opts
}
