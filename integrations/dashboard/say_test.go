package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

type steered struct{ got []task.SteerInput }

func (s *steered) Steer(_ context.Context, _ string, in task.SteerInput) error {
	s.got = append(s.got, in)
	return nil
}

func TestSayForm(t *testing.T) {
	db := openStore(t)
	f := &fixture{db: db, engine: &fakeEngine{t: t, db: db}}
	st := &steered{}
	f.srv = New(Options{Store: db, Actions: f.engine, Tokens: testTokens, MaxRejects: 3, Poll: 50 * time.Millisecond, Messages: db, Steer: st})
	f.http = httptest.NewServer(f.srv.Handler())
	t.Cleanup(f.http.Close)
	seedTask(t, db, "T-2026-010", 0)
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/tasks/T-2026-010", nil, nil)
	if !strings.Contains(page, `action="/tasks/T-2026-010/say"`) || !strings.Contains(page, "Message to the running agent") {
		t.Fatal("the task page has no form to message its agent")
	}
	csrf := formValue(page, "csrf")
	resp, _ := c.do("POST", "/tasks/T-2026-010/say", url.Values{"csrf": {csrf}, "text": {"  "}}, browserHeaders(f))
	_, after := c.do("GET", "/tasks/T-2026-010", nil, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(after, "Not sent: the message is empty.") {
		t.Errorf("an empty message was not refused")
	}
	resp, _ = c.do("POST", "/tasks/T-2026-010/say", url.Values{"csrf": {csrf}, "text": {"use the v2 client"}}, browserHeaders(f))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("say: %d", resp.StatusCode)
	}
	ms, err := db.TaskMessages(context.Background(), "T-2026-010")
	if err != nil || len(ms) != 1 || ms[0].Sender != "ana" || ms[0].Text != "use the v2 client" {
		t.Fatalf("messages %+v, %v", ms, err)
	}
	if len(st.got) != 1 || st.got[0].ID != ms[0].ID {
		t.Errorf("the task was told %+v", st.got)
	}
}
