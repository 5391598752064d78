package repomesh

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

func chat(from, to, subject, content, parent string) string {
	p := map[string]any{"from": from, "from_id": from, "to": to, "subject": subject, "content": content,
		"timestamp": "2026-11-23T10:00:00Z"}
	if parent != "" {
		p["parent_message_id"] = parent
	}
	b, _ := json.Marshal(map[string]any{"type": "agent.chat", "severity": "info", "payload": p})
	return string(b)
}

func payloadOf(t *testing.T, e Event) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(l EventList) []string {
	out := []string{}
	for _, e := range l.Events {
		out = append(out, e.ID)
	}
	return out
}

func TestEventRoutes(t *testing.T) {
	h := newHarness(t)
	var root, reply Event
	h.do(t, "POST", "/v1/events", aliceToken, chat("alice", "bob", "Code Review Request", "Can you review src/auth.py?", "")).want(t, 201, &root)
	h.do(t, "POST", "/v1/events", bobToken, chat("bob", "alice", "Re: Code Review Request", "Sure! @carol knows the token code, cc @alice.", root.ID)).want(t, 201, &reply)
	if got := payloadOf(t, reply)["mentions"]; fmt.Sprint(got) != "[carol alice]" {
		t.Fatalf("mentions %v", got)
	}
	if reply.ThreadID != root.ID || reply.AgentID != "bob" {
		t.Fatalf("reply %+v", reply)
	}

	t.Run("Inbox", func(t *testing.T) {
		var l EventList
		h.do(t, "GET", "/v1/events/inbox?recipient_id=carol", adminToken, "").want(t, 200, &l)
		if fmt.Sprint(ids(l)) != "["+reply.ID+"]" {
			t.Fatalf("carol's inbox by mention: %v", ids(l))
		}
		h.do(t, "GET", "/v1/events/inbox?recipient_id=alice&direction=asc&limit=1", aliceToken, "").want(t, 200, &l)
		if len(l.Events) != 1 || l.Events[0].ID != reply.ID || l.NextCursor != "" {
			t.Fatalf("alice's inbox %v next %q", ids(l), l.NextCursor)
		}
		h.do(t, "GET", "/v1/events/inbox?recipient_id=alice", bobToken, "").want(t, 403, nil)
		h.do(t, "GET", "/v1/events/inbox?direction=up", bobToken, "").want(t, 400, nil)
	})
	t.Run("Broadcast", func(t *testing.T) {
		var b Event
		h.do(t, "POST", "/v1/events", adminToken, `{"type":"agent.message","payload":{"from":"root","message":"New protocol deployed"}}`).want(t, 201, &b)
		p := payloadOf(t, b)
		if b.Type != TypeChat || p["to"] != "all" || p["subject"] != "New protocol deployed" || p["metadata"].(map[string]any)["legacy_type"] != "agent.message" {
			t.Fatalf("legacy message stored as %s %v", b.Type, p)
		}
		var l EventList
		h.do(t, "GET", "/v1/events/inbox?include_broadcast=true", bobToken, "").want(t, 200, &l)
		// his own inbox, oldest first: alice's request, bob's agent.error
		// (his refused inbox read above), the broadcast
		if got := ids(l); len(got) != 3 || got[2] != b.ID || l.Events[1].Type != TypeError || got[0] != root.ID {
			t.Fatalf("bob's inbox with broadcasts %v", ids(l))
		}
	})
	t.Run("Direction", func(t *testing.T) {
		var own, other EventList
		h.do(t, "GET", "/v1/events/inbox", bobToken, "").want(t, 200, &own)
		h.do(t, "GET", "/v1/events/inbox?recipient_id=bob", adminToken, "").want(t, 200, &other)
		if len(own.Events) < 2 || own.Events[0].Seq > own.Events[len(own.Events)-1].Seq {
			t.Errorf("bob's own inbox is not oldest first: %v", ids(own))
		}
		if len(other.Events) != len(own.Events) || other.Events[0].ID != own.Events[len(own.Events)-1].ID {
			t.Errorf("an admin's look at bob's inbox is not newest first: %v", ids(other))
		}
	})
	t.Run("LongPoll", func(t *testing.T) {
		var l EventList
		h.do(t, "GET", "/v1/events/inbox", carolToken, "").want(t, 200, &l)
		cursor := "0"
		if n := len(l.Events); n > 0 {
			cursor = fmt.Sprint(l.Events[n-1].Seq)
		}
		done := make(chan EventList, 1)
		go func() {
			var got EventList
			h.do(t, "GET", "/v1/events/inbox?wait=10s&cursor="+cursor, carolToken, "").want(t, 200, &got)
			done <- got
		}()
		time.Sleep(100 * time.Millisecond)
		var sent Event
		h.do(t, "POST", "/v1/events", aliceToken, chat("alice", "carol", "Ping", "Are you there?", "")).want(t, 201, &sent)
		select {
		case got := <-done:
			if fmt.Sprint(ids(got)) != "["+sent.ID+"]" {
				t.Fatalf("long poll answered %v, want [%s]", ids(got), sent.ID)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the long poll did not answer when the event came")
		}
		h.do(t, "GET", "/v1/events/inbox?wait=1h", carolToken, "").want(t, 400, nil)
	})
	t.Run("Thread", func(t *testing.T) {
		var l EventList
		h.do(t, "GET", "/v1/events/"+reply.ID+"/thread", bobToken, "").want(t, 200, &l)
		if fmt.Sprint(ids(l)) != fmt.Sprint([]string{root.ID, reply.ID}) {
			t.Fatalf("thread %v", ids(l))
		}
		h.do(t, "GET", "/v1/events/nope/thread", bobToken, "").want(t, 404, nil)
	})
	t.Run("Search", func(t *testing.T) {
		var l EventList
		h.do(t, "GET", "/v1/events/search?q="+url.QueryEscape("token code"), bobToken, "").want(t, 200, &l)
		if fmt.Sprint(ids(l)) != "["+reply.ID+"]" {
			t.Fatalf("search %v", ids(l))
		}
		h.do(t, "GET", "/v1/events/search?from=alice&type=agent.chat", bobToken, "").want(t, 200, &l)
		if fmt.Sprint(ids(l)) != "["+root.ID+"]" {
			t.Fatalf("search from alice %v", ids(l))
		}
		h.do(t, "GET", "/v1/events/search?since=yesterday", bobToken, "").want(t, 400, nil)
		var e struct {
			Error struct{ Fields []struct{ Path string } }
		}
		h.do(t, "GET", "/v1/events/search?since=2026-11-23T11:00:00Z&until=2026-11-23T10:00:00Z", bobToken, "").want(t, 400, &e)
		if fmt.Sprint(e.Error.Fields) != "[{since} {until}]" {
			t.Errorf("since after until: fields %v", e.Error.Fields)
		}
		h.do(t, "GET", "/v1/events/search?q="+url.QueryEscape("!!! --"), bobToken, "").want(t, 400, &e)
		if fmt.Sprint(e.Error.Fields) != "[{q}]" {
			t.Errorf("q without keywords: fields %v", e.Error.Fields)
		}
	})
	t.Run("Read", func(t *testing.T) {
		var e Event
		h.do(t, "POST", "/v1/events/"+root.ID+"/read", bobToken, `{}`).want(t, 200, &e)
		h.do(t, "POST", "/v1/events/"+root.ID+"/read", aliceToken, `{}`).want(t, 200, &e)
		if len(e.ReadBy) != 2 || e.ReadBy[0].AgentID != "bob" {
			t.Fatalf("read_by %+v", e.ReadBy)
		}
		h.do(t, "POST", "/v1/events/"+root.ID+"/read", aliceToken, `{"agent_id":"bob"}`).want(t, 403, nil)
	})
	t.Run("Invalid", func(t *testing.T) {
		var e struct {
			Error struct {
				Code   string
				Fields []struct{ Path string }
			}
		}
		h.do(t, "POST", "/v1/events", aliceToken, `{"type":"agent.chat","severity":"loud","payload":{"from":"alice","to":"bob","content":"x","timestamp":"now"}}`).want(t, 400, &e)
		var paths []string
		for _, f := range e.Error.Fields {
			paths = append(paths, f.Path)
		}
		slices.Sort(paths)
		if e.Error.Code != string(CodeInvalidPayload) || fmt.Sprint(paths) != "[payload.subject payload.timestamp severity]" {
			t.Fatalf("refusal %+v", e.Error)
		}
		evs, _, err := h.store.MeshInbox(context.Background(), ssot.InboxQuery{Recipients: []string{"alice"}, Desc: true}, ssot.Page{})
		if err != nil || evs[0].Type != TypeError || !strings.Contains(string(evs[0].Payload), `"error_code":"INVALID_PAYLOAD"`) {
			t.Fatalf("alice's agent.error: %+v %v", evs[0], err)
		}
		h.do(t, "POST", "/v1/events", aliceToken, `{"type":"review.finding","severity":"warning","payload":{"task_id":"T-1","file_path":"a.py","line_number":4.5,"severity":"warning","message":"m"}}`).want(t, 400, &e)
		if len(e.Error.Fields) != 1 || e.Error.Fields[0].Path != "payload.line_number" {
			t.Fatalf("review.finding refusal %+v", e.Error)
		}
		h.do(t, "POST", "/v1/events", aliceToken, `{"type":"no.such","severity":"info","payload":{}}`).want(t, 400, nil)
		h.do(t, "POST", "/v1/events", aliceToken, chat("alice", "bob", "s", strings.Repeat("x", MaxContent+1), "")).want(t, 400, nil)
		h.do(t, "POST", "/v1/events", aliceToken, chat("alice", "bob", "s", "c", "missing-parent")).want(t, 400, nil)
	})
	t.Run("Permission", func(t *testing.T) {
		h.do(t, "POST", "/v1/events", bobToken, chat("alice", "bob", "s", "c", "")).want(t, 403, nil)
		h.do(t, "POST", "/v1/events", bobToken, `{"type":"lock.released","severity":"info","payload":{"lock_id":"l","agent_id":"bob","reason":"x"}}`).want(t, 403, nil)
	})
	t.Run("Registry", func(t *testing.T) {
		var e Event
		h.do(t, "POST", "/v1/events", bobToken, `{"type":"review.finding","severity":"warning","payload":{"reviewer_id":"bob","task_id":"T-1","file_path":"src/auth.py","line_number":42,"severity":"warning","message":"SQL injection vulnerability detected","suggestion":"Use parameterized queries"}}`).want(t, 201, &e)
		var l EventList
		h.do(t, "GET", "/v1/events/search?task_id=T-1&q=injection", bobToken, "").want(t, 200, &l)
		if fmt.Sprint(ids(l)) != "["+e.ID+"]" {
			t.Fatalf("finding by search %v", ids(l))
		}
		// A retry under the same id answers the stored event.
		body := `{"id":"E-fixed","type":"test.result","severity":"info","payload":{"task_id":"T-1","passed":15,"failed":2,"skipped":0,"duration_ms":4521,"failures":[]}}`
		var a, b Event
		h.do(t, "POST", "/v1/events", bobToken, body).want(t, 201, &a)
		h.do(t, "POST", "/v1/events", bobToken, body).want(t, 201, &b)
		if a.Seq != b.Seq {
			t.Fatalf("a retry stored twice: %d, %d", a.Seq, b.Seq)
		}
	})
}

func TestEventsPrivate(t *testing.T) {
	h := newHarness(t)
	var private, reply, open Event
	h.do(t, "POST", "/v1/events", aliceToken, chat("alice", "bob", "Secret", "the staging password rotates", "")).want(t, 201, &private)
	h.do(t, "POST", "/v1/events", bobToken, chat("bob", "alice", "Re: Secret", "@carol can rotate it", private.ID)).want(t, 201, &reply)
	h.do(t, "POST", "/v1/events", bobToken, chat("bob", "all", "Hello", "staging is back", "")).want(t, 201, &open)
	search := func(token string) string {
		var l EventList
		h.do(t, "GET", "/v1/events/search?q=staging", token, "").want(t, 200, &l)
		return fmt.Sprint(ids(l))
	}
	if got := search(carolToken); got != "["+open.ID+"]" {
		t.Errorf("carol's search %s, want only the broadcast", got)
	}
	if got := search(bobToken); got != fmt.Sprint([]string{open.ID, private.ID}) {
		t.Errorf("bob's search %s", got)
	}
	if got := search(adminToken); got != fmt.Sprint([]string{open.ID, private.ID}) {
		t.Errorf("the admin's search %s", got)
	}
	h.do(t, "GET", "/v1/events/"+private.ID, carolToken, "").want(t, 404, nil)
	h.do(t, "POST", "/v1/events/"+private.ID+"/read", carolToken, `{}`).want(t, 404, nil)
	h.do(t, "GET", "/v1/events/"+private.ID+"/thread", carolToken, "").want(t, 404, nil)
	h.do(t, "GET", "/v1/events/"+private.ID, bobToken, "").want(t, 200, nil)
	h.do(t, "GET", "/v1/events/"+private.ID, adminToken, "").want(t, 200, nil)
	// carol is mentioned in the reply: she reads it, not its parent.
	var l EventList
	h.do(t, "GET", "/v1/events/"+reply.ID+"/thread", carolToken, "").want(t, 200, &l)
	if fmt.Sprint(ids(l)) != "["+reply.ID+"]" {
		t.Errorf("carol's thread %v, want the reply alone", ids(l))
	}
	h.do(t, "POST", "/v1/events/"+reply.ID+"/read", carolToken, `{}`).want(t, 200, nil)
}

func TestEventNamesAreTheCallers(t *testing.T) {
	h := newHarness(t)
	for name, body := range map[string]string{
		"FromID":     `{"type":"agent.chat","severity":"info","payload":{"from":"bob","from_id":"alice","to":"carol","subject":"s","content":"c","timestamp":"2026-11-23T10:00:00Z"}}`,
		"AgentID":    `{"type":"task.claimed","severity":"info","payload":{"task_id":"T-1","agent_id":"alice","lease_ttl":60}}`,
		"ReviewerID": `{"type":"review.started","severity":"info","payload":{"task_id":"T-1","reviewer_id":"alice","file_count":3}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var e struct{ Error struct{ Code string } }
			h.do(t, "POST", "/v1/events", bobToken, body).want(t, 403, &e)
			if e.Error.Code != string(CodePermissionDenied) {
				t.Fatalf("code %s", e.Error.Code)
			}
			h.do(t, "POST", "/v1/events", adminToken, body).want(t, 201, nil)
		})
	}
	t.Run("ControlCharacters", func(t *testing.T) {
		for _, body := range []string{
			chat("bob", "alice\x00", "s", "c", ""),
			chat("bob", "al\nice", "s", "c", ""),
			`{"type":"task.created","severity":"info","payload":{"task_id":"T\u0007","goal":"g","priority":2,"assignee":"bob"}}`,
			`{"type":"agent.chat","severity":"info","agent_id":"bob\u001b","payload":{"from":"bob","from_id":"bob","to":"alice","subject":"s","content":"c","timestamp":"2026-11-23T10:00:00Z"}}`,
		} {
			var e struct {
				Error struct {
					Fields []struct{ Path, Problem string }
				}
			}
			h.do(t, "POST", "/v1/events", bobToken, body).want(t, 400, &e)
			if len(e.Error.Fields) != 1 || !strings.Contains(e.Error.Fields[0].Problem, "control character") {
				t.Errorf("refusal of %q: %+v", body, e.Error.Fields)
			}
		}
		h.do(t, "POST", "/v1/events/nope/read", adminToken, `{"agent_id":"bo\u0000b"}`).want(t, 400, nil)
	})
}

func TestMentions(t *testing.T) {
	for in, want := range map[string]string{
		"Hey @qwen-reviewer, check this out!": "[qwen-reviewer]",
		"mail me at a@b.c; @x @x @y.":         "[x y]",
		"no mentions":                         "[]",
	} {
		if got := fmt.Sprint(Mentions(in)); got != want && !(want == "[]" && got == "[]") {
			t.Errorf("Mentions(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestOpenAPI checks that every route is in the served document with
// its schemas, and that each example of the page "Leases and agent
// messaging" (docs/mesh.md) is a documented route.
func TestOpenAPI(t *testing.T) {
	h := newHarness(t)
	var doc map[string]any
	h.do(t, "GET", "/v1/openapi.json", "", "").want(t, 200, &doc)
	paths := doc["paths"].(map[string]any)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	var templates []*regexp.Regexp
	for _, o := range operations() {
		method, path, _ := strings.Cut(o.pattern, " ")
		item, _ := paths[path].(map[string]any)
		op, _ := item[strings.ToLower(method)].(map[string]any)
		if op == nil {
			t.Errorf("%s is not in openapi.json", o.pattern)
			continue
		}
		// every handler answers 503 without the SSOT or the lease client
		if resps, _ := op["responses"].(map[string]any); resps["503"] == nil {
			t.Errorf("%s lists no 503", o.pattern)
		}
		re := regexp.QuoteMeta(o.pattern)
		re = regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(re, `[^/ ?]+`)
		templates = append(templates, regexp.MustCompile("^"+re+"$"))
	}
	refs := regexp.MustCompile(`#/components/schemas/([A-Za-z]+)`).FindAllStringSubmatch(fmt.Sprint(operationsJSON(t)), -1)
	for _, r := range refs {
		if schemas[r[1]] == nil {
			t.Errorf("schema %s is referenced but not in openapi.json", r[1])
		}
	}
	readme, err := os.ReadFile("../../docs/mesh.md")
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(readme), "# Leases and agent messaging\n")
	if !ok {
		t.Fatal(`docs/mesh.md does not start with "# Leases and agent messaging"`)
	}
	uses := regexp.MustCompile(`curl[^\n]*?-X (GET|POST|DELETE)[^\n]*?\$AMPFLOW_API_URL(/v1/[^\s?'"]*)`).FindAllStringSubmatch(section, -1)
	if len(uses) < 8 {
		t.Fatalf("found %d curl examples in the section", len(uses))
	}
	for _, u := range uses {
		use := u[1] + " " + u[2]
		if !slices.ContainsFunc(templates, func(re *regexp.Regexp) bool { return re.MatchString(use) }) {
			t.Errorf("README shows %s, which openapi.json does not document", use)
		}
	}
}

func operationsJSON(t *testing.T) string {
	var all []any
	for _, o := range operations() {
		all = append(all, o.op)
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRegistryValues(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ body, path string }{
		{`{"type":"test.result","severity":"info","payload":{"task_id":"T-1","passed":1,"failed":1,"skipped":0,"duration_ms":5,"failures":["login"]}}`, "payload.failures[0]"},
		{`{"type":"test.result","severity":"info","payload":{"task_id":"T-1","passed":1,"failed":1,"skipped":0,"duration_ms":5,"failures":[{"test":7}]}}`, "payload.failures[0].test"},
		{`{"type":"test.result","severity":"info","payload":{"task_id":"T-1","passed":-1,"failed":0,"skipped":0,"duration_ms":5,"failures":[]}}`, "payload.passed"},
		{`{"type":"review.finding","severity":"warning","payload":{"task_id":"T-1","file_path":"a.py","line_number":4,"severity":"fatal","message":"m"}}`, "payload.severity"},
		{`{"type":"review.finding","severity":"warning","payload":{"task_id":"T-1","file_path":"a.py","line_number":0,"severity":"error","message":"m"}}`, "payload.line_number"},
		{`{"type":"task.progress","severity":"info","payload":{"task_id":"T-1","agent_id":"bob","progress_percent":101,"summary":"s"}}`, "payload.progress_percent"},
		{`{"type":"task.progress","severity":"info","payload":{"task_id":"T-1","agent_id":"bob","progress_percent":-1,"summary":"s"}}`, "payload.progress_percent"},
	} {
		var e struct {
			Error struct{ Fields []struct{ Path string } }
		}
		h.do(t, "POST", "/v1/events", bobToken, c.body).want(t, 400, &e)
		if len(e.Error.Fields) != 1 || e.Error.Fields[0].Path != c.path {
			t.Errorf("%s: fields %+v, want %s", c.body, e.Error.Fields, c.path)
		}
	}
	h.do(t, "POST", "/v1/events", bobToken, `{"type":"task.progress","severity":"info","payload":{"task_id":"T-1","agent_id":"bob","progress_percent":100,"summary":"s"}}`).want(t, 201, nil)
	h.do(t, "POST", "/v1/events", bobToken, `{"type":"review.finding","severity":"warning","payload":{"task_id":"T-1","file_path":"a.py","line_number":1,"severity":"info","message":"m"}}`).want(t, 201, nil)
}

func TestInboxByNameOrID(t *testing.T) {
	h := newHarness(t)
	var byName, byID Event
	h.do(t, "POST", "/v1/events", aliceToken, chat("alice", "carol", "By name", "hello", "")).want(t, 201, &byName)
	h.do(t, "POST", "/v1/events", aliceToken, chat("alice", carolID, "By id", "hello", "")).want(t, 201, &byID)
	var l EventList
	h.do(t, "GET", "/v1/events/inbox", carolToken, "").want(t, 200, &l)
	if fmt.Sprint(ids(l)) != fmt.Sprint([]string{byName.ID, byID.ID}) {
		t.Fatalf("carol's inbox %v, want both messages, oldest first", ids(l))
	}
	h.do(t, "GET", "/v1/events/inbox?recipient_id="+carolID, carolToken, "").want(t, 200, &l)
	if len(l.Events) != 2 {
		t.Fatalf("carol's inbox by her id %v", ids(l))
	}
	h.do(t, "GET", "/v1/events/"+byID.ID, carolToken, "").want(t, 200, nil)
	h.do(t, "GET", "/v1/events/"+byID.ID, bobToken, "").want(t, 404, nil)
	// she speaks as her name with her id as from_id, as the protocol's agents do
	body := `{"type":"agent.chat","severity":"info","payload":{"from":"carol","from_id":"` + carolID +
		`","to":"alice","subject":"s","content":"c","timestamp":"2026-11-23T10:00:00Z"}}`
	h.do(t, "POST", "/v1/events", carolToken, body).want(t, 201, nil)
	h.do(t, "POST", "/v1/events", bobToken, strings.ReplaceAll(body, `"from":"carol"`, `"from":"bob"`)).want(t, 403, nil)
}

// withID is an envelope with the id set.
func withID(id, env string) string {
	var m map[string]any
	json.Unmarshal([]byte(env), &m)
	m["id"] = id
	b, _ := json.Marshal(m)
	return string(b)
}

func TestEventIDsAreTheSenders(t *testing.T) {
	h := newHarness(t)
	var mine Event
	secret := withID("E-shared", chat("alice", "carol", "Secret", "the staging password rotates", ""))
	h.do(t, "POST", "/v1/events", aliceToken, secret).want(t, 201, &mine)
	t.Run("RetryBySender", func(t *testing.T) {
		var again Event
		h.do(t, "POST", "/v1/events", aliceToken, secret).want(t, 201, &again)
		if again.Seq != mine.Seq {
			t.Fatalf("a retry stored %+v, want %+v", again, mine)
		}
	})
	t.Run("OtherSenderConflicts", func(t *testing.T) {
		a := h.do(t, "POST", "/v1/events", bobToken, withID("E-shared", chat("bob", "alice", "Hi", "hello", "")))
		var e struct {
			Error struct {
				Code   string
				Fields []struct{ Path string }
			}
		}
		a.want(t, 409, &e)
		if e.Error.Code != "conflict" || len(e.Error.Fields) != 1 || e.Error.Fields[0].Path != "id" {
			t.Fatalf("refusal %s", a.body)
		}
		if strings.Contains(string(a.body), "staging") || strings.Contains(string(a.body), "Secret") {
			t.Fatalf("bob read alice's message: %s", a.body)
		}
	})
	t.Run("SystemPrefixRefused", func(t *testing.T) {
		for _, token := range []string{aliceToken, adminToken} {
			a := h.do(t, "POST", "/v1/events", token, withID(ssot.SystemEventPrefix+"retry-1", chat("alice", "bob", "s", "c", "")))
			if a.status != 400 || !strings.Contains(string(a.body), `"path":"id"`) || !strings.Contains(string(a.body), ssot.SystemEventPrefix) {
				t.Fatalf("a post with a system id: %d %s", a.status, a.body)
			}
		}
	})
}

// TestChatSenderFromToken: a chat without from or from_id is the token's;
// naming another agent is still refused.
func TestChatSenderFromToken(t *testing.T) {
	h := newHarness(t)
	var e Event
	h.do(t, "POST", "/v1/events", carolToken, `{"type":"agent.chat","severity":"info","payload":{"to":"bob","subject":"Hi","content":"hello","timestamp":"2026-11-23T10:00:00Z"}}`).want(t, 201, &e)
	p := payloadOf(t, e)
	if p["from"] != "carol" || p["from_id"] != carolID || e.AgentID != "carol" {
		t.Fatalf("sender %v %v agent %s", p["from"], p["from_id"], e.AgentID)
	}
	h.do(t, "POST", "/v1/events", carolToken, `{"type":"agent.chat","severity":"info","payload":{"from":"alice","to":"bob","subject":"Hi","content":"hello","timestamp":"2026-11-23T10:00:00Z"}}`).want(t, 403, nil)
}
