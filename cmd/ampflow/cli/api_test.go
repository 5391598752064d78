package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// serveAPI serves the real HTTP API over f and returns a client of it.
func serveAPI(t *testing.T, f *fakeTasks, tokens []config.AuthToken, token string) *apiClient {
	t.Helper()
	return serveAPIStore(t, f, nil, tokens, token)
}

// serveAPIStore is serveAPI with an SSOT store behind the API.
func serveAPIStore(t *testing.T, f *fakeTasks, store httpapi.Records, tokens []config.AuthToken, token string) *apiClient {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Tasks: f, Store: store, Tokens: tokens, OpenName: "ana",
		Now: func() time.Time { return testNow }}).Handler())
	t.Cleanup(srv.Close)
	return newAPIClient(srv.URL+"/", token)
}

// Each method of the client against the API's own handlers: what the CLI
// sends is what the API takes, and its answers decode.
func TestAPIClientMethods(t *testing.T) {
	ctx := context.Background()
	plan := readTestPlan(t)
	pending := &decision.Decision{ID: "T-2026-003-d1", Subject: "T-2026-003", Kind: task.KindPlanApproval,
		Options: []decision.Option{{ID: "approve"}}, Digest: digestA}

	t.Run("StartWithKey", func(t *testing.T) {
		f := &fakeTasks{}
		c := serveAPI(t, f, nil, "")
		if err := c.Start(withIdempotencyKey(ctx, "plan-7"), task.Input{TaskID: "T-2026-045", Plan: plan, Handling: task.HandlingAdmin}); err != nil {
			t.Fatal(err)
		}
		in := f.started[0]
		if in.TaskID != "T-2026-045" || in.Handling != task.HandlingAdmin || in.Coordinator != "ana" ||
			in.RequestKey != workflows.RequestKey("ana", "plan-7") || in.Plan.Branch != plan.Branch {
			t.Errorf("started %+v", in)
		}
	})
	t.Run("StartNext", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-008"}
		c := serveAPI(t, f, nil, "")
		id, err := c.StartNext(ctx, task.Input{Plan: plan}, 1999)
		if err != nil || id != "T-2026-008" || f.started[0].RequestKey != "" {
			t.Errorf("StartNext = %q, %v; started %+v", id, err, f.started)
		}
	})
	t.Run("Submit", func(t *testing.T) {
		raw, err := os.ReadFile("testdata/result.json")
		if err != nil {
			t.Fatal(err)
		}
		f := &fakeTasks{submitRes: task.SubmitResult{MsgID: "m-1", Duplicate: true, Status: task.StatusInReview, Warnings: []string{}}}
		res, err := serveAPI(t, f, nil, "").Submit(ctx, raw)
		if err != nil || !reflect.DeepEqual(res, f.submitRes) || len(f.submitted) != 1 {
			t.Errorf("Submit = %+v, %v; submitted %d", res, err, len(f.submitted))
		}
	})
	t.Run("Ack", func(t *testing.T) {
		f := &fakeTasks{ackRes: task.SubmitResult{MsgID: "ack-T-2026-003-1", Status: task.StatusInProgress, Warnings: []string{}}}
		res, err := serveAPI(t, f, nil, "").Ack(ctx, "task_dispatch-T-2026-003-1", amp.RoleExecutor)
		if err != nil || !reflect.DeepEqual(res, f.ackRes) || strings.Join(f.Calls(), ",") != "Ack task_dispatch-T-2026-003-1 executor" {
			t.Errorf("Ack = %+v, %v; calls %q", res, err, f.Calls())
		}
	})
	t.Run("Decide", func(t *testing.T) {
		f := &fakeTasks{states: []task.State{{Status: task.StatusAwaitingApproval, Pending: pending}}}
		c := serveAPIStore(t, f, testSSOT(t, []decision.Decision{*pending}, nil), nil, "")
		res, err := c.Decide(ctx, "T-2026-003", decision.Answer{Option: "approve", Note: "ok", By: "mallory"})
		if err != nil || res.Status != task.StatusDispatched {
			t.Fatalf("Decide = %+v, %v", res, err)
		}
		// The API decides as its caller, never as a name the client sends.
		if d := f.decided[0]; d.DecisionID != "T-2026-003-d1" || d.Option != "approve" || d.Note != "ok" || d.By != "ana" || d.Channel != "api" || d.Digest != digestA {
			t.Errorf("decided %+v", d)
		}
	})
	t.Run("CancelReplan", func(t *testing.T) {
		f := &fakeTasks{}
		c := serveAPI(t, f, nil, "")
		if res, err := c.Cancel(ctx, "T-2026-003", task.CancelInput{Reason: "superseded", By: "mallory"}); err != nil || res.Status != task.StatusTerminated {
			t.Errorf("Cancel = %+v, %v", res, err)
		}
		subs := []amp.Subtask{{SubtaskID: "T-2026-003-S2", Description: "move the timer", EstimatedLines: 40}}
		if res, err := c.Replan(ctx, "T-2026-003", task.ReplanInput{Subtasks: subs, Note: "split"}); err != nil || res.Status != task.StatusAwaitingApproval {
			t.Errorf("Replan = %+v, %v", res, err)
		}
		if f.cancelled[0] != (task.CancelInput{Reason: "superseded", By: "ana"}) ||
			f.replanned[0].By != "ana" || f.replanned[0].Note != "split" || f.replanned[0].Subtasks[0].SubtaskID != "T-2026-003-S2" {
			t.Errorf("cancelled %+v, replanned %+v", f.cancelled, f.replanned)
		}
	})
	t.Run("Heartbeat", func(t *testing.T) {
		f := &fakeTasks{}
		err := serveAPI(t, f, nil, "").Heartbeat(ctx, "T-2026-003", task.HeartbeatInput{From: amp.RoleExecutor, Note: "tests"})
		if err != nil || f.beats[0] != (task.HeartbeatInput{From: amp.RoleExecutor, Note: "tests"}) {
			t.Errorf("Heartbeat: %v; beats %+v", err, f.beats)
		}
	})
	t.Run("Reads", func(t *testing.T) {
		raw, err := os.ReadFile("testdata/dispatch.json")
		if err != nil {
			t.Fatal(err)
		}
		var msg amp.Message
		if err := json.Unmarshal(raw, &msg); err != nil {
			t.Fatal(err)
		}
		f := &fakeTasks{states: []task.State{{Status: task.StatusInReview, Pending: pending}}}
		c := serveAPIStore(t, f, testSSOT(t, []decision.Decision{*pending}, []amp.Message{msg}), nil, "")
		st, err := c.State(ctx, "T-2026-003")
		if err != nil || st.Status != task.StatusInReview || st.Pending.ID != pending.ID {
			t.Errorf("State = %+v, %v", st, err)
		}
		list, err := c.List(ctx, task.StatusInProgress, 0)
		if err != nil || len(list) != 2 || !slices.ContainsFunc(list, func(s workflows.TaskSummary) bool { return s.TaskID == "T-2026-003" && s.StartedAt.Equal(testNow) }) {
			t.Errorf("List = %+v, %v", list, err)
		}
		msgs, err := c.InboxWait(ctx, amp.RoleExecutor, time.Second)
		if err != nil || len(msgs) != 1 || msgs[0].MsgID != msg.MsgID {
			t.Errorf("Inbox = %+v, %v", msgs, err)
		}
		ds, err := c.Pending(ctx)
		if err != nil || len(ds) != 1 || ds[0].ID != pending.ID {
			t.Errorf("Pending = %+v, %v", ds, err)
		}
		// Task list, inbox and decisions are the SSOT's.
		want := []string{"State T-2026-003"}
		if got := f.Calls(); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("calls %q, want %q", got, want)
		}
	})
}

