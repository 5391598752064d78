package transcripts

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/runcred"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
)

var runKey = []byte("0123456789abcdef0123456789abcdef")

func serve(t *testing.T) (*ssot.DB, string) {
	t.Helper()
	db, _ := httpapitest.Store(t)
	api := httpapi.New(httpapi.Options{Store: db, RunKey: runKey, Tokens: []config.AuthToken{
		{Token: "admin-token", Role: amp.RoleAdmin, Name: "alice"},
		{Token: "reviewer-token", Role: amp.RoleReviewer, Name: "rev"}}})
	Register(api, Options{Store: db, Poll: 10 * time.Millisecond})
	return db, httpapitest.Serve(t, api)
}

func credential(t *testing.T, taskID string) string {
	t.Helper()
	tok, _, err := runcred.Mint(runKey, runcred.Claims{Task: taskID, Role: amp.RoleExecutor, Expires: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func appendN(t *testing.T, db *ssot.DB, taskID, role string, run, n int) {
	t.Helper()
	es := make([]ssot.TranscriptEntry, n)
	for i := range es {
		es[i] = ssot.TranscriptEntry{Role: role, Run: run, Kind: ssot.TranscriptText, Text: "line"}
	}
	if _, err := db.AppendTranscript(context.Background(), taskID, es); err != nil {
		t.Fatal(err)
	}
}

func page(t *testing.T, url, token string) (int, Page) {
	t.Helper()
	r := httpapitest.Do(t, "GET", url, token, nil)
	var p Page
	_ = json.Unmarshal(r.Body, &p)
	return r.Status, p
}

func TestPaging(t *testing.T) {
	db, url := serve(t)
	appendN(t, db, "T-2026-001", "executor", 1, 5)
	appendN(t, db, "T-2026-001", "reviewer", 1, 2)
	appendN(t, db, "T-2026-001", "executor", 2, 3)
	base := url + "/v1/tasks/T-2026-001/transcript"
	st, p := page(t, base+"?limit=4", "admin-token")
	if st != http.StatusOK || len(p.Entries) != 4 || p.NextAfter != 4 {
		t.Fatalf("first page: %d, %d entries, next_after %d", st, len(p.Entries), p.NextAfter)
	}
	_, p = page(t, base+"?after=4&limit=100", "admin-token")
	if len(p.Entries) != 6 || p.Entries[0].Seq != 5 || p.NextAfter != 10 {
		t.Errorf("second page: %d entries from %d, next_after %d", len(p.Entries), p.Entries[0].Seq, p.NextAfter)
	}
	_, p = page(t, base+"?after=10", "admin-token")
	if len(p.Entries) != 0 || p.NextAfter != 10 {
		t.Errorf("past the end: %+v", p)
	}
	_, p = page(t, base+"?role=executor&run=2", "admin-token")
	if len(p.Entries) != 3 || p.Entries[0].Seq != 8 {
		t.Errorf("executor's run 2: %+v", p.Entries)
	}
	for _, bad := range []string{"?limit=0", "?limit=1001", "?after=-1", "?role=admin", "?run=x", "?follow=2"} {
		r := httpapitest.Do(t, "GET", base+bad, "admin-token", nil)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, r.Status, r.Body)
		}
	}
	if r := httpapitest.Do(t, "GET", url+"/v1/tasks/T-2026-999/transcript", "admin-token", nil); r.Status != http.StatusNotFound {
		t.Errorf("unknown task: %d %s, want 404", r.Status, r.Body)
	}
}

func TestAuth(t *testing.T) {
	db, url := serve(t)
	appendN(t, db, "T-2026-001", "executor", 1, 1)
	base := url + "/v1/tasks/T-2026-001/transcript"
	for _, c := range []struct {
		name, token string
		want        int
	}{
		{"NoToken", "", http.StatusUnauthorized},
		{"Admin", "admin-token", http.StatusOK},
		{"AnyToken", "reviewer-token", http.StatusOK},
		{"OwnRun", credential(t, "T-2026-001"), http.StatusOK},
		{"OtherTasksRun", credential(t, "T-2026-002"), http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := httpapitest.Do(t, "GET", base, c.token, nil); r.Status != c.want {
				t.Errorf("%d %s, want %d", r.Status, r.Body, c.want)
			}
		})
	}
}

// TestFollow reads the stream while entries are written: each arrives
// as an event, and the stream ends once the task is done.
func TestFollow(t *testing.T) {
	db, url := serve(t)
	appendN(t, db, "T-2026-001", "executor", 1, 2)
	req, _ := http.NewRequest("GET", url+"/v1/tasks/T-2026-001/transcript?follow=1&after=1", nil)
	req.Header.Set("Authorization", "Bearer admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	events := make(chan [2]string, 10)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var ev string
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event: "); ok {
				ev = e
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				events <- [2]string{ev, d}
			}
		}
	}()
	next := func() [2]string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5s")
		}
		return [2]string{}
	}
	var e ssot.TranscriptEntry
	if ev := next(); ev[0] != "entry" || json.Unmarshal([]byte(ev[1]), &e) != nil || e.Seq != 2 {
		t.Fatalf("first event %v, want entry 2", ev)
	}
	start := time.Now()
	appendN(t, db, "T-2026-001", "executor", 1, 1)
	if ev := next(); ev[0] != "entry" || json.Unmarshal([]byte(ev[1]), &e) != nil || e.Seq != 3 {
		t.Fatalf("event %v, want entry 3", ev)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("an entry took %s to reach the follower", d)
	}
	st := &ssot.TaskState{TaskID: "T-2026-001", Status: "done", Rev: 1, State: json.RawMessage(`{"task_id":"T-2026-001","status":"done"}`)}
	if _, err := db.Save(context.Background(), "T-2026-001", nil, st); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev[0] != "end" {
		t.Fatalf("event %v after the task ended, want end", ev)
	}
}
