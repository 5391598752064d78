package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/runshift"
	"github.com/ampflow/ampflow/workers"
	"github.com/ampflow/ampflow/workflows/gate"
)

// SignalFigures are the action gate's figures: `ampflow bench --signals N`.
type SignalFigures struct {
	// Signals posted that needed no gate (200 approved), C in flight.
	Signals     int     `json:"signals"`
	SignalsPerS float64 `json:"signals_per_s"`
	// Accept latency of those signals over HTTP, in ms: request sent to
	// answer read, the record written.
	AcceptP50MS float64 `json:"accept_p50_ms"`
	AcceptP95MS float64 `json:"accept_p95_ms"`
	AcceptP99MS float64 `json:"accept_p99_ms"`
	// Gates opened (202 pending) and their accept latency, in ms.
	Gates            int     `json:"gates"`
	GatedAcceptP50MS float64 `json:"gated_accept_p50_ms"`
	GatedAcceptP99MS float64 `json:"gated_accept_p99_ms"`
	// GatesResolvedPerS is gates approved per second, C at once: the
	// decision read, answered, and the gate approved in the store.
	GatesResolvedPerS float64       `json:"gates_resolved_per_s"`
	ResolveElapsed    time.Duration `json:"-"`
	SignalsElapsed    time.Duration `json:"-"`
}

const benchAgentKey = "rs-amp-bench-0123456789abcdef"

// measureSignals posts Options.Signals signals that need no gate, then a
// quarter as many that open a gate, and approves those gates.
func (b *bench) measureSignals(ctx context.Context, parts *workers.Parts) (Result, error) {
	o := b.o
	r := Result{Concurrency: o.Concurrency, SSOT: b.store.Engine()}
	cfg := config.Default().Gate
	cfg.Agents = []config.GateAgent{{ID: "bench-agent", KeyEnv: "BENCH_AGENT_KEY"}}
	in, err := runshift.NewIntake(cfg, config.Default().Pricing, parts.Store, func(ctx context.Context, gi gate.Input) (gate.Started, error) {
		return gate.Start(ctx, b.temporal, ampflowQueue, gi)
	}, func(string) (string, bool) { return benchAgentKey, true }, nil)
	if err != nil {
		return r, err
	}
	in.Logger = slog.New(slog.DiscardHandler)
	api := httpapi.New(httpapi.Options{Tasks: parts.Tasks, Store: parts.Store, Logger: o.Logger, Rate: -1})
	runshift.Register(api, in)
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.Concurrency}, Timeout: 2 * time.Minute}
	post := func(ctx context.Context, run string, gated bool, lat *latencies) (runshift.Reply, error) {
		body, _ := json.Marshal(map[string]any{
			"amp_version": "1.0", "agent_id": "bench-agent", "run_id": run, "project_id": "bench", "status": "completed",
			"summary": "Drafted the release notes", "proposed_action": "Publish the release notes",
			"artifacts": []any{map[string]any{"type": "text", "content": "notes"}}, "model": "claude-sonnet-4-6",
			"input_tokens": 1842, "output_tokens": 614, "cost_usd": 0.014736, "gate_required": gated,
			"started_at": "2026-03-06T22:10:38Z", "completed_at": "2026-03-06T22:10:46Z",
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/signals", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+benchAgentKey)
		began := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return runshift.Reply{}, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if lat != nil {
			lat.add(time.Since(began))
		}
		if err != nil {
			return runshift.Reply{}, err
		}
		var rep runshift.Reply
		want := http.StatusOK
		if gated {
			want = http.StatusAccepted
		}
		if resp.StatusCode != want || json.Unmarshal(b, &rep) != nil {
			return rep, fmt.Errorf("signal %s answered %d: %s", run, resp.StatusCode, b)
		}
		return rep, nil
	}
	if err := pool(ctx, b.names("bench-warmup-", 5), 1, nil, func(ctx context.Context, _ int, run string) error {
		_, err := post(ctx, run, false, nil)
		return err
	}); err != nil {
		return r, fmt.Errorf("warming up: %w", err)
	}

	f := &SignalFigures{Signals: o.Signals, Gates: max(1, o.Signals/4)}
	lat := &latencies{}
	f.SignalsElapsed, err = b.phase(ctx, "signals", "accepted", b.names("bench-run-", f.Signals),
		func(ctx context.Context, _ int, run string) error { _, err := post(ctx, run, false, lat); return err })
	if err != nil {
		return r, fmt.Errorf("signals: %w", err)
	}
	ds := lat.all()
	f.SignalsPerS = round(float64(f.Signals)/f.SignalsElapsed.Seconds(), 1)
	f.AcceptP50MS, f.AcceptP95MS, f.AcceptP99MS = ms(Percentile(ds, 50)), ms(Percentile(ds, 95)), ms(Percentile(ds, 99))

	gatedLat := &latencies{}
	ids := make([]string, f.Gates)
	_, err = b.phase(ctx, "gated signals", "pending", b.names("bench-gated-", f.Gates), func(ctx context.Context, i int, run string) error {
		rep, err := post(ctx, run, true, gatedLat)
		ids[i] = rep.GateID
		return err
	})
	if err != nil {
		return r, fmt.Errorf("gated signals: %w", err)
	}
	gds := gatedLat.all()
	f.GatedAcceptP50MS, f.GatedAcceptP99MS = ms(Percentile(gds, 50)), ms(Percentile(gds, 99))

	// Resolved is decided by an admin and approved in the store, where
	// GET /v1/gates reads it. The admin reads the open decisions as
	// `ampflow pending` does, from the SSOT.
	began := time.Now()
	count, stop := b.progress("resolve", "gates approved", f.Gates)
	defer stop()
	for {
		rows, _, err := b.store.GateList(ctx, ssot.GateFilter{Status: string(gate.StatusPending)}, ssot.Page{Limit: 1})
		if err != nil {
			return r, err
		}
		if len(rows) == 0 {
			break
		}
		open, _, err := b.store.Pending(ctx, ssot.Page{Limit: ssot.MaxLimit})
		if err != nil {
			return r, err
		}
		var ds []decision.Decision
		for _, p := range open {
			var d decision.Decision
			if err := json.Unmarshal(p.Body, &d); err != nil {
				return r, fmt.Errorf("open decision %s: %w", p.ID, err)
			}
			ds = append(ds, d)
		}
		err = pool(ctx, make([]string, len(ds)), o.Concurrency, count, func(ctx context.Context, i int, _ string) error {
			d := ds[i]
			_, err := b.tasks.Decide(ctx, d.Subject, decision.Answer{DecisionID: d.ID, Option: decision.OptApprove, Digest: d.Digest, By: benchAdmin, Channel: "cli"})
			var te *task.Error
			if errors.As(err, &te) && (te.Code == task.CodeDecided || te.Code == task.CodeFinished) {
				// Approved in an earlier round, its gate perhaps ended
				// already: the store's list lags.
				return nil
			}
			return err
		})
		if err != nil {
			return r, fmt.Errorf("approving the gates: %w", err)
		}
		if len(ds) == 0 {
			select {
			case <-ctx.Done():
				return r, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	f.ResolveElapsed = time.Since(began)
	f.GatesResolvedPerS = round(float64(f.Gates)/f.ResolveElapsed.Seconds(), 1)
	r.Signals = f
	peak, err := procStatus("VmHWM")
	if err != nil {
		return r, err
	}
	r.PeakRSSMB = round(peak, 1)
	return r, nil
}

// benchAdmin decides the benchmark's gates.
const benchAdmin = "bench-admin"
