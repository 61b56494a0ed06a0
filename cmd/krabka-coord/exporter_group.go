package main

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// The exporter's role groups (--group): each group's state read from the
// group log every groupPoll, and the time each group took to converge.

const groupPoll = time.Second

// groupView is what the exporter knows of one group.
type groupExport struct {
	st *coord.GroupStatus
	// unconvergedSince: when the exporter first saw the group not
	// converged (zero while converged).
	unconvergedSince time.Time
	lastConverge     float64 // seconds the last unconverged spell lasted (-1: none seen)
	convergences     float64
	errors           float64
}

type groupCollector struct {
	mu     sync.Mutex
	groups map[string]*groupExport
}

func newGroupCollector(names []string) *groupCollector {
	g := &groupCollector{groups: map[string]*groupExport{}}
	for _, n := range names {
		g.groups[n] = &groupExport{lastConverge: -1}
	}
	return g
}

// observe records st, read at instant at.
func (g *groupCollector) observe(name string, st *coord.GroupStatus, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v := g.groups[name]
	v.st = st
	switch {
	case !st.Converged && v.unconvergedSince.IsZero():
		v.unconvergedSince = at
	case st.Converged && !v.unconvergedSince.IsZero():
		v.lastConverge = at.Sub(v.unconvergedSince).Seconds()
		v.convergences++
		v.unconvergedSince = time.Time{}
	}
}

func (g *groupCollector) fail(name string) {
	g.mu.Lock()
	g.groups[name].errors++
	g.mu.Unlock()
}

var (
	descGroupShards = prometheus.NewDesc("krabka_group_shards",
		"Shards (or slots) of the group, from its newest plan.", []string{"group"}, nil)
	descGroupMemberShards = prometheus.NewDesc("krabka_group_member_shards",
		"Shards the member reports holding.", []string{"group", "member"}, nil)
	descGroupMemberTarget = prometheus.NewDesc("krabka_group_member_target_shards",
		"Shards the balance assigns the member.", []string{"group", "member"}, nil)
	descGroupMemberWeight = prometheus.NewDesc("krabka_group_member_weight",
		"The member's weight.", []string{"group", "member"}, nil)
	descGroupMemberLive = prometheus.NewDesc("krabka_group_member_live",
		"1 while the member's heartbeat is before its deadline and it is eligible, 0 otherwise.", []string{"group", "member"}, nil)
	descGroupMoves = prometheus.NewDesc("krabka_group_moves_total",
		"Shards whose owner changed over the group's plans (the leaders' running count).", []string{"group"}, nil)
	descGroupInFlight = prometheus.NewDesc("krabka_group_moves_in_flight",
		"Shards handed over between live members: the owner in the plan is live and another live member reports holding it.", []string{"group"}, nil)
	descGroupUnheld = prometheus.NewDesc("krabka_group_unheld_shards",
		"Shards no live member reports holding.", []string{"group"}, nil)
	descGroupOrphaned = prometheus.NewDesc("krabka_group_orphaned_shards",
		"Shards a live member holds while their owner in the plan is not live (or there is none): the next plan settles them.", []string{"group"}, nil)
	descGroupConverged = prometheus.NewDesc("krabka_group_converged",
		"1 when every shard is held by its target.", []string{"group"}, nil)
	descGroupConverge = prometheus.NewDesc("krabka_group_last_converge_seconds",
		"How long the group's last spell away from convergence lasted, as the exporter saw it.", []string{"group"}, nil)
	descGroupConvergences = prometheus.NewDesc("krabka_group_convergences_total",
		"Times the exporter saw the group converge after it was not.", []string{"group"}, nil)
	descGroupErrors = prometheus.NewDesc("krabka_group_observe_errors_total",
		"Failed reads of the group log by the exporter.", []string{"group"}, nil)
)

func (g *groupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descGroupShards, descGroupMemberShards, descGroupMemberTarget, descGroupMemberWeight,
		descGroupMemberLive, descGroupMoves, descGroupInFlight, descGroupUnheld, descGroupOrphaned, descGroupConverged, descGroupConverge,
		descGroupConvergences, descGroupErrors} {
		ch <- d
	}
}

func (g *groupCollector) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := make([]string, 0, len(g.groups))
	for n := range g.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := g.groups[n]
		ch <- prometheus.MustNewConstMetric(descGroupErrors, prometheus.CounterValue, v.errors, n)
		if v.st == nil {
			continue
		}
		st := v.st
		ch <- prometheus.MustNewConstMetric(descGroupShards, prometheus.GaugeValue, float64(st.Shards), n)
		for _, m := range st.Members {
			live := 0.0
			if m.Live && m.Eligible {
				live = 1
			}
			ch <- prometheus.MustNewConstMetric(descGroupMemberShards, prometheus.GaugeValue, float64(len(m.Held)), n, m.Member)
			ch <- prometheus.MustNewConstMetric(descGroupMemberTarget, prometheus.GaugeValue, float64(m.Target), n, m.Member)
			ch <- prometheus.MustNewConstMetric(descGroupMemberWeight, prometheus.GaugeValue, float64(m.Weight), n, m.Member)
			ch <- prometheus.MustNewConstMetric(descGroupMemberLive, prometheus.GaugeValue, live, n, m.Member)
		}
		conv := 0.0
		if st.Converged {
			conv = 1
		}
		ch <- prometheus.MustNewConstMetric(descGroupMoves, prometheus.CounterValue, float64(st.Moves), n)
		ch <- prometheus.MustNewConstMetric(descGroupInFlight, prometheus.GaugeValue, float64(st.MovesInFlight), n)
		ch <- prometheus.MustNewConstMetric(descGroupUnheld, prometheus.GaugeValue, float64(st.Unheld), n)
		ch <- prometheus.MustNewConstMetric(descGroupOrphaned, prometheus.GaugeValue, float64(st.Orphaned), n)
		ch <- prometheus.MustNewConstMetric(descGroupConverged, prometheus.GaugeValue, conv, n)
		if v.lastConverge >= 0 {
			ch <- prometheus.MustNewConstMetric(descGroupConverge, prometheus.GaugeValue, v.lastConverge, n)
		}
		ch <- prometheus.MustNewConstMetric(descGroupConvergences, prometheus.CounterValue, v.convergences, n)
	}
}

// groupNames splits --group (comma separated) and checks each name.
func groupNames(e *env) ([]string, int) {
	if e.o.groups == "" {
		return nil, exitOK
	}
	var out []string
	for _, n := range strings.Split(e.o.groups, ",") {
		if _, err := coord.GroupLeaderRole(n); err != nil {
			e.errorf("--group: %v", err)
			return nil, exitUsage
		}
		out = append(out, n)
	}
	return out, exitOK
}

// observeGroups reads each group every groupPoll until ctx ends.
func observeGroups(ctx context.Context, wg *sync.WaitGroup, e *env, gc *groupCollector, names []string) int {
	if len(names) == 0 {
		return exitOK
	}
	log, code := e.groupLog()
	if code != exitOK {
		return code
	}
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				st, err := coord.DescribeGroup(ctx, log, n, core.SystemClock)
				if ctx.Err() != nil {
					break
				}
				if err != nil {
					gc.fail(n)
				} else {
					gc.observe(n, st, time.Now())
				}
				select {
				case <-ctx.Done():
				case <-time.After(groupPoll):
					continue
				}
				break
			}
		}()
	}
	go func() {
		<-ctx.Done()
		wg.Wait()
		log.Transport.Close()
	}()
	return exitOK
}
