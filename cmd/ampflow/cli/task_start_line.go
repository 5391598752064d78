package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// lineFlags are the flags of a task started from one line, and of where
// a task came from.
type lineFlags struct {
	repo, risk, branch         string
	criteria                   []string
	externalID, source, extURL string
}

func (l *lineFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&l.repo, "repo", "", "with TEXT: the repository, a local `PATH` or a URL (file, https, ssh, user@host:path)")
	f.StringArrayVar(&l.criteria, "criteria", nil, "with TEXT: an acceptance `CRITERION` (repeat for more; TEXT itself when none)")
	f.StringVar(&l.risk, "risk", "", "with TEXT: the risk `LEVEL`, low, medium or high (low)")
	f.StringVar(&l.branch, "branch", "", "with TEXT: work on `BRANCH` instead of one named after TEXT")
	f.StringVar(&l.externalID, "external-id", "", "the tracker's item the task is for: a start for the same `ID` answers with its task")
	f.StringVar(&l.source, "source", "", "with --external-id: the `TRACKER` (api when absent)")
	f.StringVar(&l.extURL, "external-url", "", "with --external-id: a `URL` back to the item")
}

// set reports whether a flag that makes a plan from TEXT was given.
func (l *lineFlags) set(cmd *cobra.Command) bool {
	for _, n := range []string{"repo", "criteria", "risk", "branch"} {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}

// origin is the task's origin the flags name; nil for none.
func (l *lineFlags) origin() (*task.Origin, error) {
	if l.externalID == "" {
		if l.source != "" || l.extURL != "" {
			return nil, UsageError(errors.New("--source and --external-url need --external-id"))
		}
		return nil, nil
	}
	o := &task.Origin{Source: l.source, ExternalID: l.externalID, URL: l.extURL}
	if o.Source == "" {
		o.Source = "api"
	}
	for flag, field := range map[string]string{"--source": "source", "--external-id": "external_id", "--external-url": "url"} {
		if p, ok := o.Problems()[field]; ok {
			return nil, UsageError(fmt.Errorf("%s: %s", flag, p))
		}
	}
	return o, nil
}

// brief is the task TEXT and the flags say.
func (l *lineFlags) brief(text string) (task.Brief, error) {
	b := task.Brief{Text: text, Repo: l.repo, Branch: l.branch, Criteria: l.criteria, Risk: amp.Risk(l.risk)}
	problems := b.Problems()
	for _, f := range [][2]string{{"text", `"TEXT"`}, {"repo", "--repo"}, {"risk", "--risk"}} {
		if p, ok := problems[f[0]]; ok {
			return task.Brief{}, UsageError(fmt.Errorf("%s %s", f[1], p))
		}
	}
	// A URL goes as it is: the plan's check names a scheme ampflow does
	// not fetch (plan.repo).
	if !amp.RepoIsURL(b.Repo) {
		var err error
		if b.Repo, err = filepath.Abs(l.repo); err != nil {
			return task.Brief{}, UsageError(fmt.Errorf("--repo %s: %w", l.repo, err))
		}
	}
	return b, nil
}
