package activities

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities/ssot"
)

// ssotEngines opens a fresh SQL SSOT per engine: SQLite always,
// PostgreSQL when AMPFLOW_TEST_POSTGRES names a server.
func ssotEngines(t *testing.T, f func(t *testing.T, s *TaskRecord)) {
	for _, name := range []string{ssot.EngineSQLite, ssot.EnginePostgres} {
		t.Run(name, func(t *testing.T) {
			u := filepath.Join(t.TempDir(), "ampflow.db")
			if name == ssot.EnginePostgres {
				u = postgresDB(t)
			}
			db, err := ssot.Open(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			f(t, &TaskRecord{Store: db})
		})
	}
}

// postgresDB creates a database on AMPFLOW_TEST_POSTGRES, dropped when the
// test ends, and returns its URL.
func postgresDB(t *testing.T) string {
	base := os.Getenv("AMPFLOW_TEST_POSTGRES")
	if base == "" {
		t.Skip("AMPFLOW_TEST_POSTGRES is unset: no PostgreSQL server to test against")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES: %v", err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	rand.Read(b)
	name := "ampflow_rec_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err == nil {
			defer admin.Close()
			_, err = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		}
		if err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

const recView = `{"task_id":"T-2026-001","status":"dispatched","risk_level":"medium","repo":"/src/app",
 "started_at":"2026-11-23T10:00:00Z","updated_at":"2026-11-23T10:05:00Z",
 "outbox":[{"msg_id":"task_dispatch-T-2026-001-1","to":"executor","type":"task_dispatch","timestamp":"2026-11-23T10:01:00+00:00"}],
 "pending":{"id":"T-2026-001-d1","task_id":"T-2026-001","kind":"plan_approval","raised_at":"2026-11-23T10:02:00Z","expires_at":"2026-11-24T10:02:00Z","prompt":"Approve?"}}`

func TestRecordInTheSQLStore(t *testing.T) {
	ssotEngines(t, func(t *testing.T, s *TaskRecord) {
		ctx := context.Background()
		env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
		s.Mesh = true
		a := &Activities{Store: s}
		env.RegisterActivity(a)
		record := func(in RecordInput) (RecordResult, error) {
			val, err := env.ExecuteActivity(a.Record, in)
			var res RecordResult
			if err == nil {
				err = val.Get(&res)
			}
			return res, err
		}
		at := time.Date(2026, 11, 23, 10, 3, 0, 0, time.UTC)
		in := RecordInput{TaskID: "T-2026-001", Rev: 2, Task: json.RawMessage(recView), Entries: []RecordEntry{
			{ID: "plan-T-2026-001", Kind: ssot.KindEvent, Body: json.RawMessage(`{"plan":{"description":"add x"}}`), RecordedAt: at},
			{ID: "T-2026-001-d1-outcome", Kind: ssot.KindDecision, Body: json.RawMessage(`{"option":"approve","digest":"abc123"}`), RecordedAt: at},
		}}
		// A retried call (the same batch run again) writes nothing twice.
		for want := 2; want >= 0; want -= 2 {
			res, err := record(in)
			if err != nil || res.Written != want {
				t.Fatalf("Record = %+v, %v; want %d written", res, err, want)
			}
		}
		// The records' mesh events were stored with them, once.
		evs, _, err := s.Store.(*ssot.DB).SearchEvents(ctx, ssot.SearchQuery{TaskID: "T-2026-001"}, ssot.Page{})
		if want := TaskEvents(in.TaskID, in.Entries); err != nil || len(want) == 0 || len(evs) != len(want) || evs[0].ID != want[0].ID {
			t.Fatalf("mesh events of T-2026-001: %+v, %v; want %+v", evs, err, want)
		}
		recs, _, err := s.Store.History(ctx, "T-2026-001", ssot.Page{})
		if err != nil || len(recs) != 2 {
			t.Fatalf("History = %d records, %v; want 2", len(recs), err)
		}
		if recs[1].Digest != "abc123" || recs[0].Digest != "" || recs[1].Kind != "decision" || !recs[0].RecordedAt.Equal(at) {
			t.Errorf("records = %+v; want the outcome to name digest abc123", recs)
		}
		st, err := s.Store.Task(ctx, "T-2026-001")
		if err != nil {
			t.Fatal(err)
		}
		if st.Rev != 2 || st.Status != "dispatched" || st.Risk != "medium" || st.Repo != "/src/app" ||
			!st.StartedAt.Equal(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("task = %+v", st)
		}
		inbox, _, err := s.Store.Inbox(ctx, "executor", ssot.Page{})
		if err != nil || len(inbox) != 1 || inbox[0].MsgID != "task_dispatch-T-2026-001-1" || inbox[0].Type != "task_dispatch" ||
			!inbox[0].SentAt.Equal(time.Date(2026, 11, 23, 10, 1, 0, 0, time.UTC)) {
			t.Errorf("executor inbox = %+v, %v", inbox, err)
		}
		ds, _, err := s.Store.Pending(ctx, ssot.Page{})
		if err != nil || len(ds) != 1 || ds[0].ID != "T-2026-001-d1" || ds[0].Subject != "T-2026-001" || ds[0].Kind != "plan_approval" ||
			!ds[0].ExpiresAt.Equal(time.Date(2026, 11, 24, 10, 2, 0, 0, time.UTC)) {
			t.Errorf("pending = %+v, %v", ds, err)
		}

		// A late retry of an older batch leaves the newer state alone.
		if _, err := record(RecordInput{TaskID: "T-2026-001", Rev: 3, Task: json.RawMessage(`{"status":"ci_check","outbox":[{"msg_id":"x","to":"executor"}]}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := record(RecordInput{TaskID: "T-2026-001", Rev: 2, Task: json.RawMessage(recView)}); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Store.Task(ctx, "T-2026-001"); err != nil || st.Status != "ci_check" || st.Rev != 3 {
			t.Errorf("after a late retry: task = %+v, %v; want rev 3 in ci_check", st, err)
		}
		// Waiting for CI, the task's outbox is nobody's inbox; the decision is gone.
		if inbox, _, err := s.Store.Inbox(ctx, "executor", ssot.Page{}); err != nil || len(inbox) != 0 {
			t.Errorf("executor inbox in ci_check = %+v, %v; want none", inbox, err)
		}
		if ds, _, err := s.Store.Pending(ctx, ssot.Page{}); err != nil || len(ds) != 0 {
			t.Errorf("pending after the decision = %+v, %v; want none", ds, err)
		}

		in.Entries[0].Body = json.RawMessage(`{"plan":2}`)
		_, err = record(in)
		appErr(t, err, ErrRecordConflict, true)
		_, err = record(RecordInput{TaskID: "T-2026-001", Rev: 4, Task: json.RawMessage(`{"status":""}`)})
		appErr(t, err, ErrInvalidRecord, true)
	})
}

// TestHeldInbox: a message an agent ACKed and has not answered leaves
// the role's inbox but stays in its holder's, with include=acked or
// alone; another agent does not see it.
func TestHeldInbox(t *testing.T) {
	ssotEngines(t, func(t *testing.T, s *TaskRecord) {
		ctx := context.Background()
		view := `{"task_id":"T-2026-002","status":"in_progress","started_at":"2026-11-23T10:00:00Z","updated_at":"2026-11-23T10:05:00Z",
 "holders":[{"role":"executor","agent":"exec-a","msg_id":"task_dispatch-T-2026-002-1","since":"2026-11-23T10:02:00Z",
  "unanswered":{"msg_id":"task_dispatch-T-2026-002-1","to":"executor","type":"task_dispatch","timestamp":"2026-11-23T10:01:00+00:00"}}]}`
		st, err := TaskStateOf("T-2026-002", 1, json.RawMessage(view))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Store.Save(ctx, "T-2026-002", nil, &st); err != nil {
			t.Fatal(err)
		}
		db := s.Store.(*ssot.DB)
		for _, c := range []struct {
			name string
			f    ssot.InboxFilter
			want int
		}{
			{"Unheld", ssot.InboxFilter{Role: "executor"}, 0},
			{"WithAcked", ssot.InboxFilter{Role: "executor", Holder: "exec-a"}, 1},
			{"HeldOnly", ssot.InboxFilter{Role: "executor", Holder: "exec-a", HeldOnly: true}, 1},
			{"Another", ssot.InboxFilter{Role: "executor", Holder: "exec-b"}, 0},
		} {
			rows, _, err := db.InboxOf(ctx, c.f, ssot.Page{})
			if err != nil || len(rows) != c.want {
				t.Fatalf("%s: %+v, %v; want %d", c.name, rows, err, c.want)
			}
			if c.want == 1 && (rows[0].Holder != "exec-a" || !rows[0].AckedAt.Equal(time.Date(2026, 11, 23, 10, 2, 0, 0, time.UTC))) {
				t.Errorf("%s: %+v, want held by exec-a since 10:02", c.name, rows[0])
			}
		}
		if got, err := s.Store.Task(ctx, "T-2026-002"); err != nil || len(got.Outbox) != 0 {
			t.Errorf("task outbox %+v, %v; want the held message left out", got.Outbox, err)
		}
	})
}

// TestTaskStateOfKeepsTheInboxUnderADecision: a decision open in an
// agent's turn reports awaiting_admin, and the agent's message stays in
// its inbox (a late ACK still counts); awaiting_admin of its own (a
// final approval) has no inbox.
func TestTaskStateOfKeepsTheInboxUnderADecision(t *testing.T) {
	outbox := `"outbox":[{"msg_id":"task_dispatch-T-2026-001-1","to":"executor","type":"task_dispatch","timestamp":"2026-11-23T10:01:00Z"}]`
	for _, c := range []struct {
		name, view string
		inbox      int
	}{
		{"InProgress", `{"status":"in_progress",` + outbox + `}`, 1},
		{"ToolCallOpen", `{"status":"awaiting_admin","waiting_for":"tool_call","underlying_status":"in_progress",` + outbox + `}`, 1},
		{"FinalApproval", `{"status":"awaiting_admin","waiting_for":"final_approval",` + outbox + `}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := TaskStateOf("T-2026-001", 1, json.RawMessage(c.view))
			if err != nil || st.Status != "awaiting_admin" && c.name != "InProgress" || len(st.Outbox) != c.inbox {
				t.Errorf("TaskStateOf = status %q, %d in the inbox, %v; want %d", st.Status, len(st.Outbox), err, c.inbox)
			}
		})
	}
}
