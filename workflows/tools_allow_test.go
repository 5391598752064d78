package workflows

import (
	"testing"

	"github.com/ampflow/ampflow/amp/task"
)

// TestAllowKey: allowing a destination for the task allows that host and
// port alone; allowing a tool allows the tool, whatever its input.
func TestAllowKey(t *testing.T) {
	dest := func(host, port string) *task.ToolCall {
		return &task.ToolCall{CLI: "egress", Tool: "connect", Kind: "network", Input: `{"host":"` + host + `","port":"` + port + `"}`}
	}
	if a, b := allowKey(dest("10.0.0.1", "80")), allowKey(dest("10.0.0.1", "8080")); a == b {
		t.Errorf("two destinations share the key %q", a)
	}
	if a, b := allowKey(dest("registry.npmjs.org", "443")), allowKey(dest("registry.npmjs.org", "443")); a != b || a != "connect registry.npmjs.org:443" {
		t.Errorf("one destination's keys %q, %q", a, b)
	}
	shell := func(cmd string) *task.ToolCall {
		return &task.ToolCall{CLI: "claude", Tool: "Bash", Kind: "shell", Input: `{"command":"` + cmd + `"}`}
	}
	if a, b := allowKey(shell("ls")), allowKey(shell("pwd")); a != "Bash" || b != "Bash" {
		t.Errorf("a tool's keys %q, %q", a, b)
	}
	if o := allowToolOption(*dest("10.0.0.1", "80")); o.ID != task.OptAllowTool || o.Label != "Allow this destination for the rest of the task" {
		t.Errorf("the option for a destination: %+v", o)
	}
}
