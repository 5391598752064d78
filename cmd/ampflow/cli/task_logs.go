package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/transcripts"
)

func (a *App) taskLogsCommand() *cobra.Command {
	var follow bool
	var role string
	var run int
	cmd := &cobra.Command{
		Use:   "logs TASK_ID",
		Short: "Print the transcript of a task's agent runs, following it live with -f",
		Long: "Logs prints what the task's agent runs did (GET /v1/tasks/{id}/transcript): each run's\n" +
			"start and end, the agent's text, its tool calls, each tool's result (the last 4 KiB of its\n" +
			"output) with its exit code where the CLI reports one, errors, retries and rate-limit waits,\n" +
			"with the run's cost so far. Secrets are masked (***). With -f it follows the transcript as\n" +
			"the runs write it, until the task is done or terminated (or Ctrl-C). --role and --run pick\n" +
			"one role's runs, or one run of it (1, 2, …). -o json prints the entries as a JSON array, or\n" +
			"with -f one entry a line as each arrives.",
		Example: "  ampflow task logs T-2026-045\n  ampflow task logs T-2026-045 -f --role executor\n  ampflow task logs T-2026-045 --role reviewer --run 2 -o json",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if role != "" && role != "executor" && role != "reviewer" {
				return UsageError(fmt.Errorf("--role must be executor or reviewer, not %q", role))
			}
			if run < 0 {
				return UsageError(fmt.Errorf("--run must be 1 or more, not %d", run))
			}
			if run > 0 && role == "" {
				return UsageError(fmt.Errorf("--run needs --role: runs are counted per role"))
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			q := url.Values{}
			if role != "" {
				q.Set("role", role)
			}
			if run > 0 {
				q.Set("run", strconv.Itoa(run))
			}
			p := &logPrinter{a: a}
			if follow {
				if err := c.followTranscript(cmd.Context(), args[0], q, p.print); err != nil {
					return refused(err)
				}
				return nil
			}
			var all []ssot.TranscriptEntry
			for after := int64(0); ; {
				pg, err := c.Transcript(cmd.Context(), args[0], after, q)
				if err != nil {
					return refused(err)
				}
				all = append(all, pg.Entries...)
				if len(pg.Entries) < ssot.MaxLimit {
					break
				}
				after = pg.NextAfter
			}
			if a.JSON() {
				if all == nil {
					all = []ssot.TranscriptEntry{}
				}
				return a.PrintJSON(all)
			}
			for _, e := range all {
				if err := p.print(e); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "follow the transcript as the runs write it, until the task ends")
	f.StringVar(&role, "role", "", "only the runs of `ROLE`: executor or reviewer")
	f.IntVar(&run, "run", 0, "only run `N` of the role (1, 2, …); needs --role")
	return cmd
}

// logPrinter prints entries as lines a person reads, or as JSON.
type logPrinter struct {
	a *App
}

func (p *logPrinter) print(e ssot.TranscriptEntry) error {
	if p.a.JSON() {
		return p.a.PrintJSON(e)
	}
	_, err := io.WriteString(p.a.Stdout, formatEntry(e))
	return err
}

// formatEntry is one entry as text: a head line, then the entry's text
// indented when it has more than one line.
func formatEntry(e ssot.TranscriptEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s#%d %s", e.At.UTC().Format("15:04:05"), e.Role, e.Run, e.Kind)
	if e.Tool != "" {
		fmt.Fprintf(&b, " %s", e.Tool)
	}
	if e.ExitCode != nil {
		fmt.Fprintf(&b, " exit %d", *e.ExitCode)
	} else if e.IsError {
		b.WriteString(" failed")
	}
	if e.CostUSD > 0 || e.InputTokens > 0 {
		fmt.Fprintf(&b, " [$%.4f, %d tokens]", e.CostUSD, e.InputTokens+e.OutputTokens)
	}
	text := strings.TrimRight(e.Text, "\n")
	switch {
	case text == "":
	case !strings.Contains(text, "\n") && len(text) <= 160:
		b.WriteString(": " + text)
	default:
		b.WriteString(":\n    " + strings.ReplaceAll(text, "\n", "\n    "))
	}
	b.WriteString("\n")
	return b.String()
}

// Transcript reads a page of a task's transcript after a seq.
func (c *apiClient) Transcript(ctx context.Context, taskID string, after int64, filter url.Values) (transcripts.Page, error) {
	q := url.Values{}
	for k, v := range filter {
		q[k] = v
	}
	q.Set("after", strconv.FormatInt(after, 10))
	q.Set("limit", strconv.Itoa(ssot.MaxLimit))
	var out transcripts.Page
	err := c.do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(taskID)+"/transcript?"+q.Encode(), nil, nil, &out)
	return out, err
}

// followTranscript streams a task's transcript (follow=1) to each until
// the server says the task ended; a stream the server closes sooner is
// opened again after the last entry.
func (c *apiClient) followTranscript(ctx context.Context, taskID string, filter url.Values, each func(ssot.TranscriptEntry) error) error {
	var after int64
	for {
		q := url.Values{}
		for k, v := range filter {
			q[k] = v
		}
		q.Set("follow", "1")
		q.Set("after", strconv.FormatInt(after, 10))
		path := "/v1/tasks/" + url.PathEscape(taskID) + "/transcript?" + q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
		if err != nil {
			return task.Errorf(task.CodeInvalid, "cannot build a request to the ampflow API at %s: %v; set %s", c.base, err, c.urlSetting())
		}
		req.Header.Set("Accept", "text/event-stream")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return c.transportError(ctx, err)
		}
		if resp.StatusCode >= 300 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			return c.answerError(resp.StatusCode, b)
		}
		ended, err := readEvents(resp.Body, func(e ssot.TranscriptEntry) error {
			after = e.Seq
			return each(e)
		})
		resp.Body.Close()
		switch {
		case ended:
			return nil
		case ctx.Err() != nil:
			return nil
		case err != nil && !isStreamCut(err):
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readEvents reads server-sent events: each "entry" to each; true once
// an "end" came.
func readEvents(r io.Reader, each func(ssot.TranscriptEntry) error) (ended bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			switch event {
			case "entry":
				var e ssot.TranscriptEntry
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					return false, fmt.Errorf("reading the transcript stream: %w", err)
				}
				if err := each(e); err != nil {
					return false, err
				}
			case "end":
				return true, nil
			case "error":
				return false, task.Errorf(task.CodeUnavailable, "the transcript stream failed: %s", data)
			}
			event, data = "", ""
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	return false, sc.Err()
}

// isStreamCut is a stream the server or the network ended without an
// "end": worth opening again.
func isStreamCut(err error) bool {
	return err == io.ErrUnexpectedEOF || strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "EOF")
}
