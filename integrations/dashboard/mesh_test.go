package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

// releases records the releases asked for; err refuses them.
type releases struct {
	ids, by []string
	err     error
}

func (r *releases) ReleaseLease(_ context.Context, id, by string) error {
	if r.err != nil {
		return r.err
	}
	r.ids, r.by = append(r.ids, id), append(r.by, by)
	return nil
}

func seedLease(t *testing.T, db *ssot.DB, id, key, agent, state string, hb time.Time) {
	t.Helper()
	l := ssot.MeshLease{LeaseID: id, ResourceKey: key, AgentID: agent, State: state, TTLSeconds: 300,
		AcquiredAt: hb.Add(-time.Minute), ExpiresAt: hb.Add(5 * time.Minute), LastHeartbeat: hb, Version: 1}
	if state != leaseActive {
		l.ReleasedAt, l.Reason = hb, "released"
	}
	if err := db.RecordLease(context.Background(), l, nil); err != nil {
		t.Fatal(err)
	}
}

func seedChat(t *testing.T, db *ssot.DB, id, parent, from, to, subject, content string, at time.Time) {
	t.Helper()
	if _, err := db.AppendEvent(context.Background(), ssot.MeshEvent{ID: id, Type: chatType, Severity: "info", AgentID: from,
		From: from, FromID: from, To: to, Subject: subject, Content: content, ParentID: parent, CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
}

func TestLeasesPanel(t *testing.T) {
	f := newFixture(t, testTokens)
	rel := &releases{}
	f.srv.panels = map[string]Panel{PanelLeases: LeasesPanel(f.db)}
	f.srv.leases = rel
	admin := f.client(t)
	admin.signIn("tok-ana")
	if _, page := admin.do("GET", "/leases", nil, nil); !strings.Contains(page, `class="empty"`) {
		t.Error("no leases: no empty state")
	}
	seedLease(t, f.db, "Labc.cmVwby9hcHA", "repo/app", "codex", leaseActive, t0)
	seedLease(t, f.db, "Lold.b2xk", "old", "claude", "released", t0)
	_, page := admin.do("GET", "/leases", nil, nil)
	for _, want := range []string{"repo/app", "codex", `action="/leases/Labc.cmVwby9hcHA/release"`, `aria-label="Release repo/app held by codex"`,
		`datetime="` + t0.Add(5*time.Minute).UTC().Format(time.RFC3339) + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the leases page lacks %q", want)
		}
	}
	if strings.Contains(page, "claude") {
		t.Error("the leases page lists a released lease")
	}

	t.Run("Release", func(t *testing.T) {
		resp, _ := admin.do("POST", "/leases/Labc.cmVwby9hcHA/release", url.Values{"csrf": {formValue(page, "csrf")}}, browserHeaders(f))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/leases" {
			t.Fatalf("release: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		if len(rel.ids) != 1 || rel.ids[0] != "Labc.cmVwby9hcHA" || rel.by[0] != "ana" {
			t.Fatalf("releases asked: %v by %v", rel.ids, rel.by)
		}
		if _, next := admin.do("GET", "/leases", nil, nil); !strings.Contains(next, "Released Labc.cmVwby9hcHA.") {
			t.Error("no flash after the release")
		}
	})
	t.Run("Refused", func(t *testing.T) {
		rel.err = errors.New("lease Labc.cmVwby9hcHA is not held")
		resp, _ := admin.do("POST", "/leases/Labc.cmVwby9hcHA/release", url.Values{"csrf": {formValue(page, "csrf")}}, browserHeaders(f))
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("refused release: %d", resp.StatusCode)
		}
		if _, next := admin.do("GET", "/leases", nil, nil); !strings.Contains(next, "is not held") {
			t.Error("the refusal is not shown")
		}
		rel.err = nil
	})
	t.Run("NoCSRF", func(t *testing.T) {
		n := len(rel.ids)
		if resp, _ := admin.do("POST", "/leases/Labc.cmVwby9hcHA/release", url.Values{"csrf": {"guess"}}, browserHeaders(f)); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("release without the CSRF token: %d", resp.StatusCode)
		}
		if len(rel.ids) != n {
			t.Fatal("a forged release reached the lease")
		}
	})
	t.Run("NotAdmin", func(t *testing.T) {
		codex := f.client(t)
		codex.signIn("tok-exec")
		_, page := codex.do("GET", "/leases", nil, nil)
		if !strings.Contains(page, "repo/app") || strings.Contains(page, `/release"`) {
			t.Error("an executor sees the lease without a release button: not so")
		}
		if resp, _ := codex.do("POST", "/leases/Labc.cmVwby9hcHA/release", url.Values{"csrf": {formValue(page, "csrf")}}, browserHeaders(f)); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("an executor's release: %d", resp.StatusCode)
		}
	})
}