func readTestPlan(t *testing.T) amp.TaskDispatch {
	t.Helper()
	raw, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var p amp.TaskDispatch
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// The API's error body comes back as the *task.Error it was, code and
// fields, and the errors of the way there name the setting to change.
func TestAPIClientErrors(t *testing.T) {
	ctx := context.Background()
	answer := func(status int, body string) *apiClient {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return newAPIClient(srv.URL, "tok")
	}
	tests := []struct {
		name   string
		c      *apiClient
		code   task.Code
		want   string
		fields int
	}{
		{"Invalid", answer(400, `{"error":{"code":"invalid","message":"plan.branch: must not be main","fields":[{"path":"plan.branch","problem":"must not be main"}]}}`),
			task.CodeInvalid, "plan.branch: must not be main", 1},
		{"TaskEnded", answer(409, `{"error":{"code":"task_ended","message":"task T-2026-003 has ended: done"}}`), task.CodeFinished, "task T-2026-003 has ended: done", 0},
		{"NotFound", answer(404, `{"error":{"code":"not_found","message":"no task T-2026-009"}}`), task.CodeNotFound, "no task T-2026-009", 0},
		{"Unauthenticated", answer(401, `{"error":{"code":"unauthenticated","message":"a valid Authorization: Bearer <token> header is required"}}`),
			"unauthenticated", "does not accept the token in api.token / AMPFLOW_API_TOKEN", 0},
		{"Forbidden", answer(403, `{"error":{"code":"forbidden","message":"POST /v1/decisions/T-2026-003-d1 needs a token of role admin; \"exec1\" is executor"}}`),
			task.CodeForbidden, `"exec1" is executor (the role of the token in api.token / AMPFLOW_API_TOKEN may not do that)`, 0},
		{"NotTheAPI", answer(502, `<html>bad gateway</html>`), task.CodeUnavailable, "answered 502 Bad Gateway: is api.url / AMPFLOW_API_URL the ampflow API?", 0},
		{"Unreachable", newAPIClient(closedURL(t), ""), task.CodeUnavailable,
			"is `ampflow dev` or `ampflow worker` running? set api.url / AMPFLOW_API_URL", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.c.State(ctx, "T-2026-003")
			var te *task.Error
			if !errors.As(err, &te) || te.Code != tt.code || !strings.Contains(te.Message, tt.want) || len(te.Fields) != tt.fields {
				t.Errorf("State error = %#v, want code %s, %q, %d fields", err, tt.code, tt.want, tt.fields)
			}
		})
	}
	t.Run("NoToken", func(t *testing.T) {
		c := answer(401, `{"error":{"code":"unauthenticated","message":"a valid Authorization: Bearer <token> header is required"}}`)
		c.token = ""
		_, err := c.Pending(ctx)
		if err == nil || !strings.Contains(err.Error(), "needs a token: set api.token / AMPFLOW_API_TOKEN") {
			t.Errorf("Pending error = %v", err)
		}
	})
}

