package workers

import (
	"context"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/config"
)

// TestPlannerMode: no line without a planner; a planner whose CLI does
// not start is refused naming goals.planner.command.
func TestPlannerMode(t *testing.T) {
	if got, err := PlannerMode(context.Background(), config.Goals{PlannerRounds: 3}); err != nil || got != nil {
		t.Errorf("without a planner: %q %v", got, err)
	}
	_, err := PlannerMode(context.Background(), config.Goals{PlannerRounds: 3,
		Planner: config.Planner{Runner: "claude", Command: []string{"/nonexistent/claude"}, Sandbox: config.SandboxOn}})
	if err == nil || !strings.Contains(err.Error(), "goals.planner.command") {
		t.Errorf("a missing CLI: %v", err)
	}
}
