package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

// auditStore is a store with three tasks: T-2026-001 (m1, m2, m3),
// T-2026-002 (n1, n2) and T-2026-003 (p1).
func auditStore(t *testing.T, e storeEngine) string {
	t.Helper()
	u := e.url(t)
	db := openTestStore(t, u)
	appendTo(t, db, "T-2026-001", "m1", "m2")
	appendTo(t, db, "T-2026-002", "n1", "n2")
	appendTo(t, db, "T-2026-001", "m3")
	appendTo(t, db, "T-2026-003", "p1")
	return u
}

func TestAuditVerify(t *testing.T) {
	eachStoreEngine(t, func(t *testing.T, e storeEngine) {
		t.Run("Untampered", func(t *testing.T) {
			u := auditStore(t, e)
			r := run(t, "", storeEnv(t, u), nil, "audit", "verify")
			if r.code != ExitOK || r.stdout != "verified 3 tasks, 6 records: every chain holds\n" || r.stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			r = run(t, "", storeEnv(t, u), nil, "audit", "verify", "T-2026-002", "-o", "json")
			var rep verifyReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitOK {
				t.Fatalf("exit %d, stdout %q: %v", r.code, r.stdout, err)
			}
			if !rep.OK || rep.Tasks != 1 || rep.Records != 2 || rep.Head == nil || rep.Head.Seq != 2 || len(rep.Failures) != 0 {
				t.Fatalf("report %+v", rep)
			}
		})

		// Each way of tampering breaks the chain at the first row it
		// touched, and the other tasks still verify.
		tests := []struct {
			name    string
			stmt    string
			args    []any
			wantErr string
			wantRow []string // task, record, id as the table prints them
		}{
			{"BodyEdited", `UPDATE records SET body = ? WHERE id = ?`, []any{`{"msg_id":"m2","task_id":"T-2026-001","approved":true}`, "m2"},
				"ampflow: audit failed: task T-2026-001: record #2 (m2): body was changed (body_hash differs)\n",
				[]string{"T-2026-001", "#2", "m2"}},
			{"MiddleRowDeleted", `DELETE FROM records WHERE id = ?`, []any{"m2"},
				"ampflow: audit failed: task T-2026-001: record #2: is missing (deleted)\n",
				[]string{"T-2026-001", "#2"}},
			{"LastRowDeleted", `DELETE FROM records WHERE id = ?`, []any{"n2"},
				"ampflow: audit failed: task T-2026-002: record #2: is missing (deleted): the chain head is #2\n",
				[]string{"T-2026-002", "#2"}},
			{"RowInserted", `INSERT INTO records (task_id, seq, id, kind, recorded_at, digest, body, body_hash, prev_hash, hash)
				SELECT task_id, 2, 'forged', kind, recorded_at, digest, body, body_hash, hash, hash FROM records WHERE id = ?`, []any{"p1"},
				"ampflow: audit failed: task T-2026-003: record #2 (forged): fields were changed (hash differs)\n",
				[]string{"T-2026-003", "#2", "forged"}},
			{"KindEdited", `UPDATE records SET kind = 'decision' WHERE id = ?`, []any{"n1"},
				"ampflow: audit failed: task T-2026-002: record #1 (n1): fields were changed (hash differs)\n",
				[]string{"T-2026-002", "#1", "n1"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				u := auditStore(t, e)
				rawExec(t, e, u, tt.stmt, tt.args...)
				r := run(t, "", storeEnv(t, u), nil, "audit", "verify")
				if r.code != ExitFailed || r.stderr != tt.wantErr {
					t.Fatalf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, tt.wantErr)
				}
				lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
				if len(lines) != 3 || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), strings.Join(tt.wantRow, " ")) ||
					!strings.HasPrefix(lines[2], "checked 3 tasks: 2 verify (") || !strings.HasSuffix(lines[2], " records), 1 do not") {
					t.Fatalf("stdout:\n%s", r.stdout)
				}
				// The task named alone fails the same way; another passes.
				task := tt.wantRow[0]
				r = run(t, "", storeEnv(t, u), nil, "audit", "verify", task, "-o", "json")
				var rep verifyReport
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitFailed {
					t.Fatalf("%s alone: exit %d, stdout %q: %v", task, r.code, r.stdout, err)
				}
				if rep.OK || len(rep.Failures) != 1 || rep.Failures[0].TaskID != task || "#"+itoa(rep.Failures[0].Seq) != tt.wantRow[1] {
					t.Fatalf("%s alone: %+v", task, rep)
				}
				if !strings.Contains(r.stderr, `"code":"failed"`) || !strings.Contains(r.stderr, "task "+task+": record "+tt.wantRow[1]) {
					t.Fatalf("%s alone: stderr %q", task, r.stderr)
				}
				other := "T-2026-001"
				if task == other {
					other = "T-2026-003"
				}
				if r := run(t, "", storeEnv(t, u), nil, "audit", "verify", other); r.code != ExitOK {
					t.Fatalf("%s: exit %d, stderr %q", other, r.code, r.stderr)
				}
			})
		}

		t.Run("EveryBrokenTaskListed", func(t *testing.T) {
			u := auditStore(t, e)
			rawExec(t, e, u, `DELETE FROM records WHERE id = ?`, "m1")
			rawExec(t, e, u, `UPDATE records SET body = ? WHERE id = ?`, `{}`, "p1")
			r := run(t, "", storeEnv(t, u), nil, "audit", "verify", "-o", "json")
			var rep verifyReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitFailed {
				t.Fatalf("exit %d, stdout %q: %v", r.code, r.stdout, err)
			}
			if len(rep.Failures) != 2 || rep.Failures[0].TaskID != "T-2026-001" || rep.Failures[1].TaskID != "T-2026-003" ||
				rep.Tasks != 3 || rep.Records != 2 {
				t.Fatalf("report %+v; want T-2026-001 and T-2026-003 broken, T-2026-002's 2 records verified", rep)
			}
			if !strings.Contains(r.stderr, "(2 tasks do not verify)") {
				t.Fatalf("stderr %q", r.stderr)
			}
		})
	})
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestAuditVerifyProgress(t *testing.T) {
	saved := verifyPage
	verifyPage = 2
	t.Cleanup(func() { verifyPage = saved })
	u := auditStore(t, storeEngines[0])
	r := run(t, "", storeEnv(t, u), nil, "audit", "verify", "--ssot-url", u)
	if r.code != ExitOK || r.stderr != "audit: 2 tasks checked so far, 5 records verified, 0 tasks do not verify\n" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	// Progress is text for a person: -o json keeps stderr for errors.
	if r := run(t, "", storeEnv(t, u), nil, "audit", "verify", "-o", "json"); r.code != ExitOK || r.stderr != "" {
		t.Fatalf("-o json: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestAuditVerifyRefusals(t *testing.T) {
	u := auditStore(t, storeEngines[0])
	missing := filepath.Join(t.TempDir(), "nope.db")
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"UnknownTask", storeEnv(t, u), []string{"T-2026-404"}, ExitFailed, "ampflow: task T-2026-404 has no records in the SSOT store\n"},
		{"NoStore", storeEnv(t, missing), nil, ExitFailed, "ampflow: no SSOT store at " + missing + ": check ssot.url\n"},
		{"NoStoreFlag", storeEnv(t, u), []string{"--ssot-url", missing}, ExitFailed, "ampflow: no SSOT store at " + missing + ": check --ssot-url\n"},
		{"TwoTasks", storeEnv(t, u), []string{"T-1", "T-2"}, ExitUsage, "ampflow: verify takes at most 1 argument (TASK_ID), got 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.env, nil, append([]string{"audit", "verify"}, tt.args...)...)
			if r.code != tt.wantCode || !strings.HasPrefix(r.stderr, tt.wantStderr) || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, prefix %q", r.code, r.stdout, r.stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
	// Verifying never makes a store where there was none.
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("%s after verify: %v", missing, err)
	}
}

// gateStore is auditStore with a signal no gate held (gate_free), a
// gated one pending (gate_held) and a budget raise.
func gateStore(t *testing.T, e storeEngine) string {
	t.Helper()
	u := auditStore(t, e)
	db := openTestStore(t, u)
	ctx := context.Background()
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	for _, g := range []ssot.GateRow{
		{GateID: "gate_free", Kind: "signal", RunID: "r1", AgentID: "bot", Status: "approved", ReceivedAt: at},
		{GateID: "gate_held", Kind: "signal", RunID: "r2", AgentID: "bot", Gated: true, Status: "pending", ReceivedAt: at},
	} {
		body := fmt.Sprintf(`{"signal":{"run_id":%q},"gated":%t}`, g.RunID, g.Gated)
		if _, _, err := db.RecordGate(ctx, g, ssot.GateSubject(g.GateID),
			[]ssot.Entry{{ID: g.GateID + "-signal", Kind: "signal", RecordedAt: at, Body: []byte(body)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.RaiseBudget(ctx, ssot.BudgetRaise{RaiseID: "raise_1", BudgetKey: "bot:*:day", PeriodOf: "2026-11-23", AmountUSD: 2, RaisedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestAuditVerifyRows: audit verify compares the gates, contracts and
// budget raises with their chains and names a row changed by hand.
func TestAuditVerifyRows(t *testing.T) {
	eachStoreEngine(t, func(t *testing.T, e storeEngine) {
		t.Run("Untampered", func(t *testing.T) {
			u := gateStore(t, e)
			r := run(t, "", storeEnv(t, u), nil, "audit", "verify")
			want := "verified 6 tasks, 9 records: every chain holds; 2 gates, 0 contracts and 1 budget raise agree with them\n"
			if r.code != ExitOK || r.stdout != want || r.stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
		t.Run("GateApprovedByHand", func(t *testing.T) {
			u := gateStore(t, e)
			rawExec(t, e, u, `UPDATE gates SET status = 'approved' WHERE gate_id = ?`, "gate_held")
			r := run(t, "", storeEnv(t, u), nil, "audit", "verify")
			wantErr := "ampflow: audit failed: gates row gate_held disagrees with its chain: status is approved, but chain gate-gate_held holds no outcome of its decision\n"
			if r.code != ExitFailed || r.stderr != wantErr {
				t.Fatalf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, wantErr)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 3 || strings.Join(strings.Fields(lines[1])[:2], " ") != "gates gate_held" ||
				lines[2] != "compared 2 gates, 0 contracts and 1 budget raise with their chains: 1 disagree" {
				t.Fatalf("stdout:\n%s", r.stdout)
			}
			// The decisive read refuses the row too.
			db := openTestStore(t, u)
			var re *ssot.RowError
			if _, err := db.Gate(context.Background(), "gate_held"); !errors.As(err, &re) || re.Key != "gate_held" {
				t.Fatalf("reading the gate: %v", err)
			}
		})
		t.Run("RaiseChangedByHand", func(t *testing.T) {
			u := gateStore(t, e)
			rawExec(t, e, u, `UPDATE gate_budget_raises SET amount_usd = 500 WHERE raise_id = ?`, "raise_1")
			r := run(t, "", storeEnv(t, u), nil, "audit", "verify", "-o", "json")
			var rep verifyReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitFailed {
				t.Fatalf("exit %d, stdout %q: %v", r.code, r.stdout, err)
			}
			if rep.OK || len(rep.Failures) != 0 || len(rep.Rows) != 1 || rep.Rows[0].Table != "gate_budget_raises" || rep.Rows[0].Key != "raise_1" ||
				!strings.Contains(rep.Rows[0].Problem, "amount_usd is 500") {
				t.Fatalf("report %+v", rep)
			}
			db := openTestStore(t, u)
			var re *ssot.RowError
			if _, err := db.BudgetRaised(context.Background(), "bot:*:day", "2026-11-23"); !errors.As(err, &re) || re.Key != "raise_1" {
				t.Fatalf("reading the raise: %v", err)
			}
		})
	})
}
