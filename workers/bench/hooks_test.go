package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunHooks is a smoke run of ampflow bench --hooks: every path
// decides its calls through the API, and the figures have their shape
// (not their values: the machine's load decides those).
func TestRunHooks(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ampflow-hook")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/ampflow-hook")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ampflow-hook: %v: %s", err, out)
	}
	r, err := RunHooks(context.Background(), HookOptions{Calls: 5, HookBinary: bin})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Calls int
		Paths []map[string]any
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Calls != 5 || len(got.Paths) != 4 {
		t.Fatalf("%v: %s", err, b)
	}
	seen := map[string]bool{}
	for _, p := range got.Paths {
		for _, k := range []string{"cli", "path", "calls", "p50_ms", "p99_ms"} {
			if _, ok := p[k]; !ok {
				t.Errorf("path %v has no %s", p, k)
			}
		}
		if p["calls"] != 5.0 || p["p50_ms"].(float64) <= 0 || p["p99_ms"].(float64) < p["p50_ms"].(float64) {
			t.Errorf("path %v", p)
		}
		seen[p["cli"].(string)+" "+p["path"].(string)] = true
	}
	for _, want := range []string{"claude http", "opencode plugin", "codex ampflow-hook", "gemini ampflow-hook"} {
		if !seen[want] {
			t.Errorf("no %s path in %s", want, b)
		}
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "p50 ms") || strings.Count(text.String(), "\n") != 6 {
		t.Errorf("text: %v\n%s", err, text.String())
	}
	if _, err := RunHooks(context.Background(), HookOptions{}); err == nil {
		t.Error("no calls: no error")
	}
}
