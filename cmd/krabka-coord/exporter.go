package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

var exporterCommand = &command{
	name: "exporter", args: "ROLE... | --all-roles | --group GROUP", summary: "serve Prometheus metrics of roles and role groups",
	help: `Serves Prometheus metrics of the given roles (or of every role in the
coordination topic with --all-roles) on http://LISTEN/metrics until SIGINT or
SIGTERM. The roles are followed as a standby would (no epoch, no
registration); --all-roles also looks for new roles every --interval.

Metrics (label role on each):
  krabka_role_leader_info{member,token}          1 for the member and token the current lease names
  krabka_role_lease_live                          1 while that lease is before its deadline
  krabka_role_lease_remaining_seconds             time left until the lease's deadline (0 past it)
  krabka_role_failovers_total                     times the lease passed to another member or token
                                                  since the exporter started
  krabka_role_last_change_timestamp_seconds       when the holder last changed (or the exporter
                                                  first saw it)
  krabka_role_seconds_since_last_change           now minus the above
  krabka_role_members                             members in the roster
  krabka_role_observe_errors_total                failed reads of the role
plus the library's client statistics (krabka_client_*) and the Go process
metrics.

With --group (comma separated), each role group's state from the group log
(docs/GROUPS.md), read every second (label group on each; member where named):
  krabka_group_shards                             shards (slots) of the group's newest plan
  krabka_group_member_shards{member}              shards the member reports holding
  krabka_group_member_target_shards{member}       shards the balance assigns it
  krabka_group_member_weight{member}              its weight
  krabka_group_member_live{member}                1 while its heartbeat is live and it is eligible
  krabka_group_moves_total                        owner changes over the group's plans
  krabka_group_moves_in_flight                    shards handed over between live members
  krabka_group_unheld_shards                      shards no live member holds
  krabka_group_orphaned_shards                    shards held while their owner is not live
  krabka_group_converged                          1 when every shard is held by its target
  krabka_group_last_converge_seconds              how long the last spell away from convergence lasted
  krabka_group_convergences_total                 times the group converged again
  krabka_group_observe_errors_total               failed reads of the group log`,
	example: `krabka-coord -b kafka-1:9092 exporter --listen 0.0.0.0:9464 controller scheduler
krabka-coord -F client.properties exporter --all-roles
curl -s http://127.0.0.1:9464/metrics | grep krabka_role_leader_info`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.listen, "listen", o.listen, "`HOST:PORT` to serve /metrics on (port 0: any free port, printed)")
		fs.BoolVar(&o.allRoles, "all-roles", false, "export every role found in the coordination topic")
		fs.StringVar(&o.interval, "interval", o.interval, "how often to look for new roles (--all-roles) or re-read (`DURATION`)")
		fs.StringVar(&o.groups, "group", "", "also export these role groups (`GROUP[,GROUP...]`)")
	},
	run: runExporter,
}

// roleView is what the exporter knows of one role.
type roleView struct {
	seen       bool
	lease      *core.Lease // the current lease (nil: none, or cleared)
	lastHolder string      // the member and token of the last lease seen (kept when it is cleared)
	lastToken  string
	members    int
	failovers  float64
	lastChange time.Time
	errors     float64
}

// exporterState is shared by the observers and the collector.
type exporterState struct {
	mu     sync.Mutex
	roles  map[string]*roleView
	client *coord.Client
}

func newExporterState(c *coord.Client) *exporterState {
	return &exporterState{roles: map[string]*roleView{}, client: c}
}

func (s *exporterState) view(role string) *roleView {
	v := s.roles[role]
	if v == nil {
		v = &roleView{}
		s.roles[role] = v
	}
	return v
}

// observe records the role's current lease (nil: none) and roster size at
// instant at. A lease that names another member or token than the last
// lease seen is a failover, unless it is the exporter's first look at the
// role; an expired or cleared lease in between does not hide it.
func (s *exporterState) observe(role string, lease *core.Lease, members int, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.view(role)
	if !v.seen {
		v.lastChange = at
	}
	if lease != nil {
		holder, token := lease.Member.String(), lease.Token.String()
		if v.lastHolder != holder || v.lastToken != token {
			if v.seen {
				v.lastChange = at
				if v.lastHolder != "" {
					v.failovers++
				}
			}
			v.lastHolder, v.lastToken = holder, token
		}
		l := *lease
		v.lease = &l
	} else {
		if v.lease != nil {
			v.lastChange = at
		}
		v.lease = nil
	}
	v.seen = true
	v.members = members
}

func (s *exporterState) fail(role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.view(role).errors++
}

