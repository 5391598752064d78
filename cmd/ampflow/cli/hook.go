package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/activities/toolhook"
)

func (a *App) hookCommand() *cobra.Command {
	var maxWait time.Duration
	var plugin bool
	cmd := &cobra.Command{
		Use:   "hook claude|codex|gemini|opencode|acp",
		Short: "Decide an agent CLI's tool call by ampflow's tool policy (a PreToolUse/BeforeTool hook)",
		Long: "Hook reads the JSON a CLI's pre-tool hook gets on standard input (Claude Code\n" +
			"and Codex PreToolUse, Gemini CLI BeforeTool, ampflow's OpenCode plugin), asks the HTTP API\n" +
			"(POST /v1/tool-calls, as AMPFLOW_API_TOKEN) whether the call may run for the task\n" +
			"AMPFLOW_TASK_ID, waits while the admins answer an ask, and prints the answer in\n" +
			"the CLI's hook format. A call the API cannot decide (no task, the API\n" +
			"unreachable) is denied, with the reason. AMPFLOW_WORKTREE, when set, is the\n" +
			"directory the agent may write in (else the hook's cwd). Runners run the same\n" +
			"hook as the small ampflow-hook binary, or over HTTP; see docs/tools.md.",
		Example: "  # Claude Code settings.json:\n" +
			`  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"ampflow hook claude","timeout":900}]}]}}`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: toolhook.CLIs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cli := args[0]
			if !toolhook.Valid(cli) {
				return UsageError(fmt.Errorf("hook: %q is not one of %s", cli, strings.Join(toolhook.CLIs, ", ")))
			}
			if plugin {
				return a.printOpenCodePlugin(cli, maxWait)
			}
			h := toolhook.FromEnv(cli, a.LookupEnv)
			h.MaxWait, h.Stderr = maxWait, a.Stderr
			// api.url and api.token may come from a configuration file too.
			if cfg, err := a.clientConfig(); err != nil {
				h.ConfigErr = err
			} else {
				h.APIURL, h.Token = cfg.API.URL, cfg.API.Token
			}
			return h.Run(cmd.Context(), a.Stdin, a.Stdout)
		},
	}
	cmd.Flags().DurationVar(&maxWait, "max-wait", 30*time.Minute, "deny an ask not answered within `DURATION` (a runner's hook, given AMPFLOW_PARK_FILE, parks the call at tools.ask_timeout instead)")
	cmd.Flags().BoolVar(&plugin, "plugin", false, "with opencode: print the OpenCode plugin that runs this hook before every tool, instead of deciding a call")
	return cmd
}

// printOpenCodePlugin prints the plugin OpenCode runners get: OpenCode has
// no command hooks, and the plugin asks the API from OpenCode's process.
func (a *App) printOpenCodePlugin(cli string, maxWait time.Duration) error {
	if cli != "opencode" {
		return UsageError(fmt.Errorf("hook: --plugin is for opencode, not %s", cli))
	}
	_, err := a.Stdout.Write(delivery.OpenCodeHookPlugin(maxWait))
	return err
}
