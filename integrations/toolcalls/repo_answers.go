package toolcalls

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config/toolpolicy"
)

// RepoAnswers reads what the admins answered for a whole repository:
// the store's tasks and their chains.
type RepoAnswers interface {
	Task(ctx context.Context, taskID string) (ssot.TaskState, error)
	RepoRecords(ctx context.Context, repo, kind, contains string) ([]ssot.Record, error)
}

// RuleAllowedForRepo names the answer that let a destination through for
// every task of a repository.
const RuleAllowedForRepo = "allowed-for-repository"

// allowedForRepo lets c, a destination the policy would ask about,
// through when the admins allowed that host and port for every task of
// its task's repository (option allow_repo on an earlier ask, kept in
// that task's chain). Anything it cannot read leaves the ask as it is.
func (h *Handlers) allowedForRepo(ctx context.Context, taskID string, c *task.ToolCall) {
	if h.o.Repos == nil {
		return
	}
	want, ok := destinationOf(c.Input)
	if !ok {
		return
	}
	st, err := h.o.Repos.Task(ctx, taskID)
	if err != nil || st.Repo == "" {
		return
	}
	recs, err := h.o.Repos.RepoRecords(ctx, st.Repo, task.RecordToolCall, `"option":"`+task.OptAllowRepo+`"`)
	if err != nil {
		slog.Default().Warn("reading the repository's allowed destinations", "repo", st.Repo, "error", err)
		return
	}
	for _, r := range recs {
		var prior task.ToolCall
		if json.Unmarshal(r.Body, &prior) != nil || prior.Option != task.OptAllowRepo || prior.Kind != c.Kind {
			continue
		}
		if got, ok := destinationOf(prior.Input); ok && got == want {
			c.Action, c.Rule = string(toolpolicy.Allow), RuleAllowedForRepo
			c.Reason = prior.By + " allowed " + want + " for every task of " + st.Repo + " (" + prior.ID + ")"
			return
		}
	}
}

// destinationOf reads a network call's host and port.
func destinationOf(input string) (string, bool) {
	var d struct{ Host, Port string }
	if json.Unmarshal([]byte(input), &d) != nil || d.Host == "" || d.Port == "" {
		return "", false
	}
	return d.Host + ":" + d.Port, true
}
