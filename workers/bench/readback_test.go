package bench

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

// TestReadBackMisses serves an API that knows T-2026-001 everywhere,
// T-2026-002 by id only (no history yet, not listed, as a store written
// after the start answered would), and counts the second's misses.
func TestReadBackMisses(t *testing.T) {
	known := map[string]bool{"T-2026-001": true}
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/tasks/{id}", func(w http.ResponseWriter, r *http.Request) {
		write(w, task.State{TaskID: r.PathValue("id")})
	})
	mux.HandleFunc("GET /v1/tasks/{id}/history", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !known[id] {
			http.Error(w, `{"error":"not_found"}`, http.StatusNotFound)
			return
		}
		write(w, httpapi.HistoryResponse{TaskID: id, Records: []ssot.Record{{TaskID: id, ID: workflows.PlanRecordID(id)}}})
	})
	mux.HandleFunc("GET /v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		// Two pages: the known task is on the second.
		if r.URL.Query().Get("cursor") == "" {
			write(w, httpapi.ListResponse{Tasks: []workflows.TaskSummary{{TaskID: "T-2026-900"}}, NextCursor: "p2"})
			return
		}
		write(w, httpapi.ListResponse{Tasks: []workflows.TaskSummary{{TaskID: "T-2026-001"}}})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	a := &api{base: srv.URL, client: srv.Client()}

	if err := a.readBack(t.Context(), "T-2026-001"); err != nil {
		t.Fatal(err)
	}
	if n, err := a.result(); n != 0 || err != nil {
		t.Fatalf("a task found by every read: %d misses, %v", n, err)
	}
	if err := a.readBack(t.Context(), "T-2026-002"); err != nil {
		t.Fatal(err)
	}
	n, err := a.result()
	if n != 2 || !errors.Is(err, ErrReadMisses) {
		t.Fatalf("a task by id only: %d misses, %v; want 2 and ErrReadMisses", n, err)
	}
	for _, want := range []string{"2 of 6 reads", "GET /v1/tasks/{id}/history of T-2026-002: GET /v1/tasks/T-2026-002/history: 404", "GET /v1/tasks of T-2026-002: not among the 2 pages"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestRunOpenReadsBack runs the bench with a few open tasks: every one is
// read back at once through the API, with no miss.
func TestRunOpenReadsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded Temporal server")
	}
	r, err := Run(t.Context(), Options{Tasks: 1, Concurrency: 4, Open: 8})
	if err != nil {
		t.Fatalf("bench --open 8: %v", err)
	}
	if r.ReadMisses == nil || *r.ReadMisses != 0 {
		t.Fatalf("read_misses %v, want 0", r.ReadMisses)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"read_misses":0`) {
		t.Errorf("-o json lacks read_misses: %s", b)
	}
}
