package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

func TestStartTask(t *testing.T) {
	t.Run("WithID", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/tasks", coordToken, `{"task_id":"T-2026-044","plan":`+validPlan+`,"handling":"admin"}`)
		wantStatus(t, r, http.StatusCreated)
		var out StartResponse
		r.decode(t, &out)
		if out.TaskID != "T-2026-044" || r.header.Get("Location") != "/v1/tasks/T-2026-044" {
			t.Errorf("answer %+v, Location %q", out, r.header.Get("Location"))
		}
		in := h.tasks.started[0]
		if in.TaskID != "T-2026-044" || in.Handling != task.HandlingAdmin || in.Coordinator != "gemini" {
			t.Errorf("started %+v", in)
		}
		if in.Plan.Branch != "feature/watch-breath-v2" || in.Plan.RiskLevel != amp.RiskMedium || len(in.Plan.Subtasks) != 1 {
			t.Errorf("plan %+v", in.Plan)
		}
	})
	t.Run("NextID", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/tasks", adminToken, `{"plan":`+validPlan+`,"coordinator":"planner"}`)
		wantStatus(t, r, http.StatusCreated)
		var out StartResponse
		r.decode(t, &out)
		if out.TaskID != "T-2026-007" {
			t.Errorf("task_id = %q, want the fake's next id of 2026", out.TaskID)
		}
		if h.tasks.calls[0] != "StartNext" || h.tasks.started[0].Coordinator != "planner" {
			t.Errorf("calls %v, started %+v", h.tasks.calls, h.tasks.started)
		}
	})
	t.Run("InvalidPlan", func(t *testing.T) {
		h := newHarness(t, false)
		var plan map[string]any
		json.Unmarshal([]byte(validPlan), &plan)
		plan["branch"] = "main"
		plan["subtasks"].([]any)[0].(map[string]any)["estimated_lines"] = "many"
		plan["colour"] = "blue"
		body, _ := json.Marshal(map[string]any{"task_id": "T-26-1", "plan": plan, "handling": "sometimes"})
		r := h.do(t, "POST", "/v1/tasks", coordToken, string(body))
		wantStatus(t, r, http.StatusBadRequest)
		e := r.errorBody(t)
		for _, p := range []string{"task_id", "handling", "plan.branch", "plan.subtasks[0].estimated_lines", "plan.colour"} {
			if !hasField(e.Fields, p) {
				t.Errorf("fields %+v do not name %s", e.Fields, p)
			}
		}
		if h.tasks.callCount() != 0 {
			t.Errorf("an invalid plan reached the tasks: %v", h.tasks.calls)
		}
	})
	t.Run("MissingPlan", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/tasks", coordToken, `{"task_id":"T-2026-044"}`)
		wantStatus(t, r, http.StatusBadRequest)
		if e := r.errorBody(t); !hasField(e.Fields, "plan") {
			t.Errorf("fields %+v do not name plan", e.Fields)
		}
	})
	t.Run("UnknownField", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/tasks", coordToken, `{"plan":`+validPlan+`,"urgency":1}`)
		wantStatus(t, r, http.StatusBadRequest)
		if e := r.errorBody(t); !hasField(e.Fields, "urgency") {
			t.Errorf("fields %+v do not name urgency", e.Fields)
		}
	})
	t.Run("PriorityOutOfRange", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/tasks", coordToken, `{"plan":`+validPlan+`,"priority":101}`)
		wantStatus(t, r, http.StatusBadRequest)
		if e := r.errorBody(t); !hasField(e.Fields, "priority") {
			t.Errorf("fields %+v do not name priority", e.Fields)
		}
		if h.tasks.callCount() != 0 {
			t.Errorf("a refused start reached the tasks: %v", h.tasks.calls)
		}
	})
	t.Run("Taken", func(t *testing.T) {
		h := newHarness(t, false)
		h.tasks.err = task.Errorf(task.CodeConflict, "task id T-2026-044 is taken")
		r := h.do(t, "POST", "/v1/tasks", coordToken, `{"task_id":"T-2026-044","plan":`+validPlan+`}`)
		wantStatus(t, r, http.StatusConflict)
		if e := r.errorBody(t); e.Code != task.CodeConflict || e.Message != "task id T-2026-044 is taken" {
			t.Errorf("error %+v", e)
		}
	})
	t.Run("ExecutorForbidden", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/tasks", executorToken, `{"plan":`+validPlan+`}`)
		wantStatus(t, r, http.StatusForbidden)
		if h.tasks.callCount() != 0 {
			t.Errorf("a forbidden start reached the tasks: %v", h.tasks.calls)
		}
	})
}

