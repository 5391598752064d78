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
		// newest first: the broadcast, bob's agent.error (his refused inbox
		// read above), alice's request
		if got := ids(l); len(got) != 3 || got[0] != b.ID || l.Events[1].Type != TypeError || got[2] != root.ID {
			t.Fatalf("bob's inbox with broadcasts %v", ids(l))
		}
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
		if e.Error.Code != string(CodeInvalidPayload) || fmt.Sprint(paths) != "[payload.from_id payload.subject payload.timestamp severity]" {
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
		h.do(t, "GET", "/v1/events/search?task_id=T-1&q=injection", aliceToken, "").want(t, 200, &l)
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
// its schemas, and that each README example of the section "Leases and
// agent messaging" is a documented route.
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
		if item[strings.ToLower(method)] == nil {
			t.Errorf("%s is not in openapi.json", o.pattern)
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
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Leases and agent messaging\n")
	if !ok {
		t.Fatal(`README.md has no "Leases and agent messaging" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
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
