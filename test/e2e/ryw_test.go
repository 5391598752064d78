package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

// TestReadYourWrites starts 64 tasks at once over the HTTP API of
// `ampflow dev` and reads each back the moment its start answers: by id,
// its history (the plan record first), the task list and its dashboard
// page. None may be missing.
func TestReadYourWrites(t *testing.T) {
	dir := t.TempDir()
	p := startDev(t, dir) // no tokens: the open API and dashboard on loopback
	base := "http://" + p.api
	repo := gitRepo(t)
	plan := mustJSON(t, lowRiskPlan(repo))
	hc := &http.Client{Timeout: time.Minute}

	get := func(path string, out any) (int, error) {
		resp, err := hc.Get(base + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || out == nil || resp.StatusCode != http.StatusOK {
			return resp.StatusCode, err
		}
		return resp.StatusCode, json.Unmarshal(b, out)
	}

	const n = 64
	var misses atomic.Int64
	miss := func(format string, args ...any) {
		misses.Add(1)
		t.Errorf(format, args...)
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body, _ := json.Marshal(httpapi.StartRequest{Plan: plan})
			resp, err := hc.Post(base+"/v1/tasks", "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Errorf("start %d: %v", i, err)
				return
			}
			var started httpapi.StartResponse
			err = json.NewDecoder(resp.Body).Decode(&started)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || err != nil {
				t.Errorf("start %d: %d (%v)", i, resp.StatusCode, err)
				return
			}
			id := started.TaskID
			ids[i] = id

			var hist httpapi.HistoryResponse
			if code, err := get("/v1/tasks/"+id+"/history", &hist); code != http.StatusOK || err != nil {
				miss("history of %s right after its start: %d (%v)", id, code, err)
			} else if len(hist.Records) == 0 || hist.Records[0].ID != workflows.PlanRecordID(id) {
				miss("history of %s right after its start has no plan record first: %d records", id, len(hist.Records))
			}
			var list httpapi.ListResponse
			if code, err := get("/v1/tasks?limit=1000", &list); code != http.StatusOK || err != nil {
				miss("list right after %s started: %d (%v)", id, code, err)
			} else if !slices.ContainsFunc(list.Tasks, func(s workflows.TaskSummary) bool { return s.TaskID == id }) {
				miss("list right after %s started: not among its %d tasks", id, len(list.Tasks))
			}
			if code, err := get("/tasks/"+id, nil); code != http.StatusOK || err != nil {
				miss("dashboard page of %s right after its start: %d (%v)", id, code, err)
			}
			var st struct {
				TaskID string `json:"task_id"`
			}
			if code, err := get("/v1/tasks/"+id, &st); code != http.StatusOK || err != nil || st.TaskID != id {
				miss("GET /v1/tasks/%s right after its start: %d %q (%v)", id, code, st.TaskID, err)
			}
		})
	}
	wg.Wait()
	if d := slices.Compact(slices.Sorted(slices.Values(ids))); len(d) != n {
		t.Errorf("%d starts got %d distinct ids", n, len(d))
	}
	t.Logf("%d starts, %d reads missed", n, misses.Load())
	if t.Failed() {
		out := p.output()
		t.Logf("ampflow dev, last lines:\n%s", out[max(0, len(out)-4000):])
	}
}
