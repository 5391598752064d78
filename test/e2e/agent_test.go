package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workers"
	"github.com/ampflow/ampflow/workflows"
)

// dial connects a task client to a dev process, with the API key it keeps
// in its data directory.
func dial(t *testing.T, p *devProc) *workflows.Client {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(p.dataDir, workers.TemporalKeyFile))
	if err != nil {
		t.Fatalf("reading the dev server's API key: %v", err)
	}
	c, err := workers.Dial(context.Background(), config.Temporal{Address: p.temporal, Namespace: "default", APIKey: strings.TrimSpace(string(key))}, nil, nil, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &workflows.Client{Temporal: c, TaskQueue: "ampflow", Wait: 20 * time.Second, DecisionKey: decisionKey(t, p)}
}

// decisionKey is the decision key `ampflow dev` keeps in p's data_dir.
func decisionKey(t *testing.T, p *devProc) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dataDir, workers.DecisionKeyFile))
	if err != nil {
		t.Fatalf("reading the decision key ampflow dev made: %v", err)
	}
	k, err := decision.ParseKey(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func lowRiskPlan(repo string) amp.TaskDispatch {
	return amp.TaskDispatch{
		Description:        "Add a greeting file",
		Repo:               repo,
		Branch:             "feature/e2e",
		Subtasks:           []amp.Subtask{{SubtaskID: "S1", Description: "write hello.txt", EstimatedLines: 1}},
		AcceptanceCriteria: []string{"hello.txt says hello"},
		RiskLevel:          amp.RiskLow,
	}
}

// agent plays an executor or reviewer through a task client.
type agent struct {
	t     *testing.T
	tasks workflows.Tasks
	repo  string
}

// next waits for the message of taskID in role's inbox.
func (a *agent) next(role amp.Role, taskID string, typ amp.Type) amp.Message {
	a.t.Helper()
	var got amp.Message
	eventually(a.t, 30*time.Second, fmt.Sprintf("%s in the %s inbox of %s", typ, role, taskID), func() (bool, error) {
		msgs, err := a.tasks.Inbox(context.Background(), role)
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			if m.TaskID == taskID && m.Type == typ {
				got = m
				return true, nil
			}
		}
		return false, nil
	})
	return got
}

func (a *agent) ack(m amp.Message) {
	a.t.Helper()
	if _, err := a.tasks.Ack(context.Background(), m.MsgID, m.To); err != nil {
		a.t.Fatalf("ACK of %s: %v", m.MsgID, err)
	}
}

func (a *agent) send(m amp.Message) task.SubmitResult {
	a.t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		a.t.Fatal(err)
	}
	res, err := a.tasks.Submit(context.Background(), raw)
	if err != nil {
		a.t.Fatalf("sending %s: %v", m.MsgID, err)
	}
	return res
}

// work commits a change on the branch and reports it truthfully.
func (a *agent) work(d amp.Message, file, body string) amp.Message {
	a.t.Helper()
	writeFile(a.t, a.repo+"/"+file, body)
	git(a.t, a.repo, "add", file)
	git(a.t, a.repo, "commit", "-q", "-m", "work on "+d.Dispatch().Subtasks[0].SubtaskID)
	commit := git(a.t, a.repo, "rev-parse", "HEAD")
	files, added, removed := numstat(a.t, a.repo)
	yes := true
	p := &amp.TaskResult{
		SubtaskID:        d.Dispatch().Subtasks[0].SubtaskID,
		CompletionStatus: amp.StatusComplete,
		DiffSummary:      amp.DiffSummary{FilesChanged: files, LinesAdded: added, LinesRemoved: removed},
		SelfAssessment:   amp.SelfAssessment{CriteriaMet: []*bool{&yes}, Notes: []string{"done"}},
		WorkLog:          []amp.WorkLogEntry{{Timestamp: time.Now().UTC().Format(time.RFC3339), Action: "write", File: file, Detail: "wrote it"}},
		CommitHash:       commit,
	}
	return amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, d.TaskID, time.Now(), p)
}

func numstat(t *testing.T, repo string) (files []string, added, removed int) {
	t.Helper()
	cmd := exec.Command("git", "diff", "--numstat", "main...HEAD")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		a, _ := strconv.Atoi(f[0])
		r, _ := strconv.Atoi(f[1])
		added, removed = added+a, removed+r
		files = append(files, f[2])
	}
	return files, added, removed
}

func (a *agent) verdict(req amp.Message, d amp.Decision) amp.Message {
	yes := true
	p := &amp.ReviewVerdict{
		Decision:        d,
		CriteriaResults: []amp.CriterionResult{{Criterion: "hello.txt says hello", Passed: &yes, Evidence: "read the diff"}},
		Confidence:      0.95,
	}
	if d == amp.DecisionRejected {
		no := false
		p.CriteriaResults[0].Passed = &no
		p.Issues = []amp.Issue{{Severity: amp.SeverityMajor, File: "hello.txt", Line: 1, Description: "says hi, not hello", SuggestedFix: "write hello"}}
	}
	return amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, req.TaskID, time.Now(), p)
}

// waitStatus waits until the task reaches status.
func waitStatus(t *testing.T, tasks workflows.Tasks, taskID string, want task.Status) task.State {
	t.Helper()
	var st task.State
	eventually(t, 60*time.Second, fmt.Sprintf("task %s %s", taskID, want), func() (bool, error) {
		var err error
		st, err = tasks.State(context.Background(), taskID)
		return err == nil && (st.Status == want || st.UnderlyingStatus == want), err
	})
	return st
}
