package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestTaskStartOneLine: a task said in one line is a whole plan, its
// branch made by the worker when missing, with no file.
func TestTaskStartOneLine(t *testing.T) {
	t.Run("Plan", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-007", states: []task.State{{Status: task.StatusDispatched}}}
		r := runFake(t, f, "", nil, "task", "start", "Add MemberCount to Dial", "--repo", "dial",
			"--criteria", "Dial has MemberCount", "--criteria", "go test passes", "--risk", "medium",
			"--external-id", "PROJ-7", "--source", "jira")
		wantExit(t, r, ExitOK)
		if got := lastLine(r.stdout); got != "T-2026-007" {
			t.Errorf("last stdout line = %q", got)
		}
		in := f.started[0]
		abs, _ := filepath.Abs("dial")
		p := in.Plan
		if p.Repo != abs || p.Branch != "ampflow/add-membercount-to-dial" || p.Description != "Add MemberCount to Dial" ||
			len(p.Subtasks) != 1 || p.Subtasks[0].SubtaskID != "S1" || p.RiskLevel != amp.RiskMedium ||
			strings.Join(p.AcceptanceCriteria, "|") != "Dial has MemberCount|go test passes" {
			t.Errorf("plan = %+v", p)
		}
		if !in.CreateBranch {
			t.Error("a one-line start does not ask for its branch to be made")
		}
		if o := in.Origin; o == nil || o.Source != "jira" || o.ExternalID != "PROJ-7" {
			t.Errorf("origin = %+v, want jira PROJ-7", o)
		}
	})
	t.Run("URL", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-009", states: []task.State{{Status: task.StatusDispatched}}}
		wantExit(t, runFake(t, f, "", nil, "task", "start", "Add it", "--repo", "git@github.com:o/r.git"), ExitOK)
		if got := f.started[0].Plan.Repo; got != "git@github.com:o/r.git" {
			t.Errorf("plan.repo = %q, want the URL as given", got)
		}
	})
	t.Run("URLOfAnotherScheme", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, "", nil, "task", "start", "Add it", "--repo", "ftp://host/r.git")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "plan.repo") || len(f.started) != 0 {
			t.Errorf("stderr = %q, started %+v; want plan.repo refused", r.stderr, f.started)
		}
	})
	t.Run("FileMakesAMissingBranch", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-008", states: []task.State{{Status: task.StatusDispatched}}}
		wantExit(t, runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.json"), ExitOK)
		if !f.started[0].CreateBranch || f.started[0].Origin != nil {
			t.Errorf("a start from a file asks %+v", f.started[0])
		}
	})
	for name, args := range map[string][]string{
		"NoRepo":       {"Add it"},
		"Both":         {"Add it", "--repo", ".", "-f", "testdata/plan.json"},
		"RepoWithFile": {"-f", "testdata/plan.json", "--repo", "."},
		"Risk":         {"Add it", "--repo", ".", "--risk", "huge"},
		"Empty":        {" ", "--repo", "."},
		"SourceAlone":  {"Add it", "--repo", ".", "--source", "jira"},
		"BadSource":    {"Add it", "--repo", ".", "--external-id", "x", "--source", "Jira!"},
		"TwoArgs":      {"Add", "it", "--repo", "."},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeTasks{}
			wantExit(t, runFake(t, f, "", nil, append([]string{"task", "start"}, args...)...), ExitUsage)
			if len(f.started) != 0 {
				t.Errorf("started %+v", f.started)
			}
		})
	}
}