var (
	descLeaderInfo = prometheus.NewDesc("krabka_role_leader_info",
		"1 for the member and token that the role's current lease names.", []string{"role", "member", "token"}, nil)
	descLeaseLive = prometheus.NewDesc("krabka_role_lease_live",
		"1 while the role's lease is before its deadline, 0 otherwise.", []string{"role"}, nil)
	descLeaseRemaining = prometheus.NewDesc("krabka_role_lease_remaining_seconds",
		"Time left until the deadline of the role's lease (0 past it or without a lease).", []string{"role"}, nil)
	descFailovers = prometheus.NewDesc("krabka_role_failovers_total",
		"Times the role's lease passed to another member or token since the exporter started.", []string{"role"}, nil)
	descLastChange = prometheus.NewDesc("krabka_role_last_change_timestamp_seconds",
		"When the role's holder last changed (or the exporter first saw the role), Unix seconds.", []string{"role"}, nil)
	descSinceChange = prometheus.NewDesc("krabka_role_seconds_since_last_change",
		"Seconds since the role's holder last changed (or the exporter first saw the role).", []string{"role"}, nil)
	descMembers = prometheus.NewDesc("krabka_role_members",
		"Members registered in the role's roster.", []string{"role"}, nil)
	descErrors = prometheus.NewDesc("krabka_role_observe_errors_total",
		"Failed reads of the role by the exporter.", []string{"role"}, nil)
	descReads = prometheus.NewDesc("krabka_client_reads_total",
		"Completed reads (folds) of a coordination partition by the exporter's client.", nil, nil)
	descFolded = prometheus.NewDesc("krabka_client_records_folded_total",
		"Records read and folded by the exporter's client.", nil, nil)
	descSkipped = prometheus.NewDesc("krabka_client_records_skipped_total",
		"Undecodable records of the folded roles skipped by the exporter's client.", nil, nil)
	descViewWaits = prometheus.NewDesc("krabka_client_view_waits_total",
		"Waits of the exporter's client on its live views: one per start and per wake-up of a waiter.", nil, nil)
	descViewLag = prometheus.NewDesc("krabka_role_view_lag_seconds",
		"Age of the exporter's newest view of the role's partition.", []string{"role"}, nil)
)

func (s *exporterState) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLeaderInfo, descLeaseLive, descLeaseRemaining, descFailovers,
		descLastChange, descSinceChange, descMembers, descErrors, descReads, descFolded, descSkipped, descViewWaits, descViewLag} {
		ch <- d
	}
}

// Collect computes every value at scrape time (the lease clock runs between
// events).
func (s *exporterState) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	s.mu.Lock()
	names := make([]string, 0, len(s.roles))
	for r, v := range s.roles {
		if v.seen {
			names = append(names, r)
		}
	}
	sort.Strings(names)
	for _, r := range names {
		v := s.roles[r]
		live, remaining := 0.0, 0.0
		if v.lease != nil {
			ch <- prometheus.MustNewConstMetric(descLeaderInfo, prometheus.GaugeValue, 1, r, v.lease.Member.String(), v.lease.Token.String())
			if v.lease.LiveAt(now.UnixMilli()) {
				live = 1
			}
			remaining = float64(v.lease.RemainingAt(now.UnixMilli())) / 1000
		}
		ch <- prometheus.MustNewConstMetric(descLeaseLive, prometheus.GaugeValue, live, r)
		ch <- prometheus.MustNewConstMetric(descLeaseRemaining, prometheus.GaugeValue, remaining, r)
		ch <- prometheus.MustNewConstMetric(descFailovers, prometheus.CounterValue, v.failovers, r)
		ch <- prometheus.MustNewConstMetric(descLastChange, prometheus.GaugeValue, float64(v.lastChange.UnixMilli())/1000, r)
		ch <- prometheus.MustNewConstMetric(descSinceChange, prometheus.GaugeValue, now.Sub(v.lastChange).Seconds(), r)
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(v.members), r)
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, v.errors, r)
	}
	s.mu.Unlock()
	if s.client == nil {
		return
	}
	st := s.client.Stats()
	ch <- prometheus.MustNewConstMetric(descReads, prometheus.CounterValue, float64(st.Reads))
	ch <- prometheus.MustNewConstMetric(descFolded, prometheus.CounterValue, float64(st.RecordsFolded))
	ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(st.RecordsSkipped))
	ch <- prometheus.MustNewConstMetric(descViewWaits, prometheus.CounterValue, float64(st.ViewWaits))
	for r, rs := range st.Roles {
		if rs.ViewLagMs >= 0 {
			ch <- prometheus.MustNewConstMetric(descViewLag, prometheus.GaugeValue, float64(rs.ViewLagMs)/1000, r)
		}
	}
}

func runExporter(e *env, args []string) int {
	interval, err := time.ParseDuration(e.o.interval)
	if err != nil || interval <= 0 {
		e.errorf("--interval %q: a positive duration such as 30s", e.o.interval)
		return exitUsage
	}
	if e.o.allRoles && len(args) > 0 || !e.o.allRoles && len(args) == 0 && e.o.groups == "" {
		e.errorf("exporter needs ROLE arguments or --all-roles (one of the two), or --group")
		return exitUsage
	}
	groups, code := groupNames(e)
	if code != exitOK {
		return code
	}
	roles, code := e.roleArgs(args)
	if code != exitOK {
		return code
	}
	c, code := e.connectExisting()
	if code != exitOK {
		return code
	}
	defer c.Close()
	state := newExporterState(c)
	reg := prometheus.NewRegistry()
	gc := newGroupCollector(groups)
	reg.MustRegister(state, gc, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	ln, err := net.Listen("tcp", e.o.listen)
	if err != nil {
		e.errorf("--listen %s: %v", e.o.listen, err)
		return exitFailed
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "krabka-coord exporter: metrics at /metrics")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	fmt.Fprintf(e.stderr, "krabka-coord exporter: serving http://%s/metrics\n", ln.Addr())

	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var wg sync.WaitGroup
	code = observeRoles(ctx, &wg, e, c, state, roles, e.o.allRoles, interval)
	if code == exitOK {
		code = observeGroups(ctx, &wg, e, gc, groups)
	}
	if code != exitOK {
		cancel()
		srv.Close()
		wg.Wait()
		return code
	}

	code = exitOK
	select {
	case <-ctx.Done():
	case err := <-srvErr:
		e.errorf("serving /metrics: %v", err)
		code = exitFailed
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		e.errorf("stopping the server: %v", err)
	}
	wg.Wait()
	return code
}