func TestListTasks(t *testing.T) {
	h := newHarness(t, false)
	r := h.do(t, "GET", "/v1/tasks", reviewerToken, "")
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != "{\"tasks\":[]}\n" {
		t.Errorf("empty listing = %s, want an empty array", r.body)
	}

	// Read from the store's index, filtered there; Temporal is not asked.
	h.store.saveTasks(
		workflows.TaskSummary{TaskID: "T-2026-044", Status: task.StatusInReview, Risk: "high", Repo: "/src/a", RejectCount: 2, StartedAt: testNow},
		workflows.TaskSummary{TaskID: "T-2026-045", Status: task.StatusDone, Risk: "high", Repo: "/src/a", StartedAt: testNow.Add(time.Minute)},
		workflows.TaskSummary{TaskID: "T-2026-046", Status: task.StatusInReview, Risk: "low", Repo: "/src/b", StartedAt: testNow.Add(2 * time.Minute)},
	)
	r = h.do(t, "GET", "/v1/tasks?status=in_review&risk=high&limit=5", executorToken, "")
	wantStatus(t, r, http.StatusOK)
	var out ListResponse
	r.decode(t, &out)
	want := workflows.TaskSummary{TaskID: "T-2026-044", Status: task.StatusInReview, Risk: "high", Repo: "/src/a", RejectCount: 2, StartedAt: testNow, Running: true}
	if len(out.Tasks) != 1 || out.Tasks[0] != want {
		t.Errorf("tasks %+v, want [%+v]", out.Tasks, want)
	}
	r = h.do(t, "GET", "/v1/tasks?repo=/src/a", executorToken, "")
	r.decode(t, &out)
	if len(out.Tasks) != 2 || out.Tasks[0].TaskID != "T-2026-045" || out.Tasks[0].Running {
		t.Errorf("tasks of /src/a %+v, want T-2026-045 (ended) then T-2026-044", out.Tasks)
	}
	if n := h.tasks.callCount(); n != 0 {
		t.Errorf("listing asked the workflows: %v", h.tasks.calls)
	}

	for _, q := range []string{"status=sleeping", "risk=extreme", "limit=0", "limit=x"} {
		r = h.do(t, "GET", "/v1/tasks?"+q, executorToken, "")
		wantStatus(t, r, http.StatusBadRequest)
	}
}

func TestGetTask(t *testing.T) {
	h := newHarness(t, false)
	h.tasks.state = task.State{TaskID: "T-2026-044", Status: task.StatusSuspended, RejectCount: 2}
	r := h.do(t, "GET", "/v1/tasks/T-2026-044", reviewerToken, "")
	wantStatus(t, r, http.StatusOK)
	var st task.State
	r.decode(t, &st)
	if st.Status != task.StatusSuspended || st.RejectCount != 2 || h.tasks.calls[0] != "State T-2026-044" {
		t.Errorf("state %+v, calls %v", st, h.tasks.calls)
	}

	r = h.do(t, "GET", "/v1/tasks/banana", reviewerToken, "")
	wantStatus(t, r, http.StatusBadRequest)

	h.tasks.err = &task.Error{Code: task.CodeNotFound, Message: "reading task T-2026-999: no such task"}
	r = h.do(t, "GET", "/v1/tasks/T-2026-999", reviewerToken, "")
	wantStatus(t, r, http.StatusNotFound)
	if e := r.errorBody(t); e.Code != task.CodeNotFound {
		t.Errorf("error %+v", e)
	}
}

