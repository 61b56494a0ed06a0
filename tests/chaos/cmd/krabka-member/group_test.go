package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

func TestParseGroupArg(t *testing.T) {
	g, ok, err := parseGroupArg("group:fleet:16=cmds")
	if !ok || err != nil || g != (groupSpec{name: "fleet", shards: 16, topic: "cmds"}) {
		t.Fatalf("got %+v %v %v", g, ok, err)
	}
	if _, ok, err := parseGroupArg("role-a=cmds"); ok || err != nil {
		t.Fatalf("a role argument taken for a group: %v %v", ok, err)
	}
	for _, bad := range []string{"group:fleet=cmds", "group:fleet:0=cmds", "group:fleet:x=cmds", "group:fleet:4=", "group::4=cmds"} {
		if _, ok, err := parseGroupArg(bad); !ok || err == nil {
			t.Errorf("%q: no error (%v)", bad, ok)
		}
	}
}

// Two members of one group in memory: between them they hold every shard
// and write commands for shard k, naming it, to partition k only; when one
// leaves (its context ends: the group closes and hands its shards over) the
// other takes its shards, and the leaver reports each of its shards
// revoked.
func TestGroupMembersWriteEachShardToItsPartition(t *testing.T) {
	const shards = 4
	cluster := memtransport.NewCluster(4)
	cluster.CreateTopic("shards", shards)
	cfg := coord.DefaultConfig()
	for _, kv := range [][2]string{{"bootstrap.servers", "mem:9092"}, {"krabka.lease.ms", "2000"}, {"krabka.renew.interval.ms", "500"},
		{"krabka.challenge.stagger.ms", "100"}, {"krabka.poll.interval.ms", "50"}, {"krabka.txn.timeout.ms", "2000"}} {
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	log := coord.GroupLog{Transport: cluster.Transport(cfg.Topic + ".groups"), Topic: cfg.Topic + ".groups"}
	type member struct {
		h      *host
		out    *syncBuf
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(name string) *member {
		client, err := coord.NewClient(cfg, cluster.Transport(cfg.Topic), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		h, out := testHost()
		h.member, h.client, h.writers, h.maxMoves = name, client, 1, 4
		h.pace, h.rejoin = 20*time.Millisecond, 50*time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{h: h, out: out, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(m.done)
			h.runGroup(ctx, log, groupSpec{name: "fleet", shards: shards, topic: "shards"})
		}()
		t.Cleanup(func() { cancel(); <-m.done })
		return m
	}
	// holders is each shard's holder by the members' ACQUIRED and REVOKED
	// events.
	holders := func(ms ...*member) map[int]string {
		out := map[int]string{}
		for _, m := range ms {
			for _, line := range strings.Split(m.out.String(), "\n") {
				f := strings.Fields(line)
				if len(f) < 6 || (f[3] != "ACQUIRED" && f[3] != "REVOKED") {
					continue
				}
				var k int
				if _, err := fmt.Sscanf(f[5], "shard=%d", &k); err != nil {
					t.Fatalf("event without its shard: %q", line)
				}
				if f[3] == "ACQUIRED" {
					out[k] = m.h.member
				} else if out[k] == m.h.member {
					delete(out, k)
				}
			}
		}
		return out
	}
	waitFor := func(what string, ok func() bool) {
		deadline := time.Now().Add(60 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen within a minute", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	a, b := start("go-a"), start("go-b")
	waitFor("every shard held, each with commands", func() bool {
		h := holders(a, b)
		for k := 0; k < shards; k++ {
			if h[k] == "" || len(cluster.Records("shards", int32(k))) == 0 {
				return false
			}
		}
		return true
	})
	a.cancel()
	<-a.done
	waitFor("go-b holding every shard", func() bool {
		h := holders(a, b)
		for k := 0; k < shards; k++ {
			if h[k] != "go-b" {
				return false
			}
		}
		return true
	})
	aOut := a.out.String()
	acquired, revoked := strings.Count(aOut, " ACQUIRED "), strings.Count(aOut, " REVOKED ")
	if acquired == 0 || acquired != revoked || !strings.Contains(aOut, " LEFT role=fleet") {
		t.Errorf("the leaver: %d ACQUIRED, %d REVOKED, or no LEFT:\n%s", acquired, revoked, aOut)
	}
	if !strings.Contains(a.out.String()+b.out.String(), " PLAN role=fleet seq=") {
		t.Error("no PLAN event")
	}
	for k := 0; k < shards; k++ {
		for _, r := range cluster.Records("shards", int32(k)) {
			if !strings.Contains(string(r.Value), fmt.Sprintf(" shard=%d ", k)) {
				t.Errorf("partition %d holds %q", k, r.Value)
			}
		}
	}
}
