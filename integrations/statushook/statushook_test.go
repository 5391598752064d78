package statushook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestNotify: each hook gets the notice signed; one that fails fails the
// notice, and its retry reaches it without sending the others a second
// copy.
func TestNotify(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]Delivery{}
	fail := true
	hook := func(name, secret string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			ts := r.Header.Get(amp.HeaderTimestamp)
			if r.Header.Get(amp.HeaderSignature) != amp.WebhookSignature(secret, ts, body) {
				t.Errorf("%s: bad signature", name)
			}
			mu.Lock()
			defer mu.Unlock()
			if name == "b" && fail {
				fail = false
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			var d Delivery
			if err := json.Unmarshal(body, &d); err != nil || d.ID != r.Header.Get(HeaderNotice) {
				t.Errorf("%s: body %s, header %s", name, body, r.Header.Get(HeaderNotice))
			}
			got[name] = append(got[name], d)
		}))
		t.Cleanup(s.Close)
		return s
	}
	a, b := hook("a", "sa"), hook("b", "sb")
	n := &Notifier{Hooks: []Hook{{URL: a.URL, Secret: []byte("sa")}, {URL: b.URL, Secret: []byte("sb")}}, Now: func() time.Time { return time.Unix(1790000000, 0) }}
	in := notify.Input{TaskID: "T-2026-042", Event: notify.Status, Status: task.StatusDone}
	if err := n.Notify(context.Background(), in); err == nil {
		t.Fatal("a hook's 502 did not fail the notice")
	}
	if err := n.Notify(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if len(got["a"]) != 1 || len(got["b"]) != 1 || got["a"][0].Status != task.StatusDone || got["a"][0].ID != got["b"][0].ID {
		t.Errorf("deliveries %+v", got)
	}
}
