package activities

import (
	"encoding/json"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities/ssot"
)

func TestActivitiesThroughTemporal(t *testing.T) {
	r := buildFeatureRepo(t)
	store := newSSOT(t)
	a := &Activities{Git: &Git{Diffs: store}, Store: store}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)

	t.Run("CheckBranch", func(t *testing.T) {
		val, err := env.ExecuteActivity(a.CheckBranch, CheckBranchInput{Repo: r.dir, Branch: "feature/x"})
		var res CheckBranchResult
		if err == nil {
			err = val.Get(&res)
		}
		if err != nil || res.DefaultBranch != "main" || res.Head != r.feature {
			t.Fatalf("got %+v, %v", res, err)
		}
		_, err = env.ExecuteActivity(a.CheckBranch, CheckBranchInput{Repo: r.dir, Branch: "main"})
		appErr(t, err, ErrProtectedBranch, true)
		_, err = env.ExecuteActivity(a.CheckBranch, CheckBranchInput{Repo: r.dir, Branch: "feature/gone"})
		appErr(t, err, ErrBranchMissing, true)
		_, err = env.ExecuteActivity(a.CheckBranch, CheckBranchInput{Repo: t.TempDir(), Branch: "feature/x"})
		appErr(t, err, ErrNotWorkTree, true)
	})
	t.Run("CheckResult", func(t *testing.T) {
		in := CheckResultInput{TaskID: "T-2026-001", MsgID: "task_result-T-2026-001-5", Repo: r.dir, Branch: "feature/x", DefaultBranch: "main",
			Claimed: diffSum([]string{"Sources/BreathEngine.swift"}, 68, 1)}
		val, err := env.ExecuteActivity(a.CheckResult, in)
		var out CheckResultOutput
		if err == nil {
			err = val.Get(&out)
		}
		if err != nil || out.Commit != r.feature || len(out.Mismatches) != 3 || out.Violation != "" || out.DiffURL == "" {
			t.Fatalf("got %+v, %v", out, err)
		}
		in.Commit = r.mainHead
		val, err = env.ExecuteActivity(a.CheckResult, in)
		if err == nil {
			err = val.Get(&out)
		}
		if err != nil || out.Violation == "" {
			t.Fatalf("a commit on main: %+v, %v", out, err)
		}
		in.Commit = "0123456789abcdef"
		_, err = env.ExecuteActivity(a.CheckResult, in)
		appErr(t, err, ErrCommitMissing, true)
	})
	t.Run("Record", func(t *testing.T) {
		in := RecordInput{TaskID: "T-2026-001", Entries: []RecordEntry{entry("ack-T-2026-001-7", ssot.KindAck, `{"ack_of":"x"}`)}, Task: json.RawMessage(`{"status":"dispatched"}`), Rev: 1}
		for want := 1; want >= 0; want-- {
			val, err := env.ExecuteActivity(a.Record, in)
			var res RecordResult
			if err == nil {
				err = val.Get(&res)
			}
			if err != nil || res.Written != want {
				t.Fatalf("got %+v, %v; want %d written", res, err, want)
			}
		}
		in.Entries[0].Body = json.RawMessage(`{"ack_of":"y"}`)
		_, err := env.ExecuteActivity(a.Record, in)
		appErr(t, err, ErrRecordConflict, true)
	})
}
