package dashboard

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

func TestTaskTranscript(t *testing.T) {
	f := newFixture(t, testTokens)
	seedTask(t, f.db, "T-2026-006", 0)
	three := 3
	if _, err := f.db.AppendTranscript(context.Background(), "T-2026-006", []ssot.TranscriptEntry{
		{Role: "executor", Run: 1, Kind: ssot.TranscriptToolCall, Tool: "Bash", Text: `{"command":"sh -c 'exit 3'"}`},
		{Role: "executor", Run: 1, Kind: ssot.TranscriptToolResult, Tool: "Bash", Text: "<b>boom</b>", IsError: true, ExitCode: &three, CostUSD: 0.0123},
	}); err != nil {
		t.Fatal(err)
	}
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/tasks/T-2026-006", nil, nil)
	for _, want := range []string{`id="transcript" data-last="2"`, "executor #1 tool_result Bash exit 3", "&lt;b&gt;boom&lt;/b&gt;",
		`<span id="transcript-cost">$0.0123</span>`, `id="transcript-now"`} {
		if !strings.Contains(page, want) {
			t.Errorf("task page lacks %q", want)
		}
	}

	req, _ := http.NewRequest("GET", f.http.URL+"/tasks/T-2026-006/transcript/events?after=2", nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	start := time.Now()
	if _, err := f.db.AppendTranscript(context.Background(), "T-2026-006", []ssot.TranscriptEntry{
		{Role: "executor", Run: 1, Kind: ssot.TranscriptText, Text: "fixing it"}}); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stream ended")
			}
			if strings.HasPrefix(l, "data: ") {
				if !strings.Contains(l, `"seq":3`) || !strings.Contains(l, `"head":"executor #1 text"`) {
					t.Fatalf("first entry %s, want seq 3", l)
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("the entry took %s to reach the page's stream", d)
				}
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no entry within 5s")
		}
	}
}

func TestTranscriptEventsSignedOut(t *testing.T) {
	f := newFixture(t, testTokens)
	c := f.client(t)
	resp, _ := c.do("GET", "/tasks/T-2026-006/transcript/events", nil, http.Header{"Sec-Fetch-Site": {"same-origin"}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("stream without a session: %d, want 401", resp.StatusCode)
	}
}
