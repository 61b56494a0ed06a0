package coord

import (
	"context"
	"log/slog"
	"strings"
)

// Logging. The client logs through log/slog: Config.Logger (nil:
// slog.Default()) filtered at krabka.log.level (krabka.debug forces debug and
// also turns on franz-go's own log lines in core/kafka). Every record carries
// the attribute "client" (client.id). What is logged:
//
//	debug: registrations, reads, renewals that succeeded, challenges lost
//	info:  a role won, a leadership resigned or closed
//	warn:  a leadership ended FENCED or EXPIRED, a renewal that failed
//	error: nothing yet (errors are returned to the caller)
//
// Secrets never appear: the SASL and SSL key passwords are never passed to a
// logger, and the handler replaces them with "[redacted]" should a line of
// franz-go ever carry one.

// LogLevels are the values of krabka.log.level, in order of verbosity.
var LogLevels = []string{"error", "warn", "info", "debug"}

func parseLogLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "error":
		return slog.LevelError, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "info":
		return slog.LevelInfo, true
	case "debug":
		return slog.LevelDebug, true
	}
	return 0, false
}

func logLevelName(l slog.Level) string {
	switch {
	case l <= slog.LevelDebug:
		return "debug"
	case l <= slog.LevelInfo:
		return "info"
	case l <= slog.LevelWarn:
		return "warn"
	}
	return "error"
}

// EffectiveLogLevel is the level the client logs at: debug with
// krabka.debug, else krabka.log.level.
func (c Config) EffectiveLogLevel() slog.Level {
	if c.Debug {
		return slog.LevelDebug
	}
	return c.LogLevel
}

// NewLogger returns the logger a client built from cfg logs to:
// cfg.Logger (nil: slog.Default()) behind the level filter and the secret
// scrubber. core/kafka uses it for franz-go's lines.
func NewLogger(cfg Config) *slog.Logger {
	base := cfg.Logger
	if base == nil {
		base = slog.Default()
	}
	var secrets []string
	for _, sec := range []string{cfg.SASLPassword, cfg.SSLKeyPassword} {
		if sec != "" {
			secrets = append(secrets, sec)
		}
	}
	h := &filterHandler{inner: base.Handler(), min: cfg.EffectiveLogLevel(), secrets: secrets}
	return slog.New(h).With(slog.String("client", cfg.ClientID))
}

// filterHandler drops records below min and scrubs secrets from messages
// and string attributes.
type filterHandler struct {
	inner   slog.Handler
	min     slog.Level
	secrets []string
}

func (h *filterHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.inner.Enabled(ctx, l)
}

func (h *filterHandler) scrub(s string) string {
	for _, sec := range h.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

func (h *filterHandler) scrubAttr(a slog.Attr) slog.Attr {
	if len(h.secrets) == 0 {
		return a
	}
	switch a.Value.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.scrub(a.Value.String()))
	case slog.KindGroup:
		g := a.Value.Group()
		out := make([]any, len(g))
		for i, x := range g {
			out[i] = h.scrubAttr(x)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			return slog.String(a.Key, h.scrub(err.Error()))
		}
		return slog.String(a.Key, h.scrub(a.Value.String()))
	}
	return a
}

func (h *filterHandler) Handle(ctx context.Context, r slog.Record) error {
	if len(h.secrets) > 0 {
		nr := slog.NewRecord(r.Time, r.Level, h.scrub(r.Message), r.PC)
		r.Attrs(func(a slog.Attr) bool {
			nr.AddAttrs(h.scrubAttr(a))
			return true
		})
		r = nr
	}
	return h.inner.Handle(ctx, r)
}

func (h *filterHandler) WithAttrs(as []slog.Attr) slog.Handler {
	sc := make([]slog.Attr, len(as))
	for i, a := range as {
		sc[i] = h.scrubAttr(a)
	}
	return &filterHandler{inner: h.inner.WithAttrs(sc), min: h.min, secrets: h.secrets}
}

func (h *filterHandler) WithGroup(name string) slog.Handler {
	return &filterHandler{inner: h.inner.WithGroup(name), min: h.min, secrets: h.secrets}
}

// log returns the client's logger.
func (c *Client) log() *slog.Logger { return c.logger }

// logEnd logs how a leadership ended: warn for FENCED and EXPIRED (the
// owner lost the role), info otherwise.
func (c *Client) logEnd(l *Leadership, s LeadershipState, err error) {
	level := slog.LevelInfo
	if s == Fenced || s == Expired {
		level = slog.LevelWarn
	}
	reason := ""
	if err != nil {
		reason = err.Error()
	}
	c.log().Log(context.Background(), level, "krabka: leadership ended", "role", l.role.String(), "member", l.member.String(),
		"token", l.Token().String(), "state", s.String(), "reason", reason)
}

// logRenewal logs a renewal that failed (warn) or succeeded (debug).
func (c *Client) logRenewal(l *Leadership, deadline int64, err error) {
	if err != nil {
		c.log().Warn("krabka: renewal failed", "role", l.role.String(), "member", l.member.String(), "token", l.Token().String(),
			"deadline_ms", deadline, "error", err.Error())
		return
	}
	c.log().Debug("krabka: renewed", "role", l.role.String(), "member", l.member.String(), "token", l.Token().String(), "deadline_ms", deadline)
}
