package toolcalls

import (
	"context"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// fakeRepos holds one task's repository and that repository's tool-call
// records.
type fakeRepos struct {
	repo string
	recs []ssot.Record
}

func (f fakeRepos) Task(_ context.Context, id string) (ssot.TaskState, error) {
	return ssot.TaskState{TaskID: id, Repo: f.repo}, nil
}

func (f fakeRepos) RepoRecords(_ context.Context, repo, kind, _ string) ([]ssot.Record, error) {
	if repo != f.repo || kind != task.RecordToolCall {
		return nil, nil
	}
	return f.recs, nil
}

// TestAllowedForRepo: a destination the admins allowed for the
// repository is let through, naming who and which answer; another
// destination, or one allowed for the task alone, is still asked.
func TestAllowedForRepo(t *testing.T) {
	h := &Handlers{o: Options{Repos: fakeRepos{repo: "/srv/a", recs: []ssot.Record{
		{ID: "T-2026-001-tc3.outcome", Body: []byte(`{"id":"T-2026-001-tc3","kind":"network","option":"allow_tool","by":"bob","input":"{\"host\":\"10.0.0.8\",\"port\":\"80\"}"}`)},
		{ID: "T-2026-001-tc2.outcome", Body: []byte(`{"id":"T-2026-001-tc2","kind":"network","option":"allow_repo","by":"alice","input":"{\"host\":\"10.0.0.7\",\"port\":\"8080\"}"}`)},
	}}}}
	ask := func(host, port string) task.ToolCall {
		c := task.ToolCall{CLI: "egress", Tool: "connect", Kind: "network", Action: "ask", Rule: "ask-egress",
			Input: `{"host":"` + host + `","port":"` + port + `"}`}
		h.allowedForRepo(context.Background(), "T-2026-009", &c)
		return c
	}
	if c := ask("10.0.0.7", "8080"); c.Action != "allow" || c.Rule != RuleAllowedForRepo || c.Reason != "alice allowed 10.0.0.7:8080 for every task of /srv/a (T-2026-001-tc2)" {
		t.Errorf("the allowed destination: %+v", c)
	}
	for _, d := range [][2]string{{"10.0.0.7", "8081"}, {"10.0.0.8", "80"}} {
		if c := ask(d[0], d[1]); c.Action != "ask" || c.Rule != "ask-egress" {
			t.Errorf("%s still asked: %+v", d, c)
		}
	}
}
