package core_test

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/krabka/krabka-coord/core"
	"github.com/twmb/franz-go/pkg/kgo"
)

// RolePartition must agree with Kafka's own key partitioning as franz-go
// implements it (StickyKeyPartitioner with a key is murmur2-based, like the
// Java client's default partitioner).
func TestRolePartitionAgreesWithFranzGoKeyPartitioning(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := []int32{1, 2, 3, 7, 16, 50, 100, 1000}
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for i := 0; i < 10000; i++ {
		name := randomRole(rng)
		r, err := core.NewRole(name)
		if err != nil {
			t.Fatalf("random role %q: %v", name, err)
		}
		for _, n := range counts {
			got, err := core.RolePartition(r, n)
			if err != nil {
				t.Fatal(err)
			}
			want := p.Partition(&kgo.Record{Key: []byte(name)}, int(n))
			if int(got) != want {
				t.Fatalf("role %q among %d: RolePartition %d, franz-go %d", name, n, got, want)
			}
		}
	}
}

// randomRole returns a valid role of 1 to 249 bytes mixing ASCII and
// multi-byte characters.
func randomRole(rng *rand.Rand) string {
	n := 1 + rng.IntN(64)
	b := make([]byte, 0, n*4)
	for len(b) < n {
		var r rune
		switch rng.IntN(4) {
		case 0:
			r = rune(0x80 + rng.IntN(0x780))
		case 1:
			r = rune(0x10000 + rng.IntN(0x1000))
		default:
			r = rune(0x20 + rng.IntN(0x5f))
		}
		if len(b)+utf8.RuneLen(r) > core.MaxNameBytes {
			break
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}
