package coord

// Sentinels returns the Go error values of the cluster side in the order
// ClientErrorKind tests them (for errtable_test.go).
func Sentinels() []*Error { return sentinels }

// RenewInstant returns when l's next background renewal is due (its
// jittered renew instant; sched.go) and whether background renewal is on.
func RenewInstant(l *Leadership) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewAtLocked(), l.sched.renewOn
}

// GroupRenewDue draws when g renews l next (rolegroup_run.go hold).
func GroupRenewDue(g *Group, l *Leadership) int64 { return g.renewDue(l) }

// MaxStepping is the bound on a client's acquisitions stepping at once
// (acquire_run.go).
const MaxStepping = maxStepping
