package runner_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
)

// TestRelayAnswersWhileTheBodyIsSent: an answer that starts before the
// request's body has all arrived goes on while the rest is relayed up.
// The upstream reads the body's first line, answers a first event, and
// sends the second only once it has the body's second line, which the
// client sends only once it has the first event. A relay that does not
// relay both ways at once reads the rest of the body itself at the
// answer's first header, and the exchange stops.
func TestRelayAnswersWhileTheBodyIsSent(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		br := bufio.NewReader(r.Body)
		first, _ := br.ReadString('\n')
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "data: got "+strings.TrimSpace(first)+"\n\n")
		w.(http.Flusher).Flush()
		second, _ := br.ReadString('\n')
		io.WriteString(w, "data: got "+strings.TrimSpace(second)+"\n\n")
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	relay := httptest.NewServer(runner.NewRelay(u, nil, runner.NewMeter("m", nil), nil, nil))
	defer relay.Close()

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- exchange(relay.URL, pr, pw) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		pw.CloseWithError(io.ErrUnexpectedEOF)
		relay.CloseClientConnections()
		upstream.CloseClientConnections()
		t.Fatal("no second event within 10 s: the relay stopped relaying the body once the answer began")
	}
}

// exchange posts a body of two lines to url, the second only after the
// answer's first event, and checks both events.
func exchange(url string, pr *io.PipeReader, pw *io.PipeWriter) error {
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/stream", pr)
	req.ContentLength = int64(len("one\ntwo\n"))
	go io.WriteString(pw, "one\n")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the answer's headers: %w", err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	first, err := events.ReadString('\n')
	if err != nil || first != "data: got one\n" {
		return fmt.Errorf("first event %q, %v", first, err)
	}
	go func() { io.WriteString(pw, "two\n"); pw.Close() }()
	rest, err := io.ReadAll(events)
	if err != nil || !strings.Contains(string(rest), "data: got two") {
		return fmt.Errorf("after the body's end: %q, %v; want the second event", rest, err)
	}
	return nil
}
