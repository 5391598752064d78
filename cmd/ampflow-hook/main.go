// Command ampflow-hook is the tool policy's hook that Codex and Gemini CLI
// runners run before each tool call: `ampflow hook` without the server
// linked in, so it starts in a millisecond or two rather than the tens
// that loading the whole ampflow binary takes. It reads the same
// environment (AMPFLOW_API_URL, AMPFLOW_API_TOKEN, AMPFLOW_TASK_ID,
// AMPFLOW_WORKTREE, AMPFLOW_PARK_FILE) and prints the same answers; see
// docs/tools.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ampflow/ampflow/activities/toolhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	// "ampflow-hook hook codex" is accepted too, so the hook's command
	// line reads as `ampflow hook`'s.
	if len(args) == 2 && args[0] == "hook" {
		args = args[1:]
	}
	if len(args) != 1 || !toolhook.Valid(args[0]) {
		fmt.Fprintf(os.Stderr, "usage: ampflow-hook %s\n", strings.Join(toolhook.CLIs, "|"))
		return 2
	}
	h := toolhook.FromEnv(args[0], os.LookupEnv)
	h.Stderr = os.Stderr
	if err := h.Run(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ampflow-hook:", err)
		return 1
	}
	return 0
}
