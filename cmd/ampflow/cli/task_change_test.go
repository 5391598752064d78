package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

func TestTaskCancel(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, "", nil, "task", "cancel", "T-2026-003", "--reason", "superseded")
		wantExit(t, r, ExitOK)
		if r.stdout != "task T-2026-003 cancelled; status terminated\n" ||
			len(f.cancelled) != 1 || f.cancelled[0] != (task.CancelInput{Reason: "superseded"}) {
			t.Errorf("stdout %q, cancelled %+v", r.stdout, f.cancelled)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", nil, "task", "cancel", "T-2026-003", "--reason", "x", "-o", "json")
		wantExit(t, r, ExitOK)
		if r.stdout != `{"task_id":"T-2026-003","status":"terminated"}`+"\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
	})
	t.Run("Finished", func(t *testing.T) {
		f := &fakeTasks{changeErr: task.Errorf(task.CodeFinished, "task T-2026-003 is already done")}
		r := runFake(t, f, "", nil, "task", "cancel", "T-2026-003", "--reason", "x")
		wantExit(t, r, ExitFailed)
		if r.stderr != "ampflow: task T-2026-003 is already done\n" {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
	t.Run("NoReason", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, "", nil, "task", "cancel", "T-2026-003")
		wantExit(t, r, ExitUsage)
		if len(f.Calls()) != 0 {
			t.Errorf("calls = %q", f.Calls())
		}
	})
}

func TestTaskReplan(t *testing.T) {
	want := []amp.Subtask{{SubtaskID: "S2a", Description: "Move the timer", EstimatedLines: 40}, {SubtaskID: "S2b", Description: "Tests", EstimatedLines: 10}}
	forms := map[string]string{
		"YAMLList":   "- subtask_id: S2a\n  description: Move the timer\n  estimated_lines: 40\n- {subtask_id: S2b, description: Tests, estimated_lines: 10}\n",
		"YAMLObject": "subtasks:\n  - subtask_id: S2a\n    description: Move the timer\n    estimated_lines: 40\n  - subtask_id: S2b\n    description: Tests\n    estimated_lines: 10\n",
		"JSONList":   `[{"subtask_id":"S2a","description":"Move the timer","estimated_lines":40},{"subtask_id":"S2b","description":"Tests","estimated_lines":10}]`,
	}
	for name, in := range forms {
		t.Run(name, func(t *testing.T) {
			f := &fakeTasks{}
			r := runFake(t, f, in, nil, "task", "replan", "T-2026-003", "-f", "-", "--note", "split S2")
			wantExit(t, r, ExitOK)
			if len(f.replanned) != 1 {
				t.Fatalf("replanned %d times", len(f.replanned))
			}
			got := f.replanned[0]
			gotJSON, _ := json.Marshal(got.Subtasks)
			wantJSON, _ := json.Marshal(want)
			if string(gotJSON) != string(wantJSON) || got.Note != "split S2" || got.By != "" {
				t.Errorf("replan input %+v", got)
			}
			if r.stdout != "task T-2026-003 replanned with 2 subtasks; status awaiting_approval\n" {
				t.Errorf("stdout = %q", r.stdout)
			}
		})
	}
	invalid := []struct{ name, in, want string }{
		{"MissingField", "- subtask_id: S1\n  estimated_lines: 3\n", "invalid subtasks: subtasks[0].description: required"},
		{"UnknownField", "- subtask_id: S1\n  description: x\n  estimated_lines: 3\n  owner: bo\n", "subtasks[0].owner: unknown field"},
		{"ExtraKey", "subtasks: []\nnote: x\n", "note: unknown field; expected only subtasks"},
		{"Empty", "[]", "subtasks:"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTasks{}
			r := runFake(t, f, tt.in, nil, "task", "replan", "T-2026-003", "-f", "-")
			wantExit(t, r, ExitFailed)
			if !strings.Contains(r.stderr, tt.want) || len(f.Calls()) != 0 {
				t.Errorf("stderr %q (want %q), calls %q", r.stderr, tt.want, f.Calls())
			}
		})
	}
	t.Run("Refused", func(t *testing.T) {
		f := &fakeTasks{changeErr: task.Errorf(task.CodeUnexpected, "task T-2026-003 is in_progress: replan is taken while locked or awaiting plan approval")}
		r := runFake(t, f, forms["JSONList"], nil, "task", "replan", "T-2026-003", "-f", "-")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "replan is taken while locked") {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
}

func TestCommandHelp(t *testing.T) {
	commands := [][]string{
		{"task", "start"}, {"task", "list"}, {"task", "show"}, {"task", "history"}, {"task", "cancel"}, {"task", "replan"},
		{"msg", "show"}, {"inbox"}, {"ack"}, {"send"}, {"heartbeat"}, {"pending"}, {"decide"},
	}
	for _, c := range commands {
		r := runFake(t, &fakeTasks{}, "", nil, append(c, "--help")...)
		if r.code != ExitOK || !strings.Contains(r.stdout, "Examples:\n  ampflow "+c[0]) || !strings.Contains(r.stdout, "--output") {
			t.Errorf("%q --help: exit %d, stdout %q", c, r.code, r.stdout)
		}
	}
	r := runFake(t, &fakeTasks{}, "", nil, "--help")
	for _, want := range []string{"Coordinator commands:", "Agent commands:", "Admin commands:", "inbox", "decide", "task"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ampflow --help lacks %q", want)
		}
	}
}
