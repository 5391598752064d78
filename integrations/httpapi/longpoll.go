package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

// MaxWait bounds the wait of a long poll unless Options.MaxWait sets
// another bound.
const MaxWait = 60 * time.Second

// LongPoll reads a request's wait query parameter (a Go duration such as
// "30s" or whole seconds, at most the server's MaxWait; an invalid one is
// an InvalidField naming wait) and, for a wait above zero, extends the
// connection's deadlines by it. Poll is how long to sleep between looks:
// Options.PollInterval. Every long poll of the API reads its wait here and
// then waits in Poll.
func (s *Server) LongPoll(w http.ResponseWriter, r *http.Request) (wait, poll time.Duration, err error) {
	wait, err = parseWait(r.URL.Query().Get("wait"), s.maxWait)
	if err != nil {
		return 0, 0, err
	}
	if wait > 0 {
		s.extendDeadlines(w, r, wait)
	}
	return wait, s.poll, nil
}

// Poll is a long poll's loop: it calls look until look reports done or
// fails, the wait is over, or ctx ends, sleeping every between looks and
// never past the wait; with no wait it looks once. It returns look's
// error, or ctx's once the request has ended, when nobody reads an
// answer.
func Poll(ctx context.Context, wait, every time.Duration, look func() (done bool, err error)) error {
	// The wall clock, not Options.Now: the wait runs on real timers.
	deadline := time.Now().Add(wait)
	for {
		done, err := look()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || done {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(min(every, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ExtendDeadlines gives a request that may wait (a long poll inside it)
// wait on top of the server's read and write timeouts, as LongPoll does.
func (s *Server) ExtendDeadlines(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	s.extendDeadlines(w, r, wait)
}

// extendDeadlines gives a long poll its wait on top of the server's read
// and write timeouts, which would otherwise cut it off: the write deadline
// ends the answer, and the read deadline cancels the request's context.
func (s *Server) extendDeadlines(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	rc := http.NewResponseController(w)
	now := time.Now()
	if err := rc.SetReadDeadline(now.Add(wait + s.readTO)); err != nil {
		s.log.Debug("extending the read deadline of a long poll", "path", r.URL.Path, "err", err)
	}
	if err := rc.SetWriteDeadline(now.Add(wait + s.writeTO)); err != nil {
		s.log.Debug("extending the write deadline of a long poll", "path", r.URL.Path, "err", err)
	}
}

// parseWait reads a wait as a Go duration ("30s") or whole seconds
// ("30"), at most maxWait.
func parseWait(v string, maxWait time.Duration) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, InvalidField("wait", `must be a duration such as "30s"`)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > maxWait {
		return 0, InvalidField("wait", fmt.Sprintf("must be between 0 and %s", task.FormatDuration(maxWait)))
	}
	return d, nil
}
