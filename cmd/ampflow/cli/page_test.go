package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

// runAPI runs the command line against the HTTP API at url, as a user
// would: the CLI's own client, no fake in between.
func runAPI(t *testing.T, url string, args ...string) result {
	t.Helper()
	return runAPIAs(t, url, "", args...)
}

// runAPIAs is runAPI with AMPFLOW_API_TOKEN set to token, when not empty.
func runAPIAs(t *testing.T, url, token string, args ...string) result {
	t.Helper()
	env := map[string]string{"AMPFLOW_DATA_DIR": filepath.Join(t.TempDir(), "data"), "USER": "ana", "AMPFLOW_API_URL": url}
	if token != "" {
		env["AMPFLOW_API_TOKEN"] = token
	}
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), Options{
		Args: args, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Now:       func() time.Time { return testNow },
	})
	return result{code, stdout.String(), stderr.String()}
}

// pagedCommand is a listing command over an API holding five items.
type pagedCommand struct {
	name string
	args []string
	url  func(t *testing.T) string
	// want are the items' ids in the listing's order; column is where a
	// text row shows the id.
	want   []string
	column int
	// jsonID reads an id from an element of the -o json array.
	jsonID string
}

func pagedCommands() []pagedCommand {
	base := testNow.Add(-time.Hour)
	ids := []string{"T-2026-005", "T-2026-004", "T-2026-003", "T-2026-002", "T-2026-001"}
	// serveSSOTOf serves an SSOT holding what fill gives it.
	serveSSOTOf := func(fill func(t *testing.T) ([]decision.Decision, []amp.Message)) func(t *testing.T) string {
		return func(t *testing.T) string {
			ds, msgs := fill(t)
			srv := httptest.NewServer(httpapi.New(httpapi.Options{Tasks: &fakeTasks{}, Store: testSSOT(t, ds, msgs)}).Handler())
			t.Cleanup(srv.Close)
			return srv.URL
		}
	}
	var summaries []workflows.TaskSummary
	var decisions []decision.Decision
	for i, id := range ids {
		summaries = append(summaries, workflows.TaskSummary{TaskID: id, Status: task.StatusInReview, StartedAt: base.Add(-time.Duration(i) * time.Minute)})
		decisions = append(decisions, decision.Decision{ID: id + "-d1", Subject: id, Kind: task.KindPlanApproval,
			RaisedAt: base.Add(time.Duration(i) * time.Minute), Options: []decision.Option{{ID: "approve"}}})
	}
	return []pagedCommand{
		{name: "TaskList", args: []string{"task", "list"}, want: ids, jsonID: "task_id",
			url: func(t *testing.T) string {
				srv := httptest.NewServer(httpapi.New(httpapi.Options{Tasks: &fakeTasks{}, Store: storeWithTasks(t, summaries)}).Handler())
				t.Cleanup(srv.Close)
				return srv.URL
			}},
		{name: "Pending", args: []string{"pending"}, want: ids, jsonID: "subject",
			url: serveSSOTOf(func(*testing.T) ([]decision.Decision, []amp.Message) { return decisions, nil })},
		{name: "Inbox", args: []string{"inbox", "--as", "executor"}, want: ids, column: 2, jsonID: "task_id",
			url: serveSSOTOf(func(t *testing.T) ([]decision.Decision, []amp.Message) {
				var msgs []amp.Message
				for i, id := range ids {
					m := inboxMessage(t)
					m.MsgID, m.TaskID = "task_dispatch-"+id, id
					m.Timestamp = base.Add(time.Duration(i) * time.Second).Format(amp.TimestampLayout)
					msgs = append(msgs, m)
				}
				return nil, msgs
			})},
		// serveSSOT holds five records of T-2026-005.
		{name: "History", args: []string{"task", "history", "T-2026-005"}, url: serveSSOT, column: 3, jsonID: "id", // RECORDED takes two fields
			want: []string{"task_dispatch-T-2026-005-1", "ack-T-2026-005-2", "escalation-T-2026-005-3", "d-1", "d-1-outcome"}},
	}
}

