package e2e

import (
	"context"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestKillAndRestart kills `ampflow dev` with SIGKILL mid-task, twice, and
// restarts it on the same data dir: the task goes on to done, with every
// message recorded once.
func TestKillAndRestart(t *testing.T) {
	dataDir := t.TempDir()
	p := startDev(t, dataDir)
	repo := gitRepo(t)
	tasks := dial(t, p)
	a := &agent{t: t, tasks: tasks, repo: repo}
	const id = "T-2026-901"
	if err := tasks.Start(context.Background(), task.Input{TaskID: id, Plan: lowRiskPlan(repo)}); err != nil {
		t.Fatal(err)
	}
	d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
	a.ack(d)

	p.kill()
	p.restart()
	a.tasks = dial(t, p)

	// The dispatch was ACKed before the crash: it is not sent again.
	waitStatus(t, a.tasks, id, task.StatusInProgress)
	a.send(a.work(d, "hello.txt", "hello\n"))
	req := a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)

	p.kill()
	p.restart()
	a.tasks = dial(t, p)

	a.ack(req)
	a.send(a.verdict(req, amp.DecisionApproved))
	st := waitStatus(t, a.tasks, id, task.StatusDone)

	if st.Rounds != 1 {
		t.Errorf("rounds %d, want 1: a crash must not redispatch", st.Rounds)
	}
	p.stop()
	hist := ssotHistory(t, dataDir, id)
	if _, err := openSSOT(t, dataDir).Verify(context.Background(), id); err != nil {
		t.Errorf("the chain of %s does not verify after the crash: %v", id, err)
	}
	seen := map[string]int{}
	types := map[string]int{}
	for _, r := range hist {
		seen[r.ID]++
		if r.Kind == string(ssot.KindMessage) {
			if typ, _, ok := amp.ParseMsgID(r.ID); ok {
				types[string(typ)]++
			}
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("record %s appears %d times in the SSOT", id, n)
		}
	}
	for typ, want := range map[string]int{"task_dispatch": 1, "task_result": 1, "review_request": 1, "review_verdict": 1} {
		if types[typ] != want {
			t.Errorf("%d %s records in the SSOT, want %d", types[typ], typ, want)
		}
	}
	for _, e := range st.Timeline {
		if e.MsgID != "" && e.Kind == "message" && seen[e.MsgID] != 1 {
			t.Errorf("message %s of the timeline is not in the SSOT once", e.MsgID)
		}
	}
}