func TestHistoryAndRecords(t *testing.T) {
	h := newHarness(t, false)
	h.store.addRecords("T-2026-044",
		ssot.Entry{ID: "task_dispatch-T-2026-044-1740576727001", Kind: string(ssot.KindMessage), Body: json.RawMessage(`{"n":1}`)},
		ssot.Entry{ID: "ack-T-2026-044-1740576730000", Kind: string(ssot.KindAck), Body: json.RawMessage(`{"n":2}`)})
	r := h.do(t, "GET", "/v1/tasks/T-2026-044/history", executorToken, "")
	wantStatus(t, r, http.StatusOK)
	var out HistoryResponse
	r.decode(t, &out)
	if len(out.Records) != 2 || out.Records[0].Kind != "message" || out.Records[1].Kind != "ack" {
		t.Fatalf("history %+v, want dispatch then ACK", out.Records)
	}
	// The head is the last record's link, each record linked to the one before.
	if out.Head.Seq != 2 || out.Head.Hash != out.Records[1].Hash || out.Records[1].PrevHash != out.Records[0].Hash || out.Records[0].PrevHash != "" {
		t.Errorf("head %+v of records %+v: not the chain's last link", out.Head, out.Records)
	}

	r = h.do(t, "GET", "/v1/tasks/T-2026-045/history", executorToken, "")
	wantStatus(t, r, http.StatusNotFound)

	r = h.do(t, "GET", "/v1/records/ack-T-2026-044-1740576730000", executorToken, "")
	wantStatus(t, r, http.StatusOK)
	var rec ssot.Record
	r.decode(t, &rec)
	if string(rec.Body) != `{"n":2}` || rec.Seq != 2 || rec.TaskID != "T-2026-044" {
		t.Errorf("record %+v", rec)
	}
	r = h.do(t, "GET", "/v1/records/ack-T-2026-044-1", executorToken, "")
	wantStatus(t, r, http.StatusNotFound)
}

func TestDiff(t *testing.T) {
	h := newHarness(t, false)
	diff := "diff --git a/x b/x\n+hello\n"
	if err := h.store.PutFile(context.Background(), "T-2026-044", ssot.DiffName("task_result-T-2026-044-1"), []byte(diff)); err != nil {
		t.Fatal(err)
	}
	r := h.do(t, "GET", ssot.DiffPath("T-2026-044", "task_result-T-2026-044-1"), reviewerToken, "")
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != diff || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("diff %q (%s), want %q as text", r.body, r.header.Get("Content-Type"), diff)
	}
	r = h.do(t, "GET", ssot.DiffPath("T-2026-044", "task_result-T-2026-044-2"), reviewerToken, "")
	wantStatus(t, r, http.StatusNotFound)
	r = h.do(t, "GET", ssot.DiffPath("T-2026-044", "task_result-T-2026-044-1"), "", "")
	wantStatus(t, r, http.StatusUnauthorized)
}

func TestCancelAndReplan(t *testing.T) {
	h := newHarness(t, false)
	r := h.do(t, "POST", "/v1/tasks/T-2026-044/cancel", coordToken, `{"reason":"superseded"}`)
	wantStatus(t, r, http.StatusOK)
	var res task.ChangeResult
	r.decode(t, &res)
	if res.Status != task.StatusTerminated || h.tasks.cancels[0] != (task.CancelInput{Reason: "superseded", By: "gemini"}) {
		t.Errorf("result %+v, cancel %+v", res, h.tasks.cancels)
	}

	r = h.do(t, "POST", "/v1/tasks/T-2026-044/cancel", coordToken, `{}`)
	wantStatus(t, r, http.StatusBadRequest)
	if e := r.errorBody(t); !hasField(e.Fields, "reason") {
		t.Errorf("fields %+v do not name reason", e.Fields)
	}

	r = h.do(t, "POST", "/v1/tasks/T-2026-044/replan", adminToken,
		`{"subtasks":[{"subtask_id":"T-2026-044-S2","description":"Handle background","estimated_lines":30}],"note":"split"}`)
	wantStatus(t, r, http.StatusOK)
	rp := h.tasks.replans[0]
	if rp.By != "kircerta" || rp.Note != "split" || len(rp.Subtasks) != 1 || rp.Subtasks[0].EstimatedLines != 30 {
		t.Errorf("replan %+v", rp)
	}

	r = h.do(t, "POST", "/v1/tasks/T-2026-044/replan", coordToken, `{"subtasks":[{"subtask_id":"S1","description":"a"},{"subtask_id":"S2","size":3}]}`)
	wantStatus(t, r, http.StatusBadRequest)
	if e := r.errorBody(t); !hasField(e.Fields, "subtasks[1].size") {
		t.Errorf("fields %+v do not name subtasks[1].size", e.Fields)
	}

	r = h.do(t, "POST", "/v1/tasks/T-2026-044/cancel", reviewerToken, `{"reason":"bored"}`)
	wantStatus(t, r, http.StatusForbidden)

	h.tasks.err = task.Errorf(task.CodeFinished, "task T-2026-044 is done")
	r = h.do(t, "POST", "/v1/tasks/T-2026-044/cancel", coordToken, `{"reason":"late"}`)
	wantStatus(t, r, http.StatusConflict)
}
