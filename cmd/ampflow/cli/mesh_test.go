package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/repomesh"
)

// The mesh's listings page as the others do: a more: line with --cursor,
// which reads the page after.
func TestMeshListingsPage(t *testing.T) {
	ctx := context.Background()
	db := testSSOT(t, nil, nil)
	for i := 1; i <= 3; i++ {
		at := testNow.Add(time.Duration(i) * time.Second)
		if _, err := db.AppendEvent(ctx, ssot.MeshEvent{ID: fmt.Sprintf("E%d", i), Type: repomesh.TypeChat, Severity: "info",
			From: "bob", FromID: "bob", To: "ana", Subject: fmt.Sprintf("flaky login %d", i), Content: "c", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		if err := db.RecordLease(ctx, ssot.MeshLease{LeaseID: fmt.Sprintf("L%d.x", i), ResourceKey: "k", AgentID: "ana",
			State: "active", TTLSeconds: 60, AcquiredAt: at, ExpiresAt: at.Add(time.Minute), LastHeartbeat: at, Version: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	srv := httpapi.New(httpapi.Options{Store: db, OpenName: "ana", Now: func() time.Time { return testNow }})
	repomesh.Register(srv, repomesh.Options{Store: db})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	more := regexp.MustCompile(`more: .* --cursor (\S+)\n`)
	for _, c := range []struct {
		name  string
		args  []string
		first []string
		rest  string
	}{
		{"ChatInbox", []string{"chat", "inbox", "--limit", "2"}, []string{"E1", "E2"}, "E3"}, // one's own inbox, oldest first
		{"ChatSearch", []string{"chat", "search", "flaky", "--limit", "2"}, []string{"E3", "E2"}, "E1"},
		{"LeaseList", []string{"lease", "list", "--limit", "2"}, []string{"L3.x", "L2.x"}, "L1.x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runAPI(t, ts.URL, c.args...)
			m := more.FindStringSubmatch(r.stderr)
			if r.code != 0 || m == nil {
				t.Fatalf("exit %d, no more: line\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			for _, id := range c.first {
				if !strings.Contains(r.stdout, id) {
					t.Errorf("the first page lacks %s:\n%s", id, r.stdout)
				}
			}
			// -o json: the API's items, one array; the cursor on stderr.
			j := runAPI(t, ts.URL, append(c.args, "-o", "json")...)
			if j.code != 0 || !strings.HasPrefix(j.stdout, "[{") || !strings.Contains(j.stdout, `"`+c.first[0]+`"`) ||
				j.stderr != `{"next_cursor":"`+m[1]+`"}`+"\n" {
				t.Fatalf("-o json: exit %d\nstdout %s\nstderr %s", j.code, j.stdout, j.stderr)
			}
			r = runAPI(t, ts.URL, append(c.args, "--cursor", m[1])...)
			if r.code != 0 || strings.Contains(r.stderr, "more:") || strings.Contains(r.stdout, c.first[0]) || !strings.Contains(r.stdout, c.rest) {
				t.Fatalf("the page after: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// chat send speaks as the token's name without --from; the API refuses
// a --from that is not the token's unless the token is an admin's.
func TestChatSendFromToken(t *testing.T) {
	db := testSSOT(t, nil, nil)
	srv := httpapi.New(httpapi.Options{Store: db, Now: func() time.Time { return testNow }, Tokens: []config.AuthToken{
		{Token: "ana-token-0123456789", Role: amp.RoleExecutor, Name: "ana"},
		{Token: "root-token-012345678", Role: amp.RoleAdmin, Name: "root"},
	}})
	repomesh.Register(srv, repomesh.Options{Store: db})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	as := func(token string, args ...string) result { return runAPIAs(t, ts.URL, token, args...) }
	r := as("ana-token-0123456789", "chat", "send", "bob", "hello", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"from":"ana"`) {
		t.Fatalf("send without --from: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = as("ana-token-0123456789", "chat", "send", "bob", "hello", "--from", "carol")
	if r.code != 1 || !strings.Contains(r.stderr, "carol") {
		t.Fatalf("send as another: exit %d\nstderr %s", r.code, r.stderr)
	}
	r = as("root-token-012345678", "chat", "send", "bob", "hello", "--from", "carol", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"from":"carol"`) {
		t.Fatalf("an admin as another: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

// lease acquire -o json prints a conflict as the API answered it, with
// the holder and retry_after_ms.
func TestLeaseAcquireConflictJSON(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"error":{"code":"LOCK_CONFLICT","message":"file:a is held by bob","holder":"bob","retry_after_ms":241000}}`)
	}))
	t.Cleanup(ts.Close)
	r := runAPI(t, ts.URL, "lease", "acquire", "file:a", "-o", "json")
	if r.code != ExitFailed || strings.TrimSpace(r.stderr) != `{"error":{"code":"LOCK_CONFLICT","holder":"bob","message":"file:a is held by bob","retry_after_ms":241000}}` {
		t.Fatalf("exit %d\nstderr %s", r.code, r.stderr)
	}
	r = runAPI(t, ts.URL, "lease", "acquire", "file:a")
	if r.code != ExitFailed || !strings.Contains(r.stderr, "held by bob") {
		t.Fatalf("text: exit %d\nstderr %s", r.code, r.stderr)
	}
}
