package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows"
)

// ReadSamples is how many requests of each read the benchmark times.
const ReadSamples = 300

// ReadLatency is the latency of one API read over the open tasks, in ms.
type ReadLatency struct {
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
}

// Reads are the latencies of the SSOT's indexed reads through the HTTP
// API, with Options.Open tasks open.
type Reads struct {
	Inbox     ReadLatency `json:"inbox"`
	Decisions ReadLatency `json:"decisions"`
	History   ReadLatency `json:"history"`
	// Samples is the number of requests timed for each.
	Samples int `json:"samples"`
}

// openAwaiting starts a task that is left waiting: an even i waits for
// plan approval (an open decision), an odd i has its dispatch waiting in
// the executor's inbox, never ACKed. Once its start answers, the task is
// read back through the API (api.readBack).
func (b *bench) openAwaiting(ctx context.Context, i int, taskID string) error {
	branch, err := b.repo.branch(taskID)
	if err != nil {
		return err
	}
	p := plan(b.repo, branch)
	want := task.StatusDispatched
	if i%2 == 0 {
		p.RiskLevel = amp.RiskHigh // plan approval is the admins' by the default policy
		want = task.StatusAwaitingApproval
	}
	if err := b.tasks.Start(ctx, task.Input{TaskID: taskID, Plan: p, Coordinator: "ampflow bench", Policy: workflows.NewPolicy(config.Default())}); err != nil {
		return err
	}
	if b.api != nil {
		if err := b.api.readBack(ctx, taskID); err != nil {
			return err
		}
	}
	for {
		st, err := b.store.Task(ctx, taskID)
		if err == nil && st.Status == string(want) {
			return nil
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("task %s: waiting for %s in the SSOT (now %q, %v): %w", taskID, want, st.Status, err, ctx.Err())
		}
	}
}

// measureReads times ReadSamples requests of each read of the HTTP API
// over the SSOT, one at a time.
func (b *bench) measureReads(ctx context.Context, a *api, ids []string) (Reads, error) {
	get := func(path string) (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		resp, err := a.client.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return took, err
	}
	r := Reads{Samples: ReadSamples}
	for _, c := range []struct {
		out  *ReadLatency
		path func() string
	}{
		{&r.Inbox, func() string { return "/v1/inbox?role=executor" }},
		{&r.Decisions, func() string { return "/v1/decisions" }},
		{&r.History, func() string { return "/v1/tasks/" + ids[rand.IntN(len(ids))] + "/history" }},
	} {
		ds := make([]time.Duration, 0, ReadSamples)
		for range ReadSamples {
			d, err := get(c.path())
			if err != nil {
				return r, err
			}
			ds = append(ds, d)
		}
		*c.out = ReadLatency{P50MS: ms(Percentile(ds, 50)), P95MS: ms(Percentile(ds, 95)), P99MS: ms(Percentile(ds, 99))}
	}
	return r, nil
}
