package main

import (
	"flag"
	"fmt"
	"sort"
	"strconv"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/kafka"
)

var verifyRole string

var verifyCommand = &command{
	name: "verify", args: "TOPIC", summary: "check the tokens of a command topic",
	help: `Reads TOPIC (isolation read_committed, every partition to its last stable
offset) and judges each record as a consumer would (docs/PROTOCOL.md 11.5):
its krabka.token header against the producer id and epoch of its batch (the
token the broker accepted), and the batch's token against the highest seen.
Per partition it prints the records, how many carry krabka.token, the range
of tokens, and every record whose token goes backwards (STALE) or disagrees
with its batch (MISMATCH), at most 20 a partition.

The highest token is tracked per partition, or across all partitions with
--role (one role writing several partitions). Exit 3 when a record is STALE
or MISMATCH; records without the header (UNSTAMPED) are counted, not failed.`,
	example: `krabka-coord -b kafka-1:9092 verify device-commands
krabka-coord -b kafka-1:9092 verify --role controller device-commands`,
	flags: func(fs *flag.FlagSet, o *options) {
		verifyRole = ""
		fs.StringVar(&verifyRole, "role", "", "track the highest token across all partitions under this role (default: per partition)")
	},
	run: runVerify,
}

type partVerdicts struct {
	records, stamped, stale, mismatch int
	low, high                         core.FencingToken
	problems                          []string
}

func runVerify(e *env, args []string) int {
	if len(args) != 1 {
		e.errorf("verify needs TOPIC (krabka-coord verify --help)")
		return exitUsage
	}
	topic := args[0]
	t, c, code := e.connect()
	if code != exitOK {
		return code
	}
	defer c.Close()
	v := core.NewVerifier()
	parts := map[int32]*partVerdicts{}
	err := t.ReadTopic(e.ctx, topic, func(r kafka.TopicRecord) error {
		pv := parts[r.Partition]
		if pv == nil {
			pv = &partVerdicts{low: r.Batch, high: r.Batch}
			parts[r.Partition] = pv
		}
		pv.records++
		var hdr []byte
		has := false
		for _, h := range r.Headers {
			if h.Key == core.HeaderToken {
				hdr, has = h.Value, true
			}
		}
		if has {
			pv.stamped++
		}
		scope := verifyRole
		if scope == "" {
			scope = "partition " + strconv.Itoa(int(r.Partition))
		}
		before, _ := v.Highest(scope)
		verdict := v.Judge(scope, hdr, has, r.Batch)
		switch verdict {
		case core.VerdictStale:
			pv.stale++
			if len(pv.problems) < 20 {
				pv.problems = append(pv.problems, fmt.Sprintf("offset %d: STALE: batch token %s after %s", r.Offset, r.Batch, before))
			}
		case core.VerdictMismatch:
			pv.mismatch++
			if len(pv.problems) < 20 {
				pv.problems = append(pv.problems, fmt.Sprintf("offset %d: MISMATCH: krabka.token %q, batch token %s", r.Offset, hdr, r.Batch))
			}
		}
		if r.Batch.Compare(pv.low) < 0 {
			pv.low = r.Batch
		}
		if r.Batch.Compare(pv.high) > 0 {
			pv.high = r.Batch
		}
		return nil
	})
	if err != nil {
		e.errorf("verify %s: %v", topic, err)
		return exitFailed
	}
	ids := make([]int32, 0, len(parts))
	for p := range parts {
		ids = append(ids, p)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	bad := 0
	for _, p := range ids {
		pv := parts[p]
		verdict := "OK"
		if pv.stale+pv.mismatch > 0 {
			verdict = fmt.Sprintf("FAIL (%d stale, %d mismatch)", pv.stale, pv.mismatch)
			bad++
		}
		fmt.Fprintf(e.stdout, "partition %d: %d record(s), %d stamped, tokens %s..%s: %s\n", p, pv.records, pv.stamped, pv.low, pv.high, verdict)
		for _, pr := range pv.problems {
			fmt.Fprintf(e.stdout, "  %s\n", pr)
		}
	}
	if len(ids) == 0 {
		fmt.Fprintf(e.stdout, "%s: no committed record\n", topic)
	}
	if bad > 0 {
		return exitCheck
	}
	return exitOK
}

// verify registers itself after the commands of main.go (help lists it
// after them); exit 3 is check's code reused: a STALE or MISMATCH record.
func init() { commands = append(commands, verifyCommand) }
