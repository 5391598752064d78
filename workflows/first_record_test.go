package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// TestFirstRecordIsTheWorkflows checks that the plan record a client
// writes when a start is taken is, byte for byte in canonical form, the
// one the workflow writes first: the store keeps one and the workflow's
// write changes nothing.
func TestFirstRecordIsTheWorkflows(t *testing.T) {
	worker := NewPolicy(config.Default())
	worker.Admins = []string{"alice", "bob"}
	worker.EscalationAdmins = []string{}
	for _, h := range []task.Handling{"", task.HandlingAuto, task.HandlingAdmin} {
		name := string(h)
		if name == "" {
			name = "none"
		}
		t.Run("Handling_"+name, func(t *testing.T) {
			h2 := newHarness(t, testPlan(amp.RiskMedium, "S1", "S2"), func(in *task.Input) {
				in.Policy = loosePolicy() // a client's policy: neither path keeps it
				in.Handling = h
			})
			h2.workerPolicy = func() (task.Policy, error) { return worker, nil }
			// The branch check refuses the task: the plan record is written
			// before it, and the run ends at once.
			h2.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
				return activities.CheckBranchResult{}, errors.New("no such branch")
			}
			h2.runRefused()
			wrote, _ := h2.firstRecord()

			at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			first, err := FirstRecord(h2.in, worker, at)
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Entries) != 1 || first.Entries[0].ID != wrote.ID || first.Entries[0].Kind != wrote.Kind {
				t.Fatalf("first record %+v, want one entry %s (%s)", first.Entries, wrote.ID, wrote.Kind)
			}
			got, err := ssot.Canonical(first.Entries[0].Body)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ssot.Canonical(wrote.Body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the client's plan record\n%s\nthe workflow's\n%s", got, want)
			}
			if first.Rev != 0 {
				t.Errorf("rev %d, want 0: the workflow's first write (rev 1) replaces it", first.Rev)
			}
			var st task.State
			if err := json.Unmarshal(first.Task, &st); err != nil {
				t.Fatal(err)
			}
			if st.TaskID != testTaskID || st.Status != task.StatusAwaitingApproval || !st.StartedAt.Equal(at) ||
				len(st.Subtasks) != 2 || st.Timeline == nil {
				t.Errorf("first state %+v, want %s awaiting approval since %s with its 2 subtasks", st, testTaskID, at)
			}
		})
	}
}
