package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

// LeaseLister reads the leases as their workflows last wrote them
// (*ssot.DB).
type LeaseLister interface {
	Leases(ctx context.Context, f ssot.LeaseFilter, p ssot.Page) ([]ssot.MeshLease, string, error)
}

// EventSearcher reads the agent mesh's events, newest first (*ssot.DB).
type EventSearcher interface {
	SearchEvents(ctx context.Context, q ssot.SearchQuery, p ssot.Page) ([]ssot.MeshEvent, string, error)
}

// LeaseReleaser ends a lease as an admin, through its lease workflow;
// by names the admin.
type LeaseReleaser interface {
	ReleaseLease(ctx context.Context, leaseID, by string) error
}

// leaseActive is a lease workflow's state of a held lease.
const leaseActive = "active"

// Shown on the Leases, Agents and Mesh pages.
const (
	leasesShown = 200
	chatsShown  = 200
	// agentSignals is how many of the newest gate signals the Agents
	// page adds up for the cost of today.
	agentSignals = ssot.MaxLimit
)

// LeasesPanel fills the Leases page: every active lease, newest first,
// with its holder, when it expires and, for admins, a release button.
func LeasesPanel(l LeaseLister) Panel { return leasesPanel{l} }

type leasesPanel struct{ l LeaseLister }

func (p leasesPanel) Table(ctx context.Context) (Table, error) {
	rows, _, err := p.l.Leases(ctx, ssot.LeaseFilter{State: leaseActive}, ssot.Page{Limit: leasesShown})
	if err != nil {
		return Table{}, fmt.Errorf("listing leases: %w", err)
	}
	t := Table{Columns: []string{"Resource", "Holder", "Expires", "Last heartbeat", "Acquired", "TTL", "Lease", "Action"}}
	for _, l := range rows {
		t.Rows = append(t.Rows, []Cell{
			{Text: l.ResourceKey}, {Text: l.AgentID}, {Time: l.ExpiresAt}, {Time: l.LastHeartbeat}, {Time: l.AcquiredAt},
			{Text: strconv.Itoa(l.TTLSeconds) + " s"}, {Text: l.LeaseID},
			{Action: &Action{Path: "/leases/" + url.PathEscape(l.LeaseID) + "/release", Label: "Release",
				Name: "Release " + l.ResourceKey + " held by " + l.AgentID}},
		})
	}
	return t, nil
}

// releaseLease ends a lease from the Leases page's button.
func (s *Server) releaseLease(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	if s.leases == nil {
		s.flashBack(w, r, "/leases", "Leases cannot be released from this worker: it does not reach the workflows.")
		return
	}
	if err := s.leases.ReleaseLease(r.Context(), id, v.Name); err != nil {
		s.flashBack(w, r, "/leases", "Releasing "+id+": "+err.Error())
		return
	}
	s.log.Info("dashboard released a lease", "lease", id, "by", v.Name)
	s.flashBack(w, r, "/leases", "Released "+id+".")
}

// readers are the names the page's viewer reads the mesh as (see
// viewer.meshNames); nil, every event, for an admin. A Table read with
// no viewer in its context reads as nobody: broadcasts and events
// addressed to nobody only.
func readers(ctx context.Context) []string {
	v, ok := viewerFrom(ctx)
	if !ok {
		return []string{"\n"} // no agent's name holds a control character
	}
	return v.meshNames()
}

// MeshPanel fills the Mesh page: the newest agent.chat messages the
// viewer may read (an admin all; another token those it sent, was sent
// or is mentioned in, and broadcasts) by thread, the thread with the newest message first, each root above its
// replies.
func MeshPanel(e EventSearcher) Panel { return meshPanel{e} }

type meshPanel struct{ e EventSearcher }

// chatType is the mesh's event type of a message between agents.
const chatType = "agent.chat"

func (p meshPanel) Table(ctx context.Context) (Table, error) {
	evs, _, err := p.e.SearchEvents(ctx, ssot.SearchQuery{Type: chatType, Viewers: readers(ctx)}, ssot.Page{Limit: chatsShown})
	if err != nil {
		return Table{}, fmt.Errorf("reading the mesh: %w", err)
	}
	var order []string
	threads := map[string][]ssot.MeshEvent{}
	for _, e := range evs { // newest first
		th := e.ThreadID
		if th == "" {
			th = e.ID
		}
		if _, ok := threads[th]; !ok {
			order = append(order, th)
		}
		threads[th] = append(threads[th], e)
	}
	t := Table{Columns: []string{"Thread", "From", "To", "Subject", "Message", "Sent"}}
	for _, th := range order {
		msgs := threads[th]
		slices.SortFunc(msgs, func(a, b ssot.MeshEvent) int { return int(a.Seq - b.Seq) })
		for _, e := range msgs {
			thread := th
			if e.ID != th {
				thread = "↳ " + th
			}
			t.Rows = append(t.Rows, []Cell{{Text: thread}, {Text: e.From}, {Text: e.To}, {Text: e.Subject}, {Text: e.Content}, {Time: e.CreatedAt}})
		}
	}
	return t, nil
}

