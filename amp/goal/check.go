package goal

import (
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/amp"
)

// Check checks a goal's graph: a description and a repository, one to
// MaxTasks tasks with unique keys, every blocked_by naming another task
// of the goal, and no cycle (named in the error: "tasks a → b → a form a
// cycle", an arrow reading "waits on"). Its error is an
// *amp.ValidationError naming each field at fault.
func Check(g Goal) error {
	bad := checkHead(g)
	add := func(path, format string, args ...any) {
		bad = append(bad, amp.FieldError{Path: path, Problem: fmt.Sprintf(format, args...)})
	}
	switch {
	case len(g.Tasks) == 0:
		add("tasks", "needs at least one task")
	case len(g.Tasks) > MaxTasks:
		add("tasks", "has %d tasks, at most %d", len(g.Tasks), MaxTasks)
		return &amp.ValidationError{Fields: bad}
	}
	index := map[string]int{}
	for i, t := range g.Tasks {
		path := fmt.Sprintf("tasks[%d].key", i)
		switch {
		case t.Key == "":
			add(path, "is required")
		case len(t.Key) > MaxKey:
			add(path, "is %d bytes, at most %d", len(t.Key), MaxKey)
		case !keyPattern.MatchString(t.Key):
			add(path, "%q must be lower-case letters, digits, - and _, starting with a letter or digit", t.Key)
		default:
			if j, ok := index[t.Key]; ok {
				add(path, "%q is the key of tasks[%d] too", t.Key, j)
			} else {
				index[t.Key] = i
			}
		}
		if g.Target != "" && t.Plan.Branch == g.Target {
			add(fmt.Sprintf("tasks[%d].plan.branch", i), "is the goal's target %q; a task works on a branch of its own", g.Target)
		}
	}
	edges := false
	for i, t := range g.Tasks {
		if len(t.BlockedBy) > MaxBlockedBy {
			add(fmt.Sprintf("tasks[%d].blocked_by", i), "has %d keys, at most %d", len(t.BlockedBy), MaxBlockedBy)
			continue
		}
		seen := map[string]bool{}
		for j, b := range t.BlockedBy {
			path := fmt.Sprintf("tasks[%d].blocked_by[%d]", i, j)
			_, known := index[b]
			switch {
			case b == t.Key:
				add(path, "%q is the task itself", b)
			case !known:
				add(path, "%q names no task of the goal", b)
			case seen[b]:
				add(path, "%q is listed twice", b)
			default:
				edges = true
			}
			seen[b] = true
		}
	}
	if len(bad) == 0 && edges {
		if cycle := findCycle(g); cycle != nil {
			add(fmt.Sprintf("tasks[%d].blocked_by", index[cycle[0]]), "tasks %s form a cycle", strings.Join(cycle, " → "))
		}
	}
	if len(bad) > 0 {
		return &amp.ValidationError{Fields: bad}
	}
	return nil
}

// CheckDraft checks a goal whose graph the planner is to propose: its
// description, repository and target, and no tasks.
func CheckDraft(g Goal) error {
	bad := checkHead(g)
	if len(g.Tasks) > 0 {
		bad = append(bad, amp.FieldError{Path: "tasks", Problem: "must be empty: the planner proposes them"})
	}
	if len(bad) > 0 {
		return &amp.ValidationError{Fields: bad}
	}
	return nil
}

// checkHead checks what every goal has besides its graph.
func checkHead(g Goal) []amp.FieldError {
	var bad []amp.FieldError
	add := func(path, format string, args ...any) {
		bad = append(bad, amp.FieldError{Path: path, Problem: fmt.Sprintf(format, args...)})
	}
	switch {
	case strings.TrimSpace(g.Description) == "":
		add("description", "is required")
	case len(g.Description) > MaxDescription:
		add("description", "is %d bytes, at most %d", len(g.Description), MaxDescription)
	}
	if strings.TrimSpace(g.Repo) == "" {
		add("repo", "is required")
	}
	if g.Target != "" && (strings.HasPrefix(g.Target, "-") || strings.ContainsAny(g.Target, " \t\n~^:?*[\\")) {
		add("target", "%q is not a branch name", g.Target)
	}
	return bad
}

// findCycle returns the keys of a cycle of waits, the first repeated at
// the end (a, b, a), or nil when the graph has none.
func findCycle(g Goal) []string {
	blockers := map[string][]string{}
	for _, t := range g.Tasks {
		blockers[t.Key] = t.BlockedBy
	}
	const (
		unseen = iota
		onPath
		finished
	)
	state := map[string]int{}
	var path []string
	var visit func(k string) []string
	visit = func(k string) []string {
		state[k] = onPath
		path = append(path, k)
		for _, b := range blockers[k] {
			switch state[b] {
			case onPath:
				for i, p := range path {
					if p == b {
						return append(append([]string{}, path[i:]...), b)
					}
				}
			case unseen:
				if c := visit(b); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[k] = finished
		return nil
	}
	for _, t := range g.Tasks {
		if state[t.Key] == unseen {
			if c := visit(t.Key); c != nil {
				return c
			}
		}
	}
	return nil
}