// From the command line: the default way in is the API at api.url, and
// its refusals keep their code in -o json.
func TestCommandsOverAPI(t *testing.T) {
	f := &fakeTasks{states: []task.State{{Status: task.StatusInReview}}}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Tasks: f,
		Tokens: []config.AuthToken{{Token: "tok-exec", Role: amp.RoleExecutor, Name: "codex"}}}).Handler())
	t.Cleanup(srv.Close)
	run := func(env map[string]string, args ...string) result {
		var stdout, stderr strings.Builder
		code := Main(context.Background(), Options{Args: args, Stdout: &stdout, Stderr: &stderr,
			LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		return result{code, stdout.String(), stderr.String()}
	}
	env := map[string]string{"AMPFLOW_API_URL": srv.URL, "AMPFLOW_API_TOKEN": "tok-exec"}
	r := run(env, "task", "show", "T-2026-003", "-o", "json")
	wantExit(t, r, ExitOK)
	if !strings.Contains(r.stdout, `"status":"in_review"`) {
		t.Errorf("stdout = %q", r.stdout)
	}
	r = run(env, "-o", "json", "task", "cancel", "T-2026-003", "--reason", "x")
	wantExit(t, r, ExitFailed)
	if !strings.HasPrefix(r.stderr, `{"error":{"code":"forbidden","message":"POST /v1/tasks/T-2026-003/cancel needs a token of role coordinator or admin`) {
		t.Errorf("stderr = %q", r.stderr)
	}
	r = run(map[string]string{"AMPFLOW_API_URL": srv.URL}, "pending")
	wantExit(t, r, ExitFailed)
	if !strings.Contains(r.stderr, "needs a token: set api.token / AMPFLOW_API_TOKEN") {
		t.Errorf("stderr = %q", r.stderr)
	}
	if len(f.cancelled) != 0 {
		t.Errorf("cancelled %+v", f.cancelled)
	}
}
