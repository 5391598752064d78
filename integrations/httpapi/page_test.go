package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/workflows"
)

// listing is one paginated route over a fake backend of five items.
type listing struct {
	name string
	path string
	// fill gives the backend the items of ids, in the backend's order.
	fill func(h *harness, ids []string)
	// ids decodes an answer's items and its next_cursor.
	ids func(t *testing.T, r response) ([]string, string)
}

func listings() []listing {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return []listing{
		{name: "Tasks", path: "/v1/tasks",
			fill: func(h *harness, ids []string) {
				for _, id := range ids {
					h.store.saveTasks(workflows.TaskSummary{TaskID: id, StartedAt: base.Add(time.Duration(num(id)) * time.Minute)})
				}
			},
			ids: func(t *testing.T, r response) ([]string, string) {
				var out ListResponse
				r.decode(t, &out)
				var ids []string
				for _, s := range out.Tasks {
					ids = append(ids, s.TaskID)
				}
				return ids, out.NextCursor
			}},
		{name: "Decisions", path: "/v1/decisions",
			fill: func(h *harness, ids []string) {
				// Every task is saved: one left out has no open decision.
				for _, id := range five {
					var d *decision.Decision
					if slices.Contains(ids, id) {
						d = &decision.Decision{ID: id + "-d1", Subject: id, RaisedAt: base.Add(time.Duration(10-num(id)) * time.Minute)}
					}
					h.store.save(id, nil, d)
				}
			},
			ids: func(t *testing.T, r response) ([]string, string) {
				var out DecisionsResponse
				r.decode(t, &out)
				var ids []string
				for _, d := range out.Decisions {
					ids = append(ids, d.Subject)
				}
				return ids, out.NextCursor
			}},
		{name: "Inbox", path: "/v1/inbox?role=executor",
			fill: func(h *harness, ids []string) {
				// Every task is saved: one left out has nothing waiting.
				for _, id := range five {
					var ms []amp.Message
					if slices.Contains(ids, id) {
						m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, id, base.Add(time.Duration(10-num(id))*time.Second), &amp.TaskDispatch{})
						m.MsgID = "task_dispatch-" + id
						ms = append(ms, m)
					}
					h.store.save(id, ms, nil)
				}
			},
			ids: func(t *testing.T, r response) ([]string, string) {
				var out InboxResponse
				r.decode(t, &out)
				var ids []string
				for _, m := range out.Messages {
					ids = append(ids, m.TaskID)
				}
				return ids, out.NextCursor
			}},
		{name: "History", path: "/v1/tasks/T-2026-001/history",
			fill: func(h *harness, ids []string) {
				// One time for all: the chain's order is the order. Records
				// stored already are kept as they are.
				for _, id := range ids {
					h.store.addRecords("T-2026-001", ssot.Entry{ID: "rec-" + id, Kind: string(ssot.KindMessage), RecordedAt: base, Body: []byte(`{}`)})
				}
			},
			ids: func(t *testing.T, r response) ([]string, string) {
				var out HistoryResponse
				r.decode(t, &out)
				var ids []string
				for _, rec := range out.Records {
					ids = append(ids, strings.TrimPrefix(rec.ID, "rec-"))
				}
				return ids, out.NextCursor
			}},
	}
}

// num is the number of a task id T-2026-NNN.
func num(id string) int {
	var n int
	fmt.Sscanf(id[len("T-2026-"):], "%d", &n)
	return n
}

// five are the items of every listing, in the order each lists them.
var five = []string{"T-2026-005", "T-2026-004", "T-2026-003", "T-2026-002", "T-2026-001"}

// withQuery adds k=v to path.
func withQuery(path string, kv ...string) string {
	q := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	if strings.Contains(path, "?") {
		return path + "&" + q.Encode()
	}
	return path + "?" + q.Encode()
}

func TestListingPages(t *testing.T) {
	for _, l := range listings() {
		t.Run(l.name, func(t *testing.T) {
			h := newHarness(t, false)
			l.fill(h, five)
			var got []string
			cursor := ""
			for page := 1; ; page++ {
				if page > 3 {
					t.Fatalf("more than 3 pages of 2 for 5 items; so far %v", got)
				}
				kv := []string{"limit", "2"}
				if cursor != "" {
					kv = append(kv, "cursor", cursor)
				}
				r := h.do(t, "GET", withQuery(l.path, kv...), executorToken, "")
				wantStatus(t, r, http.StatusOK)
				ids, next := l.ids(t, r)
				if want := min(2, 5-len(got)); len(ids) != want {
					t.Fatalf("page %d has %v, want %d items", page, ids, want)
				}
				got = append(got, ids...)
				if next == "" {
					break
				}
				cursor = next
			}
			if !slices.Equal(got, five) {
				t.Errorf("pages gave %v, want %v", got, five)
			}
			// Without a limit, one page of everything and no cursor.
			r := h.do(t, "GET", l.path, executorToken, "")
			wantStatus(t, r, http.StatusOK)
			if ids, next := l.ids(t, r); !slices.Equal(ids, five) || next != "" || strings.Contains(string(r.body), "next_cursor") {
				t.Errorf("default page %v, next %q; body %s", ids, next, r.body)
			}
		})
	}
}

