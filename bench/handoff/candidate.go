package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/krabka/krabka-coord/bench/internal/childproc"
	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

// event is one line a candidate writes to its stdout (JSON). Times are Unix
// nanoseconds of the system clock, which every process on the machine shares.
type event struct {
	Ev       string  `json:"ev"`
	Member   string  `json:"member,omitempty"`
	T        int64   `json:"t,omitempty"`  // acq: when Acquire returned
	T0       int64   `json:"t0,omitempty"` // resigned: the call began
	T1       int64   `json:"t1,omitempty"` // resigned: the call returned
	TM       int64   `json:"tm,omitempty"` // acq with -instants: the last InitProducerId answer read
	TW       int64   `json:"tw,omitempty"` // acq with -instants: the first guarded write committed
	Token    string  `json:"token,omitempty"`
	Deadline int64   `json:"deadline,omitempty"` // acq: the lease deadline (ms)
	Err      string  `json:"err,omitempty"`
	Samples  []int64 `json:"samples,omitempty"` // produce: each call's duration (ns)
	Starts   []int64 `json:"starts,omitempty"`  // produce: each call's start (ns)
	Reqs     []req   `json:"reqs,omitempty"`    // trace: the requests sent
}

// req is one traced Kafka request.
type req struct {
	Client string `json:"c"`
	Key    string `json:"k"`
	Broker int32  `json:"b"`
	Start  int64  `json:"s"`
	End    int64  `json:"e"`
	Err    string `json:"err,omitempty"`
}

func (e event) Kind() string    { return e.Ev }
func (e event) Failure() string { return e.Err }

// runCandidate is one candidate process: it acquires the role and then
// obeys commands on stdin ("resign", "produce N TOPIC", "trace", "exit").
func runCandidate(args []string) {
	fs := flag.NewFlagSet("candidate", flag.ExitOnError)
	bootstrap := fs.String("bootstrap", "", "bootstrap.servers")
	roleName := fs.String("role", "", "role")
	memberName := fs.String("member", "", "member")
	props := fs.String("props", "", "extra client properties k=v,k=v")
	trace := fs.Bool("trace", false, "trace every Kafka request")
	instants := fs.String("instants", "", "topic: report the InitProducerId instant, make one guarded write to topic at once after Acquire, and watch the role (seen events)")
	fs.Parse(args)
	o := childproc.NewOut[event](os.Stdout)
	fail := func(err error) {
		o.Send(event{Ev: "err", Member: *memberName, Err: err.Error()})
		os.Exit(1)
	}
	m := map[string]string{"bootstrap.servers": *bootstrap}
	if *props != "" {
		for _, kv := range strings.Split(*props, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				fail(fmt.Errorf("bad property %q", kv))
			}
			m[k] = v
		}
	}
	cfg, err := coord.ConfigFromMap(m)
	if err != nil {
		fail(err)
	}
	var (
		tmu  sync.Mutex
		reqs []req
	)
	var opts []kafka.Option
	var mintAt atomic.Int64
	if *instants != "" && !*trace {
		opts = append(opts, kafka.WithRequestTrace(func(r kafka.RequestTrace) {
			if r.Key == "InitProducerID" && r.Err == nil {
				mintAt.Store(r.End.UnixNano())
			}
		}))
	}
	if *trace {
		reqs = make([]req, 0, 4096)
		opts = append(opts, kafka.WithRequestTrace(func(r kafka.RequestTrace) {
			q := req{Client: r.Client, Key: r.Key, Broker: r.Broker, Start: r.Start.UnixNano(), End: r.End.UnixNano()}
			if r.Key == "InitProducerID" && r.Err == nil {
				mintAt.Store(r.End.UnixNano())
			}
			if r.Err != nil {
				q.Err = r.Err.Error()
			}
			tmu.Lock()
			reqs = append(reqs, q)
			tmu.Unlock()
		}))
	}
	cl, err := kafka.NewClient(cfg, opts...)
	if err != nil {
		fail(err)
	}
	role, err := core.NewRole(*roleName)
	if err != nil {
		fail(err)
	}
	member, err := core.NewMemberID(*memberName)
	if err != nil {
		fail(err)
	}
	if *instants != "" {
		w, err := cl.Watch(context.Background(), role)
		if err != nil {
			fail(err)
		}
		go func() {
			for e := range w.C() {
				if e.Kind == coord.EventHolderChanged && e.Token != core.NoEpoch {
					o.Send(event{Ev: "seen", Member: *memberName, T: time.Now().UnixNano(), Token: e.Token.String()})
				}
			}
		}()
	}
	o.Send(event{Ev: "ready", Member: *memberName})

	var (
		lmu sync.Mutex
		l   *coord.Leadership
	)
	go func() {
		got, err := cl.Acquire(context.Background(), role, member)
		t := time.Now().UnixNano()
		if err != nil {
			o.Send(event{Ev: "err", Member: *memberName, Err: err.Error()})
			return
		}
		e := event{Ev: "acq", Member: *memberName, T: t, Token: got.Token().String(), Deadline: got.Lease().Deadline}
		if *instants != "" {
			e.TM = mintAt.Load()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := got.Produce(ctx, coord.Message{Topic: *instants, Partition: 0, Key: []byte("k"), Value: []byte("first")})
			e.TW = time.Now().UnixNano()
			cancel()
			if err != nil {
				e.Err = "first guarded write: " + err.Error()
			}
		}
		lmu.Lock()
		l = got
		lmu.Unlock()
		o.Send(e)
	}()

	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		lmu.Lock()
		cur := l
		lmu.Unlock()
		switch f[0] {
		case "resign":
			if cur == nil {
				o.Send(event{Ev: "err", Member: *memberName, Err: "resign: not holding"})
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			t0 := time.Now().UnixNano()
			err := cur.Resign(ctx)
			t1 := time.Now().UnixNano()
			cancel()
			e := event{Ev: "resigned", Member: *memberName, T0: t0, T1: t1}
			if err != nil {
				e.Err = err.Error()
			}
			o.Send(e)
		case "produce":
			// produce N TOPIC: N guarded writes of one record, back to back.
			if cur == nil || len(f) != 3 {
				o.Send(event{Ev: "err", Member: *memberName, Err: "produce: not holding or bad command"})
				continue
			}
			n, _ := strconv.Atoi(f[1])
			e := event{Ev: "produced", Member: *memberName}
			for i := 0; i < n; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				s := time.Now()
				_, err := cur.Produce(ctx, coord.Message{Topic: f[2], Partition: 0, Key: []byte("k"), Value: []byte("command")})
				d := time.Since(s)
				cancel()
				if err != nil {
					e.Err = err.Error()
					break
				}
				e.Starts = append(e.Starts, s.UnixNano())
				e.Samples = append(e.Samples, int64(d))
			}
			o.Send(e)
		case "trace":
			tmu.Lock()
			cp := append([]req(nil), reqs...)
			tmu.Unlock()
			o.Send(event{Ev: "trace", Member: *memberName, Reqs: cp})
		case "exit":
			cl.Close()
			o.Send(event{Ev: "bye", Member: *memberName})
			os.Exit(0)
		}
	}
	cl.Close()
}
