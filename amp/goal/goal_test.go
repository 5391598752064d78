package goal

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func plan(desc string) map[string]any {
	return map[string]any{
		"description":         desc,
		"subtasks":            []any{map[string]any{"subtask_id": "1", "description": desc, "estimated_lines": 10}},
		"acceptance_criteria": []any{desc + " works"},
		"risk_level":          "low",
	}
}

func goalFile(tasks ...map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"description": "ship it", "repo": "/src/app", "tasks": tasks})
	return b
}

func node(key string, blockedBy ...string) map[string]any {
	m := map[string]any{"key": key, "plan": plan("do " + key)}
	if len(blockedBy) > 0 {
		m["blocked_by"] = blockedBy
	}
	return m
}

func fields(t *testing.T, err error) []string {
	t.Helper()
	var ve *amp.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a ValidationError", err)
	}
	var out []string
	for _, f := range ve.Fields {
		out = append(out, f.String())
	}
	return out
}

func TestParseDiamond(t *testing.T) {
	g, err := Parse(goalFile(node("schema"), node("api", "schema"), node("ui", "schema"), node("docs", "api", "ui")), "G-0000abcd", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Tasks) != 4 || g.Tasks[3].Key != "docs" {
		t.Fatalf("tasks: %+v", g.Tasks)
	}
	if p := g.Tasks[1].Plan; p.Repo != "/src/app" || p.Branch != "goal/G-0000abcd/api" {
		t.Errorf("plan defaults: repo %q branch %q", p.Repo, p.Branch)
	}
}

func TestParseKeepsPlanRepoAndBranch(t *testing.T) {
	n := node("one")
	n["plan"].(map[string]any)["repo"] = "/src/other"
	n["plan"].(map[string]any)["branch"] = "feature/one"
	g, err := Parse(goalFile(n), "G-0000abcd", now)
	if err != nil {
		t.Fatal(err)
	}
	if p := g.Tasks[0].Plan; p.Repo != "/src/other" || p.Branch != "feature/one" {
		t.Errorf("plan: repo %q branch %q", p.Repo, p.Branch)
	}
}

func TestParseRefuses(t *testing.T) {
	many := make([]map[string]any, MaxTasks+1)
	for i := range many {
		many[i] = node(fmt.Sprintf("t%d", i))
	}
	badPlan := node("b")
	delete(badPlan["plan"].(map[string]any), "acceptance_criteria")
	for name, tc := range map[string]struct {
		raw  []byte
		want string
	}{
		"Cycle":        {goalFile(node("a", "b"), node("b", "a")), "tasks[0].blocked_by: tasks a → b → a form a cycle"},
		"LongCycle":    {goalFile(node("x"), node("a", "c", "x"), node("b", "a"), node("c", "b")), "tasks[1].blocked_by: tasks a → c → b → a form a cycle"},
		"BadEdge":      {goalFile(node("a"), node("b"), node("c", "zz")), `tasks[2].blocked_by[0]: "zz" names no task of the goal`},
		"SelfEdge":     {goalFile(node("a", "a")), `tasks[0].blocked_by[0]: "a" is the task itself`},
		"DuplicateKey": {goalFile(node("a"), node("a")), `tasks[1].key: "a" is the key of tasks[0] too`},
		"BadKey":       {goalFile(node("A b")), `tasks[0].key: "A b" must be lower-case letters`},
		"TooMany":      {goalFile(many...), fmt.Sprintf("tasks: has %d tasks, at most %d", MaxTasks+1, MaxTasks)},
		"NoTasks":      {goalFile(), "tasks: needs at least one task"},
		"BadPlan":      {goalFile(node("a"), badPlan), "tasks[1].plan.acceptance_criteria"},
		"NotObject":    {[]byte(`[1]`), "goal: is not a goal object"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.raw, "G-0000abcd", now)
			got := fields(t, err)
			if !strings.HasPrefix(strings.Join(got, "\n"), tc.want) && !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("errors:\n%s\nwant one starting %q", strings.Join(got, "\n"), tc.want)
			}
		})
	}
}

func TestCheckNeedsDescriptionAndRepo(t *testing.T) {
	got := fields(t, Check(Goal{Tasks: []Task{{Key: "a"}}}))
	want := []string{"description: is required", "repo: is required"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors %q, want %q", got, want)
	}
}

func TestIDs(t *testing.T) {
	id := NewID()
	if !ValidID(id) || ValidID("G-xyz") {
		t.Errorf("ValidID(%q) = false", id)
	}
	if WorkflowID(id) != "goal-"+id {
		t.Error(WorkflowID(id))
	}
}

// TestDraft: a file without tasks is a draft for the planner, checked
// for what it has.
func TestDraft(t *testing.T) {
	cases := []struct {
		name, file string
		draft      bool
		problem    string
	}{
		{"NoTasks", `{"description": "ship it", "repo": "/src/app"}`, true, ""},
		{"EmptyTasks", `{"description": "ship it", "repo": "/src/app", "target": "dev", "tasks": []}`, true, ""},
		{"NoRepo", `{"description": "ship it"}`, true, "repo: is required"},
		{"BadTarget", `{"description": "ship it", "repo": "/src/app", "target": "a b"}`, true, "target:"},
		{"Tasks", string(goalFile(node("a"))), false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsDraft([]byte(c.file)); got != c.draft {
				t.Fatalf("IsDraft = %v", got)
			}
			if !c.draft {
				return
			}
			g, err := ParseDraft([]byte(c.file), "G-0000abcd")
			if c.problem != "" {
				if err == nil || !strings.Contains(err.Error(), c.problem) {
					t.Fatalf("err %v, want %q", err, c.problem)
				}
				return
			}
			if err != nil || g.ID != "G-0000abcd" || g.Tasks == nil || len(g.Tasks) != 0 || g.Description != "ship it" {
				t.Fatalf("%+v %v", g, err)
			}
		})
	}
}
