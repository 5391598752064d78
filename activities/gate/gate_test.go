package gate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
)

type fakeGates struct {
	Gates
	mu       sync.Mutex
	attempts []ssot.GateAttempt
}

func (f *fakeGates) AddGateAttempt(_ context.Context, a ssot.GateAttempt) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts = append(f.attempts, a)
	return nil
}

// TestGateCallbackSigned: a callback is signed for its recipient with its
// agent's secret,
// each attempt is recorded, server errors are retried, other client
// errors, hosts outside gate.webhook_allow and redirects are final.
func TestGateCallbackSigned(t *testing.T) {
	now := time.Unix(1700000000, 0)
	var got http.Header
	var gotBody []byte
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, gotBody = r.Header.Clone(), must(io.ReadAll(r.Body))
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	store := &fakeGates{}
	port := must(url.Parse(srv.URL)).Port()
	g := &Gate{Store: store, Secret: "s3cret", Allowed: func(h, p string, _ bool) bool { return h == "127.0.0.1" && p == port }, Now: func() time.Time { return now }}
	body := json.RawMessage(`{"gate_id":"gate_1","status":"approved"}`)
	in := GateCallbackInput{GateID: "gate_1", Attempt: 1, URL: srv.URL + "/hook", Body: body, AgentID: "resume-tailor", RunID: "run_1"}

	res, err := g.GateCallback(context.Background(), in)
	if err != nil || !res.Delivered || res.StatusCode != 204 {
		t.Fatalf("%+v %v", res, err)
	}
	if got.Get(amp.HeaderTimestamp) != "1700000000" || got.Get(amp.HeaderSignature) != CallbackSignature(CallbackSecret("s3cret", "resume-tailor"), "1700000000", "resume-tailor", "run_1", srv.URL+"/hook", body) || string(gotBody) != string(body) {
		t.Fatalf("headers %v body %s", got, gotBody)
	}
	status = http.StatusBadGateway
	in.Attempt = 2
	if res, _ := g.GateCallback(context.Background(), in); res.Delivered || res.Final || res.StatusCode != 502 {
		t.Fatalf("502: %+v", res)
	}
	status = http.StatusGone
	in.Attempt = 3
	if res, _ := g.GateCallback(context.Background(), in); !res.Final {
		t.Fatalf("410: %+v", res)
	}
	in.Attempt, in.URL = 4, srv.URL+"/moved"
	if res, _ := g.GateCallback(context.Background(), in); res.Delivered || !res.Final || res.StatusCode != http.StatusFound {
		t.Fatalf("redirect: %+v", res)
	}
	in.Attempt, in.URL = 5, "http://localhost:1/hook"
	if res, _ := g.GateCallback(context.Background(), in); !res.Final || res.Error == "" {
		t.Fatalf("host not allowed: %+v", res)
	}
	if len(store.attempts) != 5 || store.attempts[1].StatusCode != 502 || store.attempts[4].Attempt != 5 {
		t.Fatalf("attempts %+v", store.attempts)
	}
}

// TestGateCallbackPrivate: a callback to a loopback or private address,
// or to a name that resolves to one, is refused unless gate.webhook_allow
// names it with its port; the check is made when it is sent.
func TestGateCallbackPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	port := must(url.Parse(srv.URL)).Port()
	// The allow list names hooks.example.com without a port, and the
	// server's loopback address with its port.
	allowed := func(h, p string, private bool) bool {
		return h == "hooks.example.com" && !private || h == "127.0.0.1" && p == port
	}
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	g := &Gate{Store: &fakeGates{}, Allowed: allowed, Resolve: resolve}
	in := GateCallbackInput{GateID: "gate_1", Attempt: 1, Body: json.RawMessage(`{}`), AgentID: "a", RunID: "r"}
	for _, c := range []struct {
		name, url string
		ok        bool
	}{
		{"LoopbackWithPort", srv.URL + "/hook", true},
		{"NameResolvingToLoopback", "http://hooks.example.com:" + port + "/hook", false},
		{"OtherLoopbackPort", "http://127.0.0.1:1/hook", false},
		{"Metadata", "http://169.254.169.254/latest", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			in.URL = c.url
			res, _ := g.GateCallback(context.Background(), in)
			if res.Delivered != c.ok || !c.ok && (!res.Final || res.StatusCode != 0) {
				t.Fatalf("%s: %+v", c.url, res)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
