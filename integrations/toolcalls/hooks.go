package toolcalls

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/toolhook"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// HookPattern is the route a CLI's hook posts its own hook input to
// (Claude Code's HTTP hook, ampflow's OpenCode plugin): POST
// /v1/tool-calls's decision, waited for and answered in the CLI's hook
// format, so no process starts per call.
const HookPattern = "POST /v1/hooks/{cli}"

// Parks finds where a run of role on taskID with its CLI cli writes its
// park file (the runner watches it), the same path the worker gives the
// run in AMPFLOW_PARK_FILE.
type Parks func(taskID string, role amp.Role, cli string) string

// hookGrace is how much sooner than the CLI's own hook timeout (the ask
// timeout and a minute) the route answers an ask nobody answered.
const hookGrace = 5 * time.Second

// hook decides the call a CLI's hook posts, as POST /v1/tool-calls does,
// and answers in the CLI's hook format. The task is the run
// credential's, or ?task=; ?worktree= is where the agent may write. An
// ask is waited for; a run's ask still open at tools.ask_timeout parks
// the run (Options.Parks): Claude Code is told to defer a call alone in
// its message, and any other call is held until the runner has stopped
// the CLI, then denied.
func (h *Handlers) hook(w http.ResponseWriter, r *http.Request) {
	cli := r.PathValue("cli")
	if !toolhook.Valid(cli) {
		h.api.Error(w, r, httpapi.InvalidField("cli", fmt.Sprintf("must be one of %s, not %q", strings.Join(toolhook.CLIs, ", "), cli)))
		return
	}
	caller := httpapi.CallerOf(r)
	q := r.URL.Query()
	taskID := q.Get("task")
	if taskID == "" {
		taskID = caller.Task
	}
	if err := httpapi.MayTask(r, taskID); err != nil {
		h.api.Error(w, r, err)
		return
	}
	// The CLIs send more than the hook reads (Claude Code's
	// permission_mode, say), and add fields as they go: they are ignored.
	var raw json.RawMessage
	if err := h.api.Decode(w, r, &raw); err != nil {
		h.api.Error(w, r, err)
		return
	}
	var in toolhook.Input
	if err := json.Unmarshal(raw, &in); err != nil {
		h.api.Error(w, r, httpapi.InvalidField("body", "must be the CLI's hook input, a JSON object"))
		return
	}
	if in.ToolName == "" {
		h.api.Error(w, r, httpapi.InvalidField("tool_name", "required"))
		return
	}
	start := time.Now()
	c, err := h.record(r, task.ToolCallRequest{TaskID: taskID, CLI: cli, Tool: in.ToolName, Input: in.ToolInput,
		CWD: in.CWD, Worktree: q.Get("worktree")})
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	ask := c.AskTimeout
	if ask <= 0 {
		ask = h.o.AskTimeout
	}
	park := ""
	if h.o.Parks != nil && caller.Task != "" && ask > 0 {
		park = h.o.Parks(caller.Task, caller.Role, cli)
	}
	if c.Decision == task.ToolPending {
		wait := 30 * time.Minute
		switch {
		case park != "":
			wait = ask - time.Since(start)
		case ask > 0:
			wait = ask + time.Minute - hookGrace - time.Since(start)
		}
		c = h.await(r.Context(), c, wait)
	}
	if c.Decision == task.ToolPending && park != "" {
		h.park(w, r, cli, c, in, park, toolhook.ParkReason(in.ToolName, c.ID, ask))
		return
	}
	var allow *bool
	reason := ""
	if c.Decision == task.ToolPending {
		allow, reason = toolhook.No(), fmt.Sprintf("ampflow: no answer to %s (%s) in time", in.ToolName, c.ID)
	} else {
		allow, reason = toolhook.Verdict(in.ToolName, toolhook.Call{ID: c.ID, Decision: c.Decision, Reason: c.Reason,
			By: c.By, Channel: c.Channel, Rule: c.Rule})
	}
	httpapi.WriteJSON(w, http.StatusOK, toolhook.Output(cli, allow, reason))
}

// park parks the run whose call c is still asked: it writes the park
// file the runner watches, then defers Claude Code's call when it is
// alone in its message, or holds it until the runner has stopped the CLI
// and denies it.
func (h *Handlers) park(w http.ResponseWriter, r *http.Request, cli string, c task.ToolCall, in toolhook.Input, path, reason string) {
	deferred := false
	if cli == "claude" && transcript(in.TranscriptPath) {
		deferred, _ = toolhook.Defers(in)
	}
	if err := toolhook.WritePark(path, toolhook.Park{ToolCallID: c.ID, At: time.Now().UTC(), Hold: !deferred}); err != nil {
		httpapi.WriteJSON(w, http.StatusOK, toolhook.Output(cli, toolhook.No(), fmt.Sprintf("ampflow: parking %s: %v", c.ID, err)))
		return
	}
	if deferred {
		httpapi.WriteJSON(w, http.StatusOK, toolhook.DeferOutput(reason))
		return
	}
	toolhook.Held(r.Context(), path)
	httpapi.WriteJSON(w, http.StatusOK, toolhook.Output(cli, toolhook.No(), reason))
}

// transcript reports whether path may be read as Claude Code's transcript:
// a regular .jsonl file named by an absolute path. The caller names it,
// and its reading only chooses between deferring and holding the
// caller's own call; a device or a pipe is not read.
func transcript(path string) bool {
	if !filepath.IsAbs(path) || !strings.HasSuffix(path, ".jsonl") {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
