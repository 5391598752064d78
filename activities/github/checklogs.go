package github

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v74/github"
)

// FailedCheck is a failed check run and what GitHub says of it: its
// output, its annotations and, for a GitHub Actions job, the failing
// step and the tail of the job's log.
type FailedCheck struct {
	Name        string       `json:"name"`
	Conclusion  string       `json:"conclusion"`
	URL         string       `json:"url,omitempty"`
	Title       string       `json:"title,omitempty"`
	Summary     string       `json:"summary,omitempty"`
	Text        string       `json:"text,omitempty"`
	Annotations []Annotation `json:"annotations,omitempty"`
	FailedStep  string       `json:"failed_step,omitempty"`
	LogTail     string       `json:"log_tail,omitempty"`
}

// Annotation is a check run's note on a line.
type Annotation struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Level   string `json:"level"`
	Title   string `json:"title,omitempty"`
	Message string `json:"message"`
}

// maxAnnotations bounds the annotations read of one check run.
const maxAnnotations = 50

// FailedChecks returns the failed check runs (latest per name) of ref
// with their output, annotations and, for Actions jobs, up to logBytes
// of the job log's tail, ending at its last error line. A detail that
// cannot be read is left out: the failure itself is what counts.
func (c *Client) FailedChecks(ctx context.Context, owner, repo, ref string, logBytes int) ([]FailedCheck, error) {
	if c.token == "" {
		return nil, ErrNoToken
	}
	var out []FailedCheck
	opts := &gh.ListCheckRunsOptions{Filter: gh.Ptr("latest"), ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, owner, repo, ref, opts)
		if err != nil {
			return nil, c.classify(fmt.Sprintf("listing check runs of %s/%s@%s", owner, repo, ref), err)
		}
		for _, run := range res.CheckRuns {
			if checkRun(run).Outcome != OutcomeFailed {
				continue
			}
			out = append(out, c.failedCheck(ctx, owner, repo, run, logBytes))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (c *Client) failedCheck(ctx context.Context, owner, repo string, run *gh.CheckRun, logBytes int) FailedCheck {
	o := run.GetOutput()
	fc := FailedCheck{Name: run.GetName(), Conclusion: run.GetConclusion(), URL: run.GetHTMLURL(),
		Title: o.GetTitle(), Summary: o.GetSummary(), Text: o.GetText()}
	if o.GetAnnotationsCount() > 0 {
		anns, _, err := c.gh.Checks.ListCheckRunAnnotations(ctx, owner, repo, run.GetID(), &gh.ListOptions{PerPage: maxAnnotations})
		if err == nil {
			for _, a := range anns {
				fc.Annotations = append(fc.Annotations, Annotation{Path: a.GetPath(), Line: a.GetStartLine(),
					Level: a.GetAnnotationLevel(), Title: a.GetTitle(), Message: a.GetMessage()})
			}
		}
	}
	if run.GetApp().GetSlug() != "github-actions" || logBytes <= 0 {
		return fc
	}
	// An Actions check run has the id of its job.
	if job, _, err := c.gh.Actions.GetWorkflowJobByID(ctx, owner, repo, run.GetID()); err == nil {
		for _, st := range job.Steps {
			if st.GetConclusion() == "failure" {
				fc.FailedStep = st.GetName()
				break
			}
		}
	}
	u, _, err := c.gh.Actions.GetWorkflowJobLogs(ctx, owner, repo, run.GetID(), 0)
	if err != nil || u == nil {
		return fc
	}
	// The log URL is pre-signed: fetched without the token.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fc
	}
	resp, err := c.plain.Do(req)
	if err != nil {
		return fc
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fc
	}
	// Logs can be large: keep a window that surely holds the tail.
	const window = 4 << 20
	b, err := io.ReadAll(io.LimitReader(resp.Body, window*16))
	if err != nil {
		return fc
	}
	fc.LogTail = LogTail(string(b), logBytes)
	return fc
}

// LogTail is at most n bytes of a job log, whole lines, ending with the
// last ##[error] line (where the failing step stopped) or the log's end.
func LogTail(log string, n int) string {
	if i := strings.LastIndex(log, "##[error]"); i >= 0 {
		if j := strings.IndexByte(log[i:], '\n'); j >= 0 {
			log = log[:i+j]
		}
	}
	log = strings.TrimRight(log, "\n")
	if len(log) <= n {
		return log
	}
	log = log[len(log)-n:]
	if j := strings.IndexByte(log, '\n'); j >= 0 {
		log = log[j+1:]
	}
	return log
}
