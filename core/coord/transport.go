package coord

import (
	"context"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Transport is everything the client needs from the cluster. core/kafka
// implements it on franz-go; core/memtransport implements it in memory for
// the unit tests of the client logic.
//
// Every method blocks for at most the lifetime of ctx. Errors wrap one of the
// sentinels of errors_client.go: ErrAuthorization (naming the ACL),
// ErrUnsupported, ErrTimeout, ErrTransport, and, on the transactional steps
// of a TxnProducer only, ErrFenced.
type Transport interface {
	// Partitions returns the partition count of the coordination topic
	// from the cluster's metadata, creating the topic first when it is
	// missing (Config.TopicPartitions, Config.TopicReplication; compacted).
	Partitions(ctx context.Context) (int32, error)

	// Read returns the committed records of one partition of the
	// coordination topic (read_committed, from the log start to the last
	// stable offset at the time of the call), in offset order. Records of
	// aborted transactions and control records are left out.
	Read(ctx context.Context, partition int32) ([]core.RawRecord, error)

	// StableOffset returns the offset a reader of Fetch must reach to have
	// seen every record written before the call. For a transport whose
	// Fetch returns only committed records (Fetched.Records) that is the
	// last stable offset, listed after waiting a bounded time for the
	// commit markers of transactions already answered; for one whose Fetch
	// returns batches read past the stable offset (Fetched.Batches) it is
	// the high watermark, listed without waiting: the reader waits for the
	// markers of the transactions it cares about itself (docs/PROTOCOL.md
	// 12.1).
	StableOffset(ctx context.Context, partition int32) (int64, error)

	// Fetch reads partition from offset (a long poll: it waits up to
	// maxWait for records to arrive), returning committed records
	// (Fetched.Records) or the batches read past the last stable offset
	// (Fetched.Batches). The live view calls it in a loop, continuing from
	// Fetched.Next.
	Fetch(ctx context.Context, partition int32, offset int64, maxWait time.Duration) (Fetched, error)

	// Unfollow releases what Fetch holds for partition (the view stopped
	// following it). Never blocks.
	Unfollow(partition int32)

	// Append writes one record outside any transaction (the registrar
	// producer; acks=all) to the given partition of the coordination topic
	// and returns its offset, with the record headers given (none: nil). A
	// fence here says nothing about the role and is an ordinary error.
	Append(ctx context.Context, partition int32, key, value []byte, headers []Header) (int64, error)

	// Mint builds a new transactional producer for transactionalID with
	// the given transaction timeout and initialises it (InitProducerId),
	// which fences every earlier producer of that id. The token is learnt
	// from this producer.
	Mint(ctx context.Context, transactionalID string, txnTimeout time.Duration) (TxnProducer, error)

	// CurrentToken asks the transaction coordinator for the current token of
	// transactionalID (DescribeTransactions); NoEpoch when the id was never
	// used (TRANSACTIONAL_ID_NOT_FOUND).
	CurrentToken(ctx context.Context, transactionalID string) (core.FencingToken, error)

	// Close releases every connection. Producers minted earlier stop working.
	Close() error
}

// TxnProducer is one initialised transactional producer: one token, one
// leadership. It is used by one goroutine at a time (the Leadership
// serialises its calls).
type TxnProducer interface {
	// Token is the (producer id, epoch) this producer was minted with, or
	// the one an own epoch recovery continued it under (docs/PROTOCOL.md
	// 10.5). It is called concurrently with the other calls (the view's
	// fence check, Leadership.Token) and must not block.
	Token() core.FencingToken
	// Transact writes msgs in one transaction and commits it, returning
	// where each message landed. It succeeds only if every message's produce
	// result was a success and the commit was acknowledged; otherwise the
	// transaction is aborted (best effort) and the error says why. A message
	// with Partition -1 goes where Kafka's key hashing puts it. Errors that
	// mean the cluster superseded this producer's token (47, 90, or a
	// re-initialisation the coordinator refused) match ErrFenced. A
	// timeout never does.
	Transact(ctx context.Context, msgs []Message) ([]ProduceResult, error)
	// Close releases the producer (without ending a transaction that
	// another call left open; the coordinator aborts it at its timeout).
	Close() error
}

// TokenRecoverer is implemented by producers that may continue under a new
// token after an own epoch recovery (docs/PROTOCOL.md 10.5). Recover
// completes a recovery an earlier failure left pending and returns the
// current token; a renewal calls it before it builds its lease.
type TokenRecoverer interface {
	Recover(ctx context.Context) (core.FencingToken, error)
}

// Fetched is the answer of one Transport.Fetch.
type Fetched struct {
	// Records are committed records at or after the offset asked for, in
	// offset order (aborted data and control records left out).
	Records []core.RawRecord
	// Batches are the batches of a read_uncommitted fetch at or after the
	// offset asked for, in offset order: data batches with their producer
	// id and transactional flag, and the COMMIT/ABORT markers. The reader
	// folds a transaction's records when its COMMIT marker arrives
	// (core.TxnFolder), so that a transaction another producer left open
	// does not hide the records committed after it (docs/PROTOCOL.md 12.1).
	// A transport fills Records or Batches, never both in one answer.
	Batches []core.Batch
	// Next is the offset to fetch from next.
	Next int64
	// Reset: the offset asked for is no longer in the log (the log start
	// moved past it, or the topic was recreated); Next is the log start and
	// the reader must fold the partition again from there.
	Reset bool
	// LastStable is the last stable offset the broker reported (-1 unknown).
	LastStable int64
}

// Preparer is implemented by transports that can build (and connect) the
// transactional producer of a transactional id ahead of the Mint that will
// use it; acquire prepares while it waits, so that the win spends no round
// trips on connecting. Neither call blocks.
type Preparer interface {
	Prepare(txnID string, txnTimeout time.Duration)
	Unprepare(txnID string)
}

// Warmer is implemented by transports that can get ready for the mints of
// roles they are not told of (their connections, the cluster's settings):
// AcquireEach, whose roles may be thousands, calls Warm once instead of
// Prepare for each role, so that a standby keeps nothing per role in the
// transport until it wins. Warm does not block and is idempotent.
type Warmer interface {
	Warm()
}
