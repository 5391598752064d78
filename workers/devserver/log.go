package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// minLevelHandler drops records below min before they reach the wrapped
// handler, so the server's chatty info logs never cost a formatting pass.
// Once stopping is set it keeps only Panic and Fatal: while the services
// shut down, and for a while after (some of their pollers outlive Stop),
// they warn and err about every cancelled call and lost connection.
type minLevelHandler struct {
	min      slog.Leveler
	stopping *atomic.Bool
	next     slog.Handler
}

func (h minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if h.stopping.Load() && l < levelFatal {
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

// levelFatal marks the server's Panic and Fatal records.
const levelFatal = slog.LevelError + 4

// serverLogger adapts an slog.Logger to the Temporal server's log.Logger.
type serverLogger struct {
	l *slog.Logger
}

var (
	_ log.Logger      = serverLogger{}
	_ log.WithLogger  = serverLogger{}
	_ log.SLogWrapper = serverLogger{}
)

func newServerLogger(l *slog.Logger, min slog.Leveler, stopping *atomic.Bool) serverLogger {
	h := minLevelHandler{min: min, stopping: stopping, next: l.Handler()}
	return serverLogger{l: slog.New(h).With("component", "temporal")}
}

func (s serverLogger) Debug(msg string, tags ...tag.Tag) { s.log(slog.LevelDebug, msg, tags) }
func (s serverLogger) Info(msg string, tags ...tag.Tag)  { s.log(slog.LevelInfo, msg, tags) }
func (s serverLogger) Warn(msg string, tags ...tag.Tag)  { s.log(slog.LevelWarn, msg, tags) }
func (s serverLogger) Error(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

// DPanic only panics in the server's development builds.
func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

// Panic and Fatal must not return to their caller, which would carry on with
// a nil value. Fatal panics rather than exiting: an embedding process should
// not be killed by its dev server, and Start recovers panics raised while it
// builds and starts the services (such as a port that cannot be bound).
func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(levelFatal, msg, tags)
	panic(fatalError{msg: msg, tags: tags})
}

func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(levelFatal, msg, tags)
	panic(fatalError{msg: msg, tags: tags})
}

func (s serverLogger) With(tags ...tag.Tag) log.Logger {
	return serverLogger{l: slog.New(s.l.Handler().WithAttrs(tagAttrs(tags)))}
}

func (s serverLogger) SLog() *slog.Logger { return s.l }

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	s.l.LogAttrs(ctx, level, msg, tagAttrs(tags)...)
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