// rowIDs are the ids in column of a text table's rows.
func rowIDs(t *testing.T, stdout string, column int) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	var out []string
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > column {
			out = append(out, f[column])
		}
	}
	return out
}

func TestListingFlags(t *testing.T) {
	for _, c := range pagedCommands() {
		t.Run(c.name, func(t *testing.T) {
			url := c.url(t)
			t.Run("MoreLines", func(t *testing.T) {
				args := append(slices.Clone(c.args), "--limit", "2")
				prefix := "more: ampflow " + strings.Join(args, " ") + " --cursor "
				var got []string
				for page := 1; ; page++ {
					if page > 3 {
						t.Fatalf("more than 3 pages: %v", got)
					}
					r := runAPI(t, url, args...)
					wantExit(t, r, ExitOK)
					got = append(got, rowIDs(t, r.stdout, c.column)...)
					if r.stderr == "" {
						break
					}
					cursor, ok := strings.CutPrefix(strings.TrimSuffix(r.stderr, "\n"), prefix)
					if !ok || strings.ContainsAny(cursor, " \n") {
						t.Fatalf("stderr %q, want one line %q…", r.stderr, prefix)
					}
					args = append(append(slices.Clone(c.args), "--limit", "2"), "--cursor", cursor)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("pages gave %v, want %v", got, c.want)
				}
			})
			t.Run("All", func(t *testing.T) {
				r := runAPI(t, url, append(slices.Clone(c.args), "--all", "--limit", "2")...)
				wantExit(t, r, ExitOK)
				if got := rowIDs(t, r.stdout, c.column); !slices.Equal(got, c.want) || r.stderr != "" {
					t.Errorf("--all gave %v, stderr %q; want %v", got, r.stderr, c.want)
				}
			})
			t.Run("JSON", func(t *testing.T) {
				args := append([]string{"-o", "json"}, append(slices.Clone(c.args), "--limit", "3")...)
				var got []string
				for page := 1; page <= 2; page++ {
					r := runAPI(t, url, args...)
					wantExit(t, r, ExitOK)
					var items []map[string]any
					if err := json.Unmarshal([]byte(r.stdout), &items); err != nil {
						t.Fatalf("stdout %q is not a JSON array: %v", r.stdout, err)
					}
					for _, it := range items {
						id, _ := it[c.jsonID].(string)
						got = append(got, id)
					}
					if page == 2 {
						if r.stderr != "" {
							t.Errorf("the last page's stderr %q", r.stderr)
						}
						break
					}
					var more struct {
						NextCursor string `json:"next_cursor"`
					}
					if err := json.Unmarshal([]byte(r.stderr), &more); err != nil || more.NextCursor == "" {
						t.Fatalf("stderr %q, want {\"next_cursor\":…}: %v", r.stderr, err)
					}
					args = append(args, "--cursor", more.NextCursor)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("JSON pages gave %v, want %v", got, c.want)
				}
			})
			t.Run("AllWithCursor", func(t *testing.T) {
				r := runAPI(t, url, append(slices.Clone(c.args), "--all", "--cursor", "abc")...)
				wantExit(t, r, ExitUsage)
				if !strings.Contains(r.stderr, "--all reads from the first page; it cannot be given with --cursor") {
					t.Errorf("stderr %q", r.stderr)
				}
			})
			t.Run("LimitRange", func(t *testing.T) {
				for _, v := range []string{"-1", "1001"} {
					r := runAPI(t, url, append(slices.Clone(c.args), "--limit", v)...)
					wantExit(t, r, ExitUsage)
					if !strings.Contains(r.stderr, "--limit "+v+": must be from 1 to 1000") {
						t.Errorf("--limit %s: stderr %q", v, r.stderr)
					}
				}
			})
			t.Run("BadCursor", func(t *testing.T) {
				r := runAPI(t, url, append(slices.Clone(c.args), "--cursor", "not-a-cursor")...)
				wantExit(t, r, ExitFailed)
				if !strings.Contains(r.stderr, "cursor: is not a next_cursor of GET") {
					t.Errorf("stderr %q", r.stderr)
				}
			})
		})
	}
}
