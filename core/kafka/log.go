package kafka

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core/coord"
)

// kgoLogger passes franz-go's log lines to the client's slog logger
// (krabka.debug). franz-go's levels map onto slog's; its key/value pairs
// become attributes.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var sl slog.Level
	switch level {
	case kgo.LogLevelError:
		sl = slog.LevelError
	case kgo.LogLevelWarn:
		sl = slog.LevelWarn
	case kgo.LogLevelInfo:
		sl = slog.LevelInfo
	default:
		sl = slog.LevelDebug
	}
	k.l.Log(context.Background(), sl, "franz-go: "+msg, keyvals...)
}

// logOpts returns the kgo options that wire franz-go's logger: only with
// krabka.debug.
func logOpts(cfg coord.Config) []kgo.Opt {
	if !cfg.Debug {
		return nil
	}
	return []kgo.Opt{kgo.WithLogger(kgoLogger{coord.NewLogger(cfg).With(slog.String("component", "franz-go"))})}
}

// log returns the logger of the transport's configuration (the client's).
func (t *Transport) log() *slog.Logger { return coord.NewLogger(t.cfg) }
