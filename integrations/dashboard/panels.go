package dashboard

import (
	"context"
	"net/http"
)

// panelInfo is what a system page says before its system fills it.
var panelInfo = map[string]struct{ Heading, Empty string }{
	PanelGates:  {"Gates", "No gates yet: signals with their cost and the contracts they check will be listed here once the gate system runs in this deployment."},
	PanelLeases: {"Leases", "No leases yet: each lease's holder, its expiry countdown and a release button will be listed here once the lease system runs in this deployment."},
	PanelAgents: {"Agents", "No agents yet: each agent's last heartbeat, open work and cost today will be listed here once agents register with this deployment."},
	PanelMesh:   {"Mesh", "No conversations yet: the agents' conversation feed, by thread, will be shown here once the mesh runs in this deployment."},
	PanelGoals:  {"Goals", "No goals yet: each goal's tasks, their states, what they wait on and their cost will be listed here once a goal starts (ampflow goal start)."},
}

type panelData struct {
	Name, Heading, Empty string
	Table                *Table
	Error                string
	// Runners and Hosts, on the Agents page, list the runner agents and
	// the fleet's runner hosts above the agents that register themselves.
	Runners, Hosts *panelSection
}

// panelSection is a table of its own on a system page; ID names its
// element.
type panelSection struct {
	ID, Heading, Empty string
	Table              *Table
	Error              string
}

// fill sets the section's table, or its error, from its panel.
func (sec *panelSection) fill(ctx context.Context, p Panel) *panelSection {
	if t, err := p.Table(ctx); err != nil {
		sec.Error = err.Error()
	} else if len(t.Rows) > 0 {
		sec.Table = &t
	}
	return sec
}

// panelPage serves a system page from its Panel, or its empty state.
func (s *Server) panelPage(name string) func(http.ResponseWriter, *http.Request, viewer) {
	info := panelInfo[name]
	return func(w http.ResponseWriter, r *http.Request, v viewer) {
		data := panelData{Name: name, Heading: info.Heading, Empty: info.Empty}
		if p := s.panels[name]; p != nil {
			t, err := p.Table(context.WithValue(r.Context(), viewerKey{}, v))
			if err != nil {
				data.Error = err.Error()
			} else if len(t.Rows) > 0 {
				data.Table = &t
			}
		}
		if p := s.panels[PanelRunners]; name == PanelAgents && p != nil {
			data.Runners = (&panelSection{ID: "runners", Heading: "Runner agents",
				Empty: "No runner agent: no role runs an agent CLI (agents.<role>.mode: runner) in this deployment."}).fill(context.WithValue(r.Context(), viewerKey{}, v), p)
		}
		if p := s.panels[PanelHosts]; name == PanelAgents && p != nil {
			data.Hosts = (&panelSection{ID: "hosts", Heading: "Hosts",
				Empty: "No runner hosts: no worker with a role in runner mode has written itself to the fleet in the last hour."}).fill(context.WithValue(r.Context(), viewerKey{}, v), p)
		}
		d := s.base(w, r, v, info.Heading, name)
		d.Data = data
		s.render(w, r, http.StatusOK, "panel", d)
	}
}