func TestListingLimitBounds(t *testing.T) {
	for _, l := range listings() {
		t.Run(l.name, func(t *testing.T) {
			h := newHarness(t, false)
			l.fill(h, five)
			for _, v := range []string{"0", "-1", "1001", "x", "1.5"} {
				r := h.do(t, "GET", withQuery(l.path, "limit", v), executorToken, "")
				wantStatus(t, r, http.StatusBadRequest)
				if e := r.errorBody(t); len(e.Fields) != 1 || e.Fields[0].Path != "limit" || !strings.Contains(e.Message, "1000") {
					t.Errorf("limit=%s: error %+v", v, e)
				}
			}
			for _, v := range []string{"1", "1000"} {
				r := h.do(t, "GET", withQuery(l.path, "limit", v), executorToken, "")
				wantStatus(t, r, http.StatusOK)
			}
		})
	}
}

func TestListingBadCursor(t *testing.T) {
	all := listings()
	for i, l := range all {
		t.Run(l.name, func(t *testing.T) {
			h := newHarness(t, false)
			l.fill(h, five)
			// A good cursor of another listing is refused too.
			other := all[(i+1)%len(all)]
			other.fill(h, five)
			_, foreign := other.ids(t, h.do(t, "GET", withQuery(other.path, "limit", "1"), executorToken, ""))
			if foreign == "" {
				t.Fatal("no cursor from the other listing")
			}
			bad := []string{"!!!", "bm90IGpzb24", base64.RawURLEncoding.EncodeToString([]byte(`{"l":"x","extra":1}`)), foreign}
			for _, c := range bad {
				r := h.do(t, "GET", withQuery(l.path, "cursor", c), executorToken, "")
				wantStatus(t, r, http.StatusBadRequest)
				if e := r.errorBody(t); len(e.Fields) != 1 || e.Fields[0].Path != "cursor" {
					t.Errorf("cursor %s: error %+v", c, e)
				}
			}
		})
	}
}

// A page after an item that is gone starts after its place.
func TestListingCursorAfterDeletedItem(t *testing.T) {
	for _, l := range listings() {
		if l.name == "History" {
			continue // the journal only grows; see TestListingHistoryGrows
		}
		t.Run(l.name, func(t *testing.T) {
			h := newHarness(t, false)
			l.fill(h, five)
			ids, next := l.ids(t, h.do(t, "GET", withQuery(l.path, "limit", "2"), executorToken, ""))
			if !slices.Equal(ids, five[:2]) || next == "" {
				t.Fatalf("first page %v, next %q", ids, next)
			}
			// The page's last item and the one before it are gone.
			l.fill(h, []string{five[2], five[3], five[4]})
			r := h.do(t, "GET", withQuery(l.path, "limit", "2", "cursor", next), executorToken, "")
			wantStatus(t, r, http.StatusOK)
			if ids, _ := l.ids(t, r); !slices.Equal(ids, five[2:4]) {
				t.Errorf("after the gone item: %v, want %v", ids, five[2:4])
			}
		})
	}
}

// Records written after a page are on the next one.
func TestListingHistoryGrows(t *testing.T) {
	l := listings()[3]
	h := newHarness(t, false)
	l.fill(h, five[:2])
	ids, next := l.ids(t, h.do(t, "GET", withQuery(l.path, "limit", "1"), executorToken, ""))
	if !slices.Equal(ids, five[:1]) || next == "" {
		t.Fatalf("first page %v, next %q", ids, next)
	}
	l.fill(h, five)
	r := h.do(t, "GET", withQuery(l.path, "cursor", next), executorToken, "")
	wantStatus(t, r, http.StatusOK)
	if ids, _ := l.ids(t, r); !slices.Equal(ids, five[1:]) {
		t.Errorf("after growing: %v, want %v", ids, five[1:])
	}
}

// A long poll waits for its page to have something: with a cursor past
// every waiting message, the next message ends the wait.
func TestInboxWaitPage(t *testing.T) {
	l := listings()[2]
	h := newHarness(t, false)
	l.fill(h, five[:2])
	_, next := l.ids(t, h.do(t, "GET", withQuery(l.path, "limit", "1"), executorToken, ""))
	if next == "" {
		t.Fatalf("a two-item inbox read one at a time gave no next cursor")
	}
	// The second message is answered meanwhile; the page after the cursor
	// is empty until it comes again.
	l.fill(h, five[:1])
	h.store.mu.Lock()
	h.store.inboxHook = func(n int) {
		if n == 3 {
			l.fill(h, five[:2])
		}
	}
	h.store.mu.Unlock()
	r := h.do(t, "GET", withQuery(l.path, "wait", "30s", "cursor", next), executorToken, "")
	wantStatus(t, r, http.StatusOK)
	if ids, _ := l.ids(t, r); !slices.Equal(ids, five[1:2]) {
		t.Errorf("long poll answered %v, want %v", ids, five[1:2])
	}
	if n := h.store.inboxReads(); n < 3 {
		t.Errorf("answered after %d looks, before the message came", n)
	}
}