func TestMeshPanel(t *testing.T) {
	f := newFixture(t, testTokens)
	f.srv.panels = map[string]Panel{PanelMesh: MeshPanel(f.db)}
	c := f.client(t)
	c.signIn("tok-exec")
	seedChat(t, f.db, "E1", "", "codex", "claude", "Schema", "who owns the users table?", t0)
	seedChat(t, f.db, "E2", "", "gemini", "all", "Build", "CI is red on main", t0.Add(time.Second))
	seedChat(t, f.db, "E3", "E1", "claude", "codex", "Re: Schema", "I do; ask before migrating", t0.Add(2*time.Second))
	seedChat(t, f.db, "E4", "", "claude", "gemini", "Private", "between claude and gemini", t0.Add(3*time.Second))
	_, page := c.do("GET", "/mesh", nil, nil)
	// codex (an executor) reads what its token may read in the mesh.
	if strings.Contains(page, "between claude and gemini") {
		t.Error("codex sees a message between two other agents")
	}
	admin := f.client(t)
	admin.signIn("tok-ana")
	if _, all := admin.do("GET", "/mesh", nil, nil); !strings.Contains(all, "between claude and gemini") {
		t.Error("an admin does not see every message")
	}
	if tb, err := MeshPanel(f.db).Table(context.Background()); err != nil || len(tb.Rows) != 1 || tb.Rows[0][4].Text != "CI is red on main" {
		t.Errorf("read with no viewer: %+v, %v; want the broadcast only", tb.Rows, err)
	}
	// The thread with the newest message first, its root above its reply.
	order := []string{"who owns the users table?", "↳ E1", "I do; ask before migrating", "CI is red on main"}
	at := 0
	for _, want := range order {
		i := strings.Index(page[at:], want)
		if i < 0 {
			t.Fatalf("the mesh page lacks %q after position %d:\n%s", want, at, page)
		}
		at += i
	}
}

func TestAgentsPanel(t *testing.T) {
	f := newFixture(t, testTokens)
	now := t0.Add(time.Hour)
	f.srv.panels = map[string]Panel{PanelAgents: AgentsPanel(f.db, f.db, f.db, f.db, func() time.Time { return now })}
	c := f.client(t)
	c.signIn("tok-exec")
	seedLease(t, f.db, "Labc.cmVwby9hcHA", "repo/app", "codex", leaseActive, t0.Add(30*time.Minute))
	seedLease(t, f.db, "Lold.b2xk", "old", "codex", "released", t0)
	seedTask(t, f.db, "T-2026-070", 0)
	seedLease(t, f.db, "Lbr.YnI", "repo:/src/app:feature/health", "T-2026-070", leaseActive, t0) // a task's branch lease
	seedChat(t, f.db, "E1", "", "claude", "codex", "Schema", "who owns it?", t0)
	seedChat(t, f.db, "E2", "", ssot.MeshSender, "codex", "Lease released: old", "Your lease was released", t0)
	for i, cost := range []float64{0.25, 0.5} {
		g := ssot.GateRow{GateID: "g-" + string(rune('1'+i)), Kind: "llm_call", AgentID: "codex", Status: "approved", CostUSD: cost,
			ReceivedAt: t0.Add(time.Duration(i) * time.Minute), Callback: "none", Body: []byte(`{}`)}
		recordSignal(t, f.db, g)
	}
	yesterday := ssot.GateRow{GateID: "g-0", Kind: "llm_call", AgentID: "codex", Status: "approved", CostUSD: 9,
		ReceivedAt: t0.Add(-24 * time.Hour), Callback: "none", Body: []byte(`{}`)}
	recordSignal(t, f.db, yesterday)
	_, page := c.do("GET", "/agents", nil, nil)
	for _, want := range []string{`data-label="Agent">claude<`, `data-label="Agent">codex<`, "1 lease(s): repo/app", "0.7500 (2 signal(s))", "no lease held",
		`datetime="` + t0.Add(30*time.Minute).UTC().Format(time.RFC3339) + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the agents page lacks %q", want)
		}
	}
	if strings.Contains(page, `data-label="Agent">T-2026-070<`) {
		t.Error("the agents page lists a task holding its branch's lease as an agent")
	}
	if strings.Contains(page, `data-label="Agent">`+ssot.MeshSender+"<") {
		t.Errorf("the agents page lists the system's notices' sender %s as an agent", ssot.MeshSender)
	}
}

// TestWatchPublishesMesh tells open pages of a new mesh message and of a
// lease change, so the Leases, Agents and Mesh pages refresh.
func TestWatchPublishesMesh(t *testing.T) {
	f := newFixture(t, testTokens)
	watching(t, f.srv)
	sub, _, _ := f.srv.hub.subscribe("")
	defer f.srv.hub.unsubscribe(sub)
	next := func(what string) string {
		t.Helper()
		deadline := time.After(time.Second)
		for {
			select {
			case e := <-sub.ch:
				if e.Type == EventMesh {
					return string(e.Data)
				}
			case <-deadline:
				t.Fatalf("no %s event within 1s of %s", EventMesh, what)
			}
		}
	}
	seedChat(t, f.db, "E1", "", "codex", "claude", "Schema", "who owns it?", t0)
	first := next("a message")
	seedLease(t, f.db, "Labc.cmVwby9hcHA", "repo/app", "codex", leaseActive, t0)
	if err := f.db.RecordLease(context.Background(), ssot.MeshLease{LeaseID: "Labc.cmVwby9hcHA", ResourceKey: "repo/app", AgentID: "codex",
		State: leaseActive, TTLSeconds: 300, AcquiredAt: t0, ExpiresAt: t0.Add(10 * time.Minute), LastHeartbeat: t0, Version: 2},
		[]ssot.MeshEvent{{ID: "Labc-v2", Type: "lock.renewed", To: "codex", CreatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	if second := next("a renewal"); second == first {
		t.Errorf("the renewal's event %s is the message's", second)
	}
}

// recordSignal records a signal's row with its record in its gate's
// chain, as the intake does: the row's status is read against it.
func recordSignal(t *testing.T, db *ssot.DB, g ssot.GateRow) {
	t.Helper()
	body := fmt.Sprintf(`{"gated":%t}`, g.Gated)
	if _, _, err := db.RecordGate(context.Background(), g, ssot.GateSubject(g.GateID),
		[]ssot.Entry{{ID: g.GateID + "-signal", Kind: "signal", RecordedAt: g.ReceivedAt, Body: []byte(body)}}, nil); err != nil {
		t.Fatal(err)
	}
}
