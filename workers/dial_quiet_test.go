package workers

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestQuietLogger: the SDK's logger passes warnings and errors on with
// every attribute and group added before them, in order, each logger made
// from one parent with its own; it drops what is below a warning.
func TestQuietLogger(t *testing.T) {
	var out bytes.Buffer
	l := quiet(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	parent := l.With("task", "T-2026-001").WithGroup("la")
	a := parent.With("id", "1")
	b := parent.With("id", "2")
	a.Info("dropped")
	a.Warn("first")
	b.Error("second")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %q, want two lines", out.String())
	}
	for i, want := range []string{`msg=first task=T-2026-001 la.id=1`, `msg=second task=T-2026-001 la.id=2`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want %q in it", i+1, lines[i], want)
		}
	}
}
