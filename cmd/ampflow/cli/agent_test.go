package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

func TestSend(t *testing.T) {
	accepted := task.SubmitResult{MsgID: "task_result-T-2026-044-1740581280000", Status: task.StatusCICheck}
	t.Run("Envelope", func(t *testing.T) {
		f := &fakeTasks{submitRes: accepted}
		r := runFake(t, f, "", nil, "send", "-f", "testdata/result.json")
		wantExit(t, r, ExitOK)
		if r.stdout != "accepted task_result-T-2026-044-1740581280000; task T-2026-044 is ci_check\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
		want, _ := os.ReadFile("testdata/result.json")
		if len(f.submitted) != 1 || string(f.submitted[0]) != string(want) {
			t.Errorf("submitted %q, want the file as it is", f.submitted)
		}
	})
	t.Run("Duplicate", func(t *testing.T) {
		dup := accepted
		dup.Duplicate = true
		r := runFake(t, &fakeTasks{submitRes: dup}, "", nil, "send", "-f", "testdata/result.json", "-o", "json")
		wantExit(t, r, ExitOK)
		var out submitOutput
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.Duplicate || out.TaskID != "T-2026-044" || out.Status != task.StatusCICheck {
			t.Errorf("stdout %q: %v", r.stdout, err)
		}
		r = runFake(t, &fakeTasks{submitRes: dup}, "", nil, "send", "-f", "testdata/result.json")
		if !strings.HasPrefix(r.stdout, "duplicate: task_result-T-2026-044-1740581280000 was accepted before") {
			t.Errorf("stdout = %q", r.stdout)
		}
	})
	t.Run("BuiltFromPayload", func(t *testing.T) {
		f := &fakeTasks{submitRes: task.SubmitResult{MsgID: "x", Status: task.StatusCICheck}}
		r := runFake(t, f, "", nil, "send", "--type", "task_result", "--task", "T-2026-044", "-f", "testdata/result_payload.json")
		wantExit(t, r, ExitOK)
		if len(f.submitted) != 1 {
			t.Fatalf("submitted %d records", len(f.submitted))
		}
		m, err := amp.Parse(f.submitted[0])
		if err != nil {
			t.Fatalf("the built envelope is not valid: %v", err)
		}
		if m.From != amp.RoleExecutor || m.To != amp.RoleCoordinator || m.TaskID != "T-2026-044" ||
			m.MsgID != amp.MsgID(amp.TypeTaskResult, "T-2026-044", testNow) || !m.RequiresAck || m.Result().CommitHash != "a3f8d21" {
			t.Errorf("built %+v", m)
		}
	})
	t.Run("BuiltEscalation", func(t *testing.T) {
		f := &fakeTasks{submitRes: task.SubmitResult{MsgID: "x", Status: task.StatusSuspended}}
		payload := "escalation_type: conflict\nseverity: critical\ntriggered_by: reviewer\ndescription: Which API?\n" +
			"affected_msgs: []\nsystem_state_snapshot: {}\nauto_suspended: true\n"
		r := runFake(t, f, payload, nil, "send", "--type", "escalation", "--from", "reviewer", "--task", "T-2026-044", "-f", "-")
		wantExit(t, r, ExitOK)
		m, err := amp.Parse(f.submitted[0])
		if err != nil || m.From != amp.RoleReviewer || m.To != amp.RoleAdmin || m.RequiresAck {
			t.Errorf("built %+v: %v", m, err)
		}
	})
	t.Run("InvalidPayload", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, `{"subtask_id": "S1", "completion_status": "finished"}`, nil,
			"send", "--type", "task_result", "--task", "T-2026-044", "-f", "-")
		wantExit(t, r, ExitFailed)
		for _, want := range []string{"invalid payload:", "payload.completion_status:", "payload.diff_summary: required"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q: %q", want, r.stderr)
			}
		}
		if len(f.Calls()) != 0 {
			t.Errorf("calls = %q, want nothing sent", f.Calls())
		}
	})
	t.Run("InvalidEnvelope", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, `{"msg_id": "task_result-T-2026-044-1", "type": "task_result"}`, nil, "send", "-f", "-")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "invalid message: protocol_version: required") || len(f.Calls()) != 0 {
			t.Errorf("stderr %q, calls %q", r.stderr, f.Calls())
		}
	})
	t.Run("Refused", func(t *testing.T) {
		f := &fakeTasks{submitErr: &task.Error{Code: task.CodeConflict,
			Message: "msg_id task_result-T-2026-044-1740581280000 was used by a different record"}}
		r := runFake(t, f, "", nil, "send", "-f", "testdata/result.json")
		wantExit(t, r, ExitFailed)
		if r.stderr != "ampflow: msg_id task_result-T-2026-044-1740581280000 was used by a different record\n" || r.stdout != "" {
			t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
		}
	})
	t.Run("RefusedInvalidByTask", func(t *testing.T) {
		f := &fakeTasks{submitErr: &task.Error{Code: task.CodeInvalid, Message: "task_result does not match the dispatch",
			Fields: []amp.FieldError{{Path: "payload.subtask_id", Problem: "is not the current subtask S2"}}}}
		r := runFake(t, f, "", nil, "send", "-f", "testdata/result.json")
		wantExit(t, r, ExitFailed)
		if r.stderr != "ampflow: task_result does not match the dispatch: payload.subtask_id: is not the current subtask S2\n" {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
	t.Run("Usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"send"},
			{"send", "-f", "x.json", "--type", "task_dispatch", "--task", "T-2026-044"},
			{"send", "-f", "x.json", "--type", "task_result"},
			{"send", "-f", "x.json", "--type", "escalation", "--task", "T-2026-044"},
			{"send", "-f", "x.json", "--type", "task_result", "--task", "T-2026-044", "--from", "reviewer"},
			{"send", "-f", "x.json", "--task", "T-2026-044"},
		} {
			f := &fakeTasks{}
			r := runFake(t, f, "", nil, args...)
			if r.code != ExitUsage || len(f.Calls()) != 0 {
				t.Errorf("%q: exit %d, stderr %q, calls %q; want usage error", args, r.code, r.stderr, f.Calls())
			}
		}
	})
}