// TaskReader tells tasks apart from agents: a task holds its branch's
// lease under its own id (*ssot.DB).
type TaskReader interface {
	TaskStates(ctx context.Context, ids []string) (map[string]json.RawMessage, error)
}

// AgentsPanel fills the Agents page from what the store knows of each
// agent: the leases it holds and their newest heartbeat, its newest
// message in the mesh, and what its gate signals cost since midnight UTC.
// A lease holder that is a task is not an agent (its branch lease is on
// the Leases page). gates may be nil.
func AgentsPanel(l LeaseLister, e EventSearcher, gates GateLister, tasks TaskReader, now func() time.Time) Panel {
	if now == nil {
		now = time.Now
	}
	return agentsPanel{l, e, gates, tasks, now}
}

type agentsPanel struct {
	l     LeaseLister
	e     EventSearcher
	gates GateLister
	tasks TaskReader
	now   func() time.Time
}

type agentRow struct {
	heartbeat, said time.Time
	held            []string
	cost            float64
	signals         int
}

func (p agentsPanel) Table(ctx context.Context) (Table, error) {
	agents := map[string]*agentRow{}
	of := func(id string) *agentRow {
		if agents[id] == nil {
			agents[id] = &agentRow{}
		}
		return agents[id]
	}
	leases, _, err := p.l.Leases(ctx, ssot.LeaseFilter{}, ssot.Page{Limit: ssot.MaxLimit})
	if err != nil {
		return Table{}, fmt.Errorf("listing leases: %w", err)
	}
	isTask, err := p.taskHolders(ctx, leases)
	if err != nil {
		return Table{}, err
	}
	for _, l := range leases {
		if isTask[l.AgentID] {
			continue
		}
		a := of(l.AgentID)
		if l.LastHeartbeat.After(a.heartbeat) {
			a.heartbeat = l.LastHeartbeat
		}
		if l.State == leaseActive {
			a.held = append(a.held, l.ResourceKey)
		}
	}
	evs, _, err := p.e.SearchEvents(ctx, ssot.SearchQuery{Type: chatType, Viewers: readers(ctx)}, ssot.Page{Limit: ssot.MaxLimit})
	if err != nil {
		return Table{}, fmt.Errorf("reading the mesh: %w", err)
	}
	for _, e := range evs {
		if e.From == "" || e.From == ssot.MeshSender { // the system's notices
			continue
		}
		if a := of(e.From); e.CreatedAt.After(a.said) {
			a.said = e.CreatedAt
		}
	}
	costs := "–"
	if p.gates != nil {
		y, m, d := p.now().UTC().Date()
		midnight := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		rows, _, err := p.gates.GateList(ctx, ssot.GateFilter{}, ssot.Page{Limit: agentSignals})
		if err != nil {
			return Table{}, fmt.Errorf("listing gate signals: %w", err)
		}
		for _, g := range rows {
			if g.AgentID != "" && !g.ReceivedAt.Before(midnight) {
				a := of(g.AgentID)
				a.cost += g.CostUSD
				a.signals++
			}
		}
		costs = ""
	}
	names := make([]string, 0, len(agents))
	for id := range agents {
		names = append(names, id)
	}
	slices.Sort(names)
	t := Table{Columns: []string{"Agent", "Last heartbeat", "Last message", "Open work", "Cost today (USD)"}}
	for _, id := range names {
		a := agents[id]
		work := "no lease held"
		if len(a.held) > 0 {
			slices.Sort(a.held)
			work = fmt.Sprintf("%d lease(s): %s", len(a.held), strings.Join(a.held, ", "))
		}
		cost := costs
		if cost == "" {
			cost = fmt.Sprintf("%s (%d signal(s))", strconv.FormatFloat(a.cost, 'f', 4, 64), a.signals)
		}
		t.Rows = append(t.Rows, []Cell{{Text: id}, {Time: a.heartbeat}, {Time: a.said}, {Text: work}, {Text: cost}})
	}
	return t, nil
}

// taskHolders are the lease holders that are tasks.
func (p agentsPanel) taskHolders(ctx context.Context, leases []ssot.MeshLease) (map[string]bool, error) {
	if p.tasks == nil {
		return nil, nil
	}
	var ids []string
	for _, l := range leases {
		if !slices.Contains(ids, l.AgentID) {
			ids = append(ids, l.AgentID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	states, err := p.tasks.TaskStates(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("telling tasks from agents: %w", err)
	}
	out := make(map[string]bool, len(states))
	for id := range states {
		out[id] = true
	}
	return out, nil
}
