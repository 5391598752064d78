package dashboard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type fakeHosts struct {
	hosts []FleetHost
	err   error
}

func (f fakeHosts) Hosts(context.Context) ([]FleetHost, error) { return f.hosts, f.err }

func TestHostsPanel(t *testing.T) {
	f := newFixture(t, testTokens)
	now := t0.Add(time.Hour)
	hosts := fakeHosts{hosts: []FleetHost{
		{Host: "build-1", Alive: true, Slots: 2, InUse: 1, SeenAt: now.Add(-2 * time.Second),
			Running: []RunnerRun{{Host: "build-1", TaskID: "T-2026-001", Role: "executor", Runner: "codex", Account: "team-b", Step: "Bash: go test ./...",
				Queued: now.Add(-5 * time.Minute), Started: now.Add(-4*time.Minute - 10*time.Second), CostUSD: 0.25}},
			Queue: []RunnerRun{
				{Host: "build-1", TaskID: "T-2026-003", Role: "reviewer", Runner: "claude", Priority: 5, Queued: now.Add(-30 * time.Second)},
				{Host: "build-1", TaskID: "T-2026-002", Role: "executor", Runner: "codex", Queued: now.Add(-time.Minute)},
			}},
		{Host: "build-2", Slots: 4, SeenAt: now.Add(-10 * time.Minute)},
	}}
	f.srv.panels = map[string]Panel{PanelHosts: HostsPanel(hosts, func() time.Time { return now })}
	c := f.client(t)
	c.signIn("tok-exec")
	_, page := c.do("GET", "/agents", nil, nil)
	for _, want := range []string{`<h2 id="h-hosts">Hosts</h2>`, `<table class="panel hosts">`,
		`data-label="Host">build-1<`, `data-label="State">alive<`, `data-label="Slots">1 of 2 in use<`,
		`<li><a href="/tasks/T-2026-001">T-2026-001</a> executor · codex · account team-b · Bash: go test ./... · for 4m10s · $0.2500</li>`,
		`<li>#1 <a href="/tasks/T-2026-003">T-2026-003</a> reviewer · priority 5 · waiting 30s</li>`,
		`<li>#2 <a href="/tasks/T-2026-002">T-2026-002</a> executor · priority 0 · waiting 1m0s</li>`,
		`data-label="Host">build-2<`, `data-label="State">gone<`, `data-label="Slots">0 of 4 in use<`, `data-label="Running">–<`, `data-label="Queue">–<`,
		`<time datetime="`, "<h2>Registered agents</h2>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the agents page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="h-runners"`) {
		t.Error("the agents page lists runner agents without a runners panel")
	}

	f.srv.panels = map[string]Panel{PanelHosts: HostsPanel(fakeHosts{}, nil)}
	_, page = c.do("GET", "/agents", nil, nil)
	if !strings.Contains(page, "No runner hosts: no worker with a role in runner mode has written itself to the fleet in the last hour.") {
		t.Error("the agents page lacks the hosts' empty state")
	}
	f.srv.panels = map[string]Panel{PanelHosts: HostsPanel(fakeHosts{err: errors.New("store down")}, nil)}
	_, page = c.do("GET", "/agents", nil, nil)
	if !strings.Contains(page, "reading the fleet: store down") {
		t.Error("the agents page hides the fleet's error")
	}
	f.srv.panels = map[string]Panel{}
	_, page = c.do("GET", "/agents", nil, nil)
	if strings.Contains(page, `id="h-hosts"`) || strings.Contains(page, "Registered agents") {
		t.Error("the agents page lists hosts without a hosts panel")
	}
}
