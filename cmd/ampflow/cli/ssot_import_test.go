package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
)

var importAt = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

const importState = `{"task_id":"T-2026-001","status":"in_review","risk_level":"low","repo":"/srv/repo",
	"started_at":"2026-11-23T10:00:00Z","updated_at":"2026-11-23T10:05:00Z",
	"outbox":[{"msg_id":"review_request-T-2026-001-1","protocol_version":"AMP/1.0","type":"review_request",
		"from":"coordinator","to":"reviewer","task_id":"T-2026-001","timestamp":"2026-11-23T10:04:00+00:00","payload":{}}],
	"pending":{"id":"T-2026-001-d1","task_id":"T-2026-001","kind":"final_approval","prompt":"merge?","options":[],
		"raised_at":"2026-11-23T10:05:00Z"},
	"timeline":[]}`

// fileSSOT writes a file SSOT as activities.Store does: T-2026-001 with
// three records and a state, T-2026-002 with a decision record and no
// state, T-2026-003 in the older layout (records in messages/, the
// journal naming them), and two refused inputs.
func fileSSOT(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "ssot")
	s, err := activities.NewStore(root, activities.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(task string, kind activities.RecordKind, id string, n int, body string) activities.RecordEntry {
		return activities.RecordEntry{ID: id, Kind: kind, RecordedAt: importAt.Add(time.Duration(n) * time.Second), Body: json.RawMessage(body)}
	}
	inputs := []activities.RecordInput{
		{TaskID: "T-2026-001", Entries: []activities.RecordEntry{
			rec("T-2026-001", activities.KindMessage, "plan-T-2026-001", 0, `{"msg_id":"plan-T-2026-001","text":"a <b> & c"}`),
			rec("T-2026-001", activities.KindAck, "ack-T-2026-001-1", 1, `{"ack_of":"plan-T-2026-001"}`),
		}},
		{TaskID: "T-2026-001", Entries: []activities.RecordEntry{
			rec("T-2026-001", activities.KindMessage, "review_request-T-2026-001-1", 2, `{"msg_id":"review_request-T-2026-001-1"}`),
		}, Task: json.RawMessage(importState)},
		{TaskID: "T-2026-002", Entries: []activities.RecordEntry{
			rec("T-2026-002", activities.KindDecision, "T-2026-002-d1", 3,
				`{"id":"T-2026-002-d1","digest":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","option":"approve"}`),
		}},
	}
	for _, in := range inputs {
		if _, err := s.Record(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if err := s.AppendError(activities.ErrorEntry{Time: importAt.Add(time.Duration(i) * time.Minute), Remote: "127.0.0.1",
			Source: "http", Reason: fmt.Sprintf("refusal %d", i), Raw: "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FlushErrors(); err != nil {
		t.Fatal(err)
	}

	// The older layout, as the file store's own tests make it.
	task := "T-2026-003"
	dir := filepath.Join(root, "tasks", task)
	if err := os.MkdirAll(filepath.Join(dir, "messages"), 0o755); err != nil {
		t.Fatal(err)
	}
	var index strings.Builder
	for i := range 2 {
		r := activities.StoredRecord{ID: fmt.Sprintf("event-%s-%d", task, i), Kind: activities.KindEvent, TaskID: task,
			RecordedAt: importAt.Add(time.Duration(10+i) * time.Second), Body: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		data, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "messages", r.ID+".json"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&index, "{\"id\":%q,\"kind\":\"event\"}\n", r.ID)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.jsonl"), []byte(index.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func historyOf(t *testing.T, db ssot.Store, task string) []ssot.Record {
	t.Helper()
	recs, _, err := db.History(context.Background(), task, ssot.Page{Limit: ssot.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestSSOTImport(t *testing.T) {
	eachStoreEngine(t, func(t *testing.T, e storeEngine) {
		ctx := context.Background()
		root := fileSSOT(t)
		u := e.url(t)

		r := run(t, "", storeEnv(t, u), nil, "ssot", "import", root)
		want := "imported 3 tasks: 6 records (6 written, 0 stored already), 2 error log entries (2 written); counts match\n"
		if r.code != ExitOK || !strings.HasSuffix(r.stdout, want) || r.stderr != "" {
			t.Fatalf("exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "T-2026-003  2     2      2        0     none") {
			t.Errorf("the older layout's row:\n%s", r.stdout)
		}

		db := openTestStore(t, u)
		wantIDs := map[string][]string{
			"T-2026-001": {"plan-T-2026-001", "ack-T-2026-001-1", "review_request-T-2026-001-1"},
			"T-2026-002": {"T-2026-002-d1"},
			"T-2026-003": {"event-T-2026-003-0", "event-T-2026-003-1"},
		}
		for task, want := range wantIDs {
			recs := historyOf(t, db, task)
			var got []string
			for _, rec := range recs {
				got = append(got, rec.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s in the store: %v, want %v", task, got, want)
			}
		}
		plan := historyOf(t, db, "T-2026-001")[0]
		if !plan.RecordedAt.Equal(importAt) || plan.Kind != "message" || string(plan.Body) != `{"msg_id":"plan-T-2026-001","text":"a <b> & c"}` {
			t.Errorf("plan record: %+v", plan)
		}
		if d := historyOf(t, db, "T-2026-002")[0]; d.Digest != "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
			t.Errorf("decision record's digest %q", d.Digest)
		}
		st, err := db.Task(ctx, "T-2026-001")
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != "in_review" || st.Risk != "low" || st.Repo != "/srv/repo" || len(st.Outbox) != 1 || st.Outbox[0].Role != "reviewer" ||
			len(st.Pending) != 1 || st.Pending[0].ID != "T-2026-001-d1" || st.Pending[0].Kind != "final_approval" {
			t.Errorf("state of T-2026-001: %+v", st)
		}
		if _, err := db.Task(ctx, "T-2026-002"); err == nil {
			t.Errorf("T-2026-002 has a state in the store; the file SSOT had none")
		}
		errs, _, err := db.Errors(ctx, ssot.Page{})
		if err != nil || len(errs) != 2 || errs[1].Reason != "refusal 1 (from 127.0.0.1)" || !errs[1].RecordedAt.Equal(importAt.Add(time.Minute)) {
			t.Fatalf("errors in the store: %+v, %v", errs, err)
		}
		if r := run(t, "", storeEnv(t, u), nil, "audit", "verify"); r.code != ExitOK {
			t.Fatalf("audit verify after import: exit %d, %s%s", r.code, r.stdout, r.stderr)
		}

		t.Run("Again", func(t *testing.T) {
			r := run(t, "", storeEnv(t, u), nil, "ssot", "import", root, "-o", "json")
			var rep importReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitOK {
				t.Fatalf("exit %d, stdout %q, stderr %q: %v", r.code, r.stdout, r.stderr, err)
			}
			if !rep.OK || rep.Written != 0 || rep.Kept != 6 || rep.ErrorsWritten != 0 || rep.Tasks[0].State != "kept" {
				t.Fatalf("second import: %+v", rep)
			}
			if n := len(historyOf(t, db, "T-2026-001")); n != 3 {
				t.Errorf("T-2026-001 has %d records after a second import, want 3", n)
			}
			if errs, _, _ := db.Errors(ctx, ssot.Page{}); len(errs) != 2 {
				t.Errorf("%d errors after a second import, want 2", len(errs))
			}
		})

		t.Run("CountMismatch", func(t *testing.T) {
			appendTo(t, db, "T-2026-002", "written-since")
			r := run(t, "", storeEnv(t, u), nil, "ssot", "import", root)
			wantErr := "ampflow: import: 1 of 3 tasks do not match; first: T-2026-002: the file SSOT holds 1 records, the store's chain 2\n"
			if r.code != ExitFailed || r.stderr != wantErr || !strings.Contains(r.stdout, "1 tasks do not match") {
				t.Fatalf("exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
			}
		})
	})
}

func TestSSOTImportConflict(t *testing.T) {
	root := fileSSOT(t)
	u := storeEngines[0].url(t)
	db := openTestStore(t, u)
	if _, err := db.Append(context.Background(), "T-2026-003", []ssot.Entry{{ID: "event-T-2026-003-1", Kind: "event", Body: json.RawMessage(`{"n":"other"}`)}}); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", storeEnv(t, u), nil, "ssot", "import", root)
	wantErr := "ampflow: import: 1 of 3 tasks do not match; first: T-2026-003: record event-T-2026-003-1 of task T-2026-003 is stored already with another body\n"
	if r.code != ExitFailed || r.stderr != wantErr {
		t.Fatalf("exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	// The other tasks are imported all the same.
	if n := len(historyOf(t, db, "T-2026-001")); n != 3 {
		t.Errorf("T-2026-001 has %d records, want 3", n)
	}
}

// A task id the file SSOT took but the store refuses (a tab) is a
// mismatch; the other tasks are imported.
func TestSSOTImportRefusedTaskID(t *testing.T) {
	root := fileSSOT(t)
	s, err := activities.NewStore(root, activities.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	odd := "T-2026\t004"
	if _, err := s.Record(context.Background(), activities.RecordInput{TaskID: odd,
		Entries: []activities.RecordEntry{{ID: "e1", Kind: activities.KindEvent, Body: json.RawMessage(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	u := storeEngines[0].url(t)
	r := run(t, "", storeEnv(t, u), nil, "ssot", "import", root)
	wantErr := "ampflow: import: 1 of 4 tasks do not match; first: " + odd + ": the store refuses it: task_id: holds a control character\n"
	if r.code != ExitFailed || r.stderr != wantErr {
		t.Fatalf("exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if n := len(historyOf(t, openTestStore(t, u), "T-2026-003")); n != 2 {
		t.Errorf("T-2026-003 has %d records, want 2", n)
	}
}

func TestSSOTImportDryRun(t *testing.T) {
	root := fileSSOT(t)
	u := storeEngines[0].url(t)
	r := run(t, "", storeEnv(t, u), nil, "ssot", "import", "--dry-run", root)
	if r.code != ExitOK || !strings.HasSuffix(r.stdout, "dry run: 3 tasks, 6 records, 2 error log entries; nothing written\n") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "T-2026-001  3     -      0        0     found") {
		t.Errorf("table:\n%s", r.stdout)
	}
	if _, err := os.Stat(u); !os.IsNotExist(err) {
		t.Fatalf("a dry run made the store %s: %v", u, err)
	}
}

func TestSSOTImportRefusals(t *testing.T) {
	empty := t.TempDir()
	u := storeEngines[0].url(t)
	for _, tt := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"NotFileSSOT", []string{empty}, ExitFailed, "ampflow: " + empty + " is not a file SSOT: it has no tasks/ directory\n"},
		{"NoDir", nil, ExitUsage, "ampflow: import takes 1 argument (DIR), got 0\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", storeEnv(t, u), nil, append([]string{"ssot", "import"}, tt.args...)...)
			if r.code != tt.wantCode || !strings.HasPrefix(r.stderr, tt.wantStderr) {
				t.Fatalf("exit %d, stderr %q; want %d, prefix %q", r.code, r.stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(empty, "tasks")); !os.IsNotExist(err) {
		t.Fatalf("import made tasks/ in a directory that is not a file SSOT: %v", err)
	}
}
