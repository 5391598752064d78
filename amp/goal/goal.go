// Package goal is the shape of a goal: a graph of tasks that run in
// parallel where their dependencies allow, each a task as `task start`
// takes it, on its own branch.
package goal

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
)

// Bounds of a goal.
const (
	MaxTasks       = 50   // tasks in one goal
	MaxBlockedBy   = 20   // blockers of one task
	MaxDescription = 4000 // bytes of the goal's description
	MaxKey         = 40   // bytes of a task's key
)

// Goal is a checked goal: what its workflow runs.
type Goal struct {
	// ID names the goal; its workflow is WorkflowID(ID).
	ID          string `json:"id"`
	Description string `json:"description"`
	// Repo is the repository every task works in unless its plan names
	// another.
	Repo string `json:"repo"`
	// Target is the branch the tasks' work goes to; empty is the
	// repository's default branch, found when the goal starts.
	Target string `json:"target,omitempty"`
	Tasks  []Task `json:"tasks"`
}

// Task is one node of the graph.
type Task struct {
	// Key names the task in the goal (lower-case letters, digits, - and _).
	Key string `json:"key"`
	// Plan is the task's plan as `task start` takes it; its repo defaults
	// to the goal's, its branch to Branch(goal id, key).
	Plan amp.TaskDispatch `json:"plan"`
	// BlockedBy are the keys of the tasks that must be done before this
	// one starts.
	BlockedBy []string `json:"blocked_by,omitempty"`
}

// file is a goal as written: its plans are checked as AMP payloads.
type file struct {
	Description string     `json:"description"`
	Repo        string     `json:"repo"`
	Target      string     `json:"target"`
	Tasks       []fileTask `json:"tasks"`
}

type fileTask struct {
	Key       string          `json:"key"`
	Plan      json.RawMessage `json:"plan"`
	BlockedBy []string        `json:"blocked_by"`
}

var (
	keyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	idPattern  = regexp.MustCompile(`^G-[0-9a-f]{8}$`)
)

// WorkflowID is the id of goal id's workflow.
func WorkflowID(id string) string { return "goal-" + id }

// Branch is the branch a task of a goal works on when its plan names none.
func Branch(goalID, key string) string { return "goal/" + goalID + "/" + key }

// NewID returns a fresh goal id, G- and eight hex digits.
func NewID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "G-" + hex.EncodeToString(b)
}

// ValidID says whether id is a goal id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Parse reads a goal file (JSON; the CLI turns YAML into it) under id:
// each plan gets its defaults (the goal's repo, the branch named after
// the goal and the key) and is checked as a task_dispatch payload, then
// the graph is checked (Check). Every problem is a field error of the
// returned *amp.ValidationError, named from the file's root
// (tasks[2].blocked_by[0]).
func Parse(raw []byte, id string, now time.Time) (Goal, error) {
	var f file
	if err := json.Unmarshal(raw, &f); err != nil {
		return Goal{}, &amp.ValidationError{Fields: []amp.FieldError{{Path: "goal", Problem: "is not a goal object: " + err.Error()}}}
	}
	g := Goal{ID: id, Description: f.Description, Repo: f.Repo, Target: f.Target}
	var bad []amp.FieldError
	if len(f.Tasks) > MaxTasks {
		// The graph is not read past its bound.
		return Goal{}, &amp.ValidationError{Fields: []amp.FieldError{{Path: "tasks", Problem: fmt.Sprintf("has %d tasks, at most %d", len(f.Tasks), MaxTasks)}}}
	}
	for i, ft := range f.Tasks {
		t := Task{Key: ft.Key, BlockedBy: ft.BlockedBy}
		path := fmt.Sprintf("tasks[%d].plan", i)
		plan, err := fillPlan(ft.Plan, f.Repo, Branch(id, ft.Key))
		if err != nil {
			bad = append(bad, amp.FieldError{Path: path, Problem: err.Error()})
			g.Tasks = append(g.Tasks, t)
			continue
		}
		m, err := amp.Wrap(plan, amp.RoleCoordinator, amp.RoleExecutor, fmt.Sprintf("T-%04d-001", now.Year()), now, amp.TypeTaskDispatch)
		if err != nil {
			bad = append(bad, payloadFields(err, path)...)
		} else {
			t.Plan = *m.Dispatch()
		}
		g.Tasks = append(g.Tasks, t)
	}
	if err := Check(g); err != nil {
		bad = append(bad, err.(*amp.ValidationError).Fields...)
	}
	if len(bad) > 0 {
		return Goal{}, &amp.ValidationError{Fields: bad}
	}
	return g, nil
}

// IsDraft says whether a goal file lists no tasks: a description (with
// its repo and target) for the planner to propose a graph for.
func IsDraft(raw []byte) bool {
	var f struct {
		Tasks json.RawMessage `json:"tasks"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return false
	}
	t := strings.TrimSpace(string(f.Tasks))
	return t == "" || t == "null" || t == "[]"
}

// ParseDraft reads a goal file that lists no tasks under id and checks
// it (CheckDraft): the planner proposes its graph.
func ParseDraft(raw []byte, id string) (Goal, error) {
	var f file
	if err := json.Unmarshal(raw, &f); err != nil {
		return Goal{}, &amp.ValidationError{Fields: []amp.FieldError{{Path: "goal", Problem: "is not a goal object: " + err.Error()}}}
	}
	g := Goal{ID: id, Description: f.Description, Repo: f.Repo, Target: f.Target, Tasks: []Task{}}
	if len(f.Tasks) > 0 {
		return Goal{}, &amp.ValidationError{Fields: []amp.FieldError{{Path: "tasks", Problem: "must be empty: the planner proposes them"}}}
	}
	if err := CheckDraft(g); err != nil {
		return Goal{}, err
	}
	return g, nil
}

// fillPlan gives plan the goal's repo and the task's branch where it
// names none.
func fillPlan(plan json.RawMessage, repo, branch string) ([]byte, error) {
	var m map[string]any
	if len(plan) == 0 || json.Unmarshal(plan, &m) != nil || m == nil {
		return nil, fmt.Errorf("must be a task plan (a task_dispatch payload)")
	}
	if v, ok := m["repo"].(string); !ok || v == "" {
		m["repo"] = repo
	}
	if v, ok := m["branch"].(string); !ok || v == "" {
		m["branch"] = branch
	}
	return json.Marshal(m)
}

// payloadFields renames amp's payload errors to the plan's path.
func payloadFields(err error, path string) []amp.FieldError {
	ve, ok := err.(*amp.ValidationError)
	if !ok {
		return []amp.FieldError{{Path: path, Problem: err.Error()}}
	}
	var out []amp.FieldError
	for _, f := range ve.Fields {
		if rest, ok := cutPayload(f.Path); ok {
			out = append(out, amp.FieldError{Path: path + rest, Problem: f.Problem})
		}
	}
	if len(out) == 0 {
		out = append(out, amp.FieldError{Path: path, Problem: ve.Error()})
	}
	return out
}

func cutPayload(p string) (string, bool) {
	const pre = "payload"
	if len(p) < len(pre) || p[:len(pre)] != pre {
		return "", false
	}
	rest := p[len(pre):]
	if rest != "" && rest[0] != '.' && rest[0] != '[' {
		return "", false
	}
	return rest, true
}
