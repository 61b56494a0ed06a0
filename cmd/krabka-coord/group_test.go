package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

// group describe on a real broker: two members of a group of 6 shards, the
// JSON and the table say who owns what; a group nobody joined and a missing
// group log are told apart; bad command lines exit 2.
func TestGroupDescribeShowsMembersAndShards(t *testing.T) {
	bs := tv2(t)
	group := uniqueRole("cli-group")
	cfg := coord.DefaultConfig()
	for k, v := range map[string]string{"bootstrap.servers": bs, "krabka.lease.ms": "10000", "krabka.renew.interval.ms": "2500"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	glog, err := kafka.NewGroupLog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer glog.Transport.Close()
	var gs []*coord.Group
	for _, m := range []string{"g-1", "g-2"} {
		c, err := kafka.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		g, err := coord.NewGroup(c, glog, group, 6, core.MustMemberID(m), coord.WithWeight(map[string]int{"g-1": 2, "g-2": 1}[m]))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close(context.Background())
		gs = append(gs, g)
	}
	var j groupJSON
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, out, errs := cli(t, "-b", bs, "group", "describe", "-o", "json", group)
		if code != exitOK && strings.Contains(errs, "does not exist on this cluster") && time.Now().Before(deadline) {
			// The members create the group log when they first write to it.
			time.Sleep(500 * time.Millisecond)
			continue
		}
		if code != exitOK {
			t.Fatalf("group describe: exit %d: %s", code, errs)
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatalf("group describe -o json: %v: %q", err, out)
		}
		if j.Converged && len(j.Members) == 2 && j.Members[0].Held == 4 && j.Members[1].Held == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no converged group of 4+2 shards: %s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if j.Kind != "shards" || j.Shards != 6 || j.Seq < 1 || j.Members[0].Member != "g-1" || j.Members[0].Weight != 2 || j.MovesInFlight != 0 {
		t.Errorf("group describe -o json: %+v", j)
	}
	// The members' own view agrees with the CLI's.
	if len(gs[0].Held()) != 4 || len(gs[1].Held()) != 2 {
		t.Errorf("the members hold %d and %d shards", len(gs[0].Held()), len(gs[1].Held()))
	}
	code, out, _ := cli(t, "-b", bs, "group", "describe", group)
	if code != exitOK || !strings.Contains(out, "converged=true") || !strings.Contains(out, "g-1") || !strings.Contains(out, "shards=6") {
		t.Errorf("group describe (table): exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "-b", bs, "group", "describe", uniqueRole("cli-nogroup"))
	if code != exitOK || !strings.Contains(out, "no member and no plan") {
		t.Errorf("group describe of a group nobody joined: exit %d %q", code, out)
	}
	code, _, errs := cli(t, "-b", bs, "-X", "krabka.topic="+uniqueRole("cli-nolog"), "group", "describe", group)
	if code != exitFailed || !strings.Contains(errs, "does not exist") {
		t.Errorf("group describe without a group log: exit %d %q", code, errs)
	}
	for _, args := range [][]string{{"group"}, {"group", "describe"}, {"group", "list", group}, {"group", "describe", ""},
		{"group", "describe", group, "extra"}, {"group", "watch", "--interval", "0s", group}} {
		code, _, errs := cli(t, append([]string{"-b", bs}, args...)...)
		if code != exitUsage || errs == "" {
			t.Errorf("%q: exit %d (stderr %q), want %d and a message", args, code, errs, exitUsage)
		}
	}
}
