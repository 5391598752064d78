package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// jsonErrorOf reads stderr as exactly one errorJSON line.
func jsonErrorOf(t *testing.T, r result) errorJSONDetail {
	t.Helper()
	if strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr is not one line: %q", r.stderr)
	}
	var body struct {
		Error *errorJSONDetail `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stderr))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Error == nil {
		t.Fatalf("stderr is not {\"error\":{…}}: %q (%v)", r.stderr, err)
	}
	if body.Error.Message == "" {
		t.Errorf("error without a message: %q", r.stderr)
	}
	return *body.Error
}

func TestJSONErrors(t *testing.T) {
	t.Run("Conflict", func(t *testing.T) {
		f := &fakeTasks{startErr: task.Errorf(task.CodeConflict, "task id T-2026-001 is taken")}
		r := runFake(t, f, "", nil, "-o", "json", "task", "start", "-f", "testdata/plan.yaml", "--task-id", "T-2026-001")
		wantExit(t, r, ExitFailed)
		e := jsonErrorOf(t, r)
		if e.Code != task.CodeConflict || !strings.Contains(e.Message, "T-2026-001") || r.stdout != "" {
			t.Errorf("error %+v, stdout %q; want conflict naming the id and nothing on stdout", e, r.stdout)
		}
	})
	t.Run("InvalidPlan", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", nil, "task", "start", "-f", "testdata/plan_invalid.yaml", "-o", "json")
		wantExit(t, r, ExitFailed)
		e := jsonErrorOf(t, r)
		if e.Code != task.CodeInvalid {
			t.Errorf("code %q, want invalid", e.Code)
		}
		paths := map[string]bool{}
		for _, f := range e.Fields {
			paths[f.Path] = f.Problem != ""
		}
		for _, want := range []string{"plan.branch", "plan.acceptance_criteria", "plan.risk_level", "plan.subtasks[0].estimated_lines"} {
			if !paths[want] {
				t.Errorf("fields lack %s: %+v", want, e.Fields)
			}
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		f := &fakeTasks{stateErr: task.Errorf(task.CodeNotFound, "reading task T-2026-404: no such task")}
		r := runFake(t, f, "", nil, "task", "show", "T-2026-404", "-o", "json")
		wantExit(t, r, ExitFailed)
		if e := jsonErrorOf(t, r); e.Code != task.CodeNotFound {
			t.Errorf("code %q, want not_found", e.Code)
		}
	})
	t.Run("Usage", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", nil, "-o", "json", "task", "start")
		wantExit(t, r, ExitUsage)
		if e := jsonErrorOf(t, r); e.Code != codeUsage || !strings.Contains(e.Message, "-f FILE") {
			t.Errorf("error %+v, want usage naming -f FILE, without the usage text", e)
		}
	})
	// A flag refused before -o is read still gets its answer as JSON.
	for _, args := range [][]string{
		{"task", "start", "--bogus", "-o", "json"},
		{"task", "start", "--bogus", "--output=json"},
		{"task", "list", "--limit", "x", "-ojson"},
	} {
		t.Run("UsageBefore"+strings.Join(args[2:], ""), func(t *testing.T) {
			r := runFake(t, &fakeTasks{}, "", nil, args...)
			wantExit(t, r, ExitUsage)
			if e := jsonErrorOf(t, r); e.Code != codeUsage {
				t.Errorf("error %+v, want usage", e)
			}
		})
	}
	t.Run("BadConfig", func(t *testing.T) {
		// A client reads only api.url and api.token (a server setting
		// such as protocol.max_rejects is not its to check).
		r := runFake(t, &fakeTasks{}, "", map[string]string{"AMPFLOW_API_URL": "ftp://127.0.0.1:7480"}, "task", "start", "-f", "testdata/plan.yaml", "-o", "json")
		wantExit(t, r, ExitFailed)
		e := jsonErrorOf(t, r)
		if e.Code != task.CodeInvalid || len(e.Fields) == 0 || e.Fields[0].Path != "api.url" {
			t.Errorf("error %+v, want invalid naming api.url", e)
		}
	})
	t.Run("TextUnchanged", func(t *testing.T) {
		f := &fakeTasks{startErr: task.Errorf(task.CodeConflict, "task id T-2026-001 is taken")}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml", "--task-id", "T-2026-001")
		wantExit(t, r, ExitFailed)
		if r.stderr != "ampflow: task id T-2026-001 is taken\n" {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
}

func TestLoggedDurations(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var b strings.Builder
			a := newApp(Options{Stderr: &b})
			var c config.Config
			c.Log.Level, c.Log.Format = "info", format
			a.Logger(c).Info("waiting", "ack_timeout", 300*time.Second, "poll", 1500*time.Millisecond)
			out := b.String()
			for _, want := range []string{"5m", "1500ms"} {
				if !strings.Contains(out, want) {
					t.Errorf("log %q lacks %s", out, want)
				}
			}
			if strings.Contains(out, "300000000000") || strings.Contains(out, "5m0s") {
				t.Errorf("log %q writes a duration as nanoseconds or 5m0s", out)
			}
		})
	}
}
