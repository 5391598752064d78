package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/runner"
)

// acpPermission decides an ACP agent's permission requests as the other
// runners' hooks decide their tool calls: it runs `ampflow hook acp` on
// each (ampflow-hook acp, where there is one), in the worker, outside the agent's sandbox, with the API, the
// role's token and the task in the hook's environment and not in the
// agent's. *parkFile is read when a request comes (parkable sets it after
// apply), so an ask still open at tools.ask_timeout parks the run.
func (h *ToolHook) acpPermission(token, taskID, dir string, parkFile *string) func(context.Context, runner.PermissionRequest) runner.PermissionAnswer {
	return func(ctx context.Context, req runner.PermissionRequest) runner.PermissionAnswer {
		deny := func(format string, args ...any) runner.PermissionAnswer {
			return runner.PermissionAnswer{Reason: "ampflow: " + fmt.Sprintf(format, args...)}
		}
		in, err := json.Marshal(map[string]any{"session_id": req.SessionID, "hook_event_name": "session/request_permission",
			"tool_name": req.Tool, "tool_input": req.Input, "cwd": dir, "tool_use_id": req.ToolCallID})
		if err != nil {
			return deny("encoding the permission request: %v", err)
		}
		env := []string{EnvAPIURL + "=" + h.APIURL, EnvToolTask + "=" + taskID, EnvWorktree + "=" + dir}
		if token != "" {
			env = append(env, EnvAPIToken+"="+token)
		}
		if *parkFile != "" {
			env = append(env, activities.EnvParkFile+"="+*parkFile)
		}
		argv := []string{h.Binary, "hook", "acp"}
		if h.HookBinary != "" {
			argv = []string{h.HookBinary, "acp"}
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = child.Env(nil, nil, env...)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return deny("the tool hook failed on %s: %v: %s", req.Tool, err, strings.TrimSpace(stderr.String()))
		}
		var ans struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}
		if err := json.Unmarshal(out, &ans); err != nil {
			return deny("the tool hook's answer is not JSON: %v", err)
		}
		return runner.PermissionAnswer{Allow: ans.Decision != "deny", Reason: ans.Reason}
	}
}