func inboxMessage(t *testing.T) amp.Message {
	t.Helper()
	b, err := os.ReadFile("testdata/dispatch.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := amp.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInbox(t *testing.T) {
	m := inboxMessage(t)
	t.Run("EmptyJSON", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, "", nil, "inbox", "--as", "executor", "-o", "json")
		wantExit(t, r, ExitOK)
		if r.stdout != "[]\n" || f.Calls()[0] != "Inbox executor" {
			t.Errorf("stdout %q, calls %q", r.stdout, f.Calls())
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{inboxes: [][]amp.Message{{m}}}, "", nil, "inbox", "--as", "executor", "-o", "json")
		wantExit(t, r, ExitOK)
		var raw []json.RawMessage
		if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil || len(raw) != 1 {
			t.Fatalf("stdout %q is not an array of one: %v", r.stdout, err)
		}
		if got, err := amp.Parse(raw[0]); err != nil || got.MsgID != m.MsgID {
			t.Errorf("element is not the AMP envelope: %v", err)
		}
	})
	t.Run("Text", func(t *testing.T) {
		r := runFake(t, &fakeTasks{inboxes: [][]amp.Message{{m}}}, "", nil, "inbox", "--as", "executor")
		wantExit(t, r, ExitOK)
		want := "MSG_ID                                  TYPE           TASK        FROM         SENT\n" +
			"task_dispatch-T-2026-044-1740576727001  task_dispatch  T-2026-044  coordinator  2026-02-26T14:32:07+00:00\n"
		if r.stdout != want {
			t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
		}
	})
	t.Run("Wait", func(t *testing.T) {
		f := &fakeTasks{inboxes: [][]amp.Message{nil, {}, {m}}}
		r := runFake(t, f, "", nil, "inbox", "--as", "reviewer", "--wait", "1h", "-o", "json")
		wantExit(t, r, ExitOK)
		if len(f.Calls()) != 3 || !strings.Contains(r.stdout, m.MsgID) {
			t.Errorf("calls %q, stdout %q; want polls until the message", f.Calls(), r.stdout)
		}
	})
	t.Run("WaitTimesOut", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, "", nil, "inbox", "--as", "reviewer", "--wait", "20ms")
		wantExit(t, r, ExitOK)
		if r.stdout != "no messages for reviewer\n" || len(f.Calls()) < 2 {
			t.Errorf("stdout %q, calls %q; want several polls, then nothing", r.stdout, f.Calls())
		}
	})
	t.Run("BadRole", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", nil, "inbox", "--as", "admin")
		wantExit(t, r, ExitUsage)
		if !strings.Contains(r.stderr, `--as "admin": must be executor or reviewer`) {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
}

func TestAck(t *testing.T) {
	f := &fakeTasks{ackRes: task.SubmitResult{MsgID: "ack-T-2026-044-1772116327000", Status: task.StatusInProgress}}
	r := runFake(t, f, "", nil, "ack", "task_dispatch-T-2026-044-1740576727001", "--as", "executor")
	wantExit(t, r, ExitOK)
	if r.stdout != "acknowledged with ack-T-2026-044-1772116327000; task T-2026-044 is in_progress\n" ||
		f.Calls()[0] != "Ack task_dispatch-T-2026-044-1740576727001 executor" {
		t.Errorf("stdout %q, calls %q", r.stdout, f.Calls())
	}
	r = runFake(t, &fakeTasks{}, "", nil, "ack", "not-a-msg-id", "--as", "executor")
	wantExit(t, r, ExitUsage)
	r = runFake(t, &fakeTasks{submitErr: task.Errorf(task.CodeUnexpected, "no message x awaits an ACK in task T-2026-044")}, "", nil,
		"ack", "task_dispatch-T-2026-044-1740576727001", "--as", "executor")
	wantExit(t, r, ExitFailed)
}

func TestHeartbeat(t *testing.T) {
	f := &fakeTasks{}
	r := runFake(t, f, "", nil, "heartbeat", "T-2026-044", "--as", "executor", "--note", "tests running", "-o", "json")
	wantExit(t, r, ExitOK)
	if len(f.beats) != 1 || f.beats[0] != (task.HeartbeatInput{From: amp.RoleExecutor, Note: "tests running"}) ||
		r.stdout != `{"from":"executor","sent":true,"task_id":"T-2026-044"}`+"\n" {
		t.Errorf("beats %+v, stdout %q", f.beats, r.stdout)
	}
	r = runFake(t, &fakeTasks{changeErr: task.Errorf(task.CodeNotFound, "sending a heartbeat to T-2026-044: no such task")}, "", nil,
		"heartbeat", "T-2026-044", "--as", "reviewer")
	wantExit(t, r, ExitFailed)
	r = runFake(t, &fakeTasks{}, "", nil, "heartbeat", "T-2026-044")
	wantExit(t, r, ExitUsage)
}
