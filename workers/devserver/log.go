package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// minLevelHandler drops records below min before they reach the wrapped
// handler, so the server's chatty info logs never cost a formatting pass.
// Once stopping is set (when it is not nil) it drops everything: while the
// services shut down, and for a while after (some of their pollers outlive
// Stop), they warn and err about every cancelled call and lost connection.
type minLevelHandler struct {
	min      slog.Leveler
	stopping *atomic.Bool
	next     slog.Handler
}

func (h minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if h.stopping != nil && h.stopping.Load() {
		return false
	}
	return l >= h.min.Level() && h.next.Enabled(ctx, l)
}

func (h minLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevelHandler{min: h.min, stopping: h.stopping, next: h.next.WithAttrs(attrs)}
}

func (h minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{min: h.min, stopping: h.stopping, next: h.next.WithGroup(name)}
}

// serverLogger adapts an slog.Logger to the Temporal server's log.Logger.
// Panic and Fatal go through fatal, which is never silenced by Stop.
type serverLogger struct {
	l, fatal *slog.Logger
}

var (
	_ log.Logger      = serverLogger{}
	_ log.WithLogger  = serverLogger{}
	_ log.SLogWrapper = serverLogger{}
)

func newServerLogger(l *slog.Logger, min slog.Leveler, stopping *atomic.Bool) serverLogger {
	l = l.With("component", "temporal")
	return serverLogger{
		l:     slog.New(minLevelHandler{min: min, stopping: stopping, next: l.Handler()}),
		fatal: slog.New(minLevelHandler{min: min, next: l.Handler()}),
	}
}

func (s serverLogger) Debug(msg string, tags ...tag.Tag) { s.log(s.l, slog.LevelDebug, msg, tags) }
func (s serverLogger) Info(msg string, tags ...tag.Tag)  { s.log(s.l, slog.LevelInfo, msg, tags) }
func (s serverLogger) Warn(msg string, tags ...tag.Tag) {
	// The internal frontend, which only the worker service calls, has no
	// HTTP port and says so at every start; the public frontend has one.
	if strings.HasPrefix(msg, "HTTP API port has not been set") {
		return
	}
	s.log(s.l, slog.LevelWarn, msg, tags)
}
func (s serverLogger) Error(msg string, tags ...tag.Tag) { s.log(s.l, slog.LevelError, msg, tags) }

// DPanic only panics in the server's development builds.
func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(s.l, slog.LevelError, msg, tags) }

// Panic and Fatal must not return to their caller, which would carry on with
// a nil value. Fatal panics rather than exiting: an embedding process should
// not be killed by its dev server, and Start recovers panics raised while it
// builds and starts the services (such as a port that cannot be bound).
func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(s.fatal, slog.LevelError, msg, tags)
	panic(fatalError{msg: msg, tags: tags})
}

func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(s.fatal, slog.LevelError, msg, tags)
	panic(fatalError{msg: msg, tags: tags})
}

func (s serverLogger) With(tags ...tag.Tag) log.Logger {
	attrs := tagAttrs(tags)
	return serverLogger{
		l:     slog.New(s.l.Handler().WithAttrs(attrs)),
		fatal: slog.New(s.fatal.Handler().WithAttrs(attrs)),
	}
}

func (s serverLogger) SLog() *slog.Logger { return s.l }

func (serverLogger) log(l *slog.Logger, level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	l.LogAttrs(ctx, level, msg, tagAttrs(tags)...)
}

func tagAttrs(tags []tag.Tag) []slog.Attr {
	attrs := make([]slog.Attr, 0, len(tags))
	for _, t := range tags {
		attrs = append(attrs, slog.Any(t.Key(), t.Value()))
	}
	return attrs
}

// fatalError is the panic value of serverLogger.Fatal and Panic.
type fatalError struct {
	msg  string
	tags []tag.Tag
}

func (e fatalError) Error() string {
	s := "temporal server: " + e.msg
	for _, t := range e.tags {
		s += fmt.Sprintf(" %s=%v", t.Key(), t.Value())
	}
	return s
}
