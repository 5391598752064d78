package delivery

import (
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities"
)

// TestResumePrompt: a resumed run is told what became of its parked
// call; of a connection the egress proxy asked about, which destination
// and that the command must be run again.
func TestResumePrompt(t *testing.T) {
	for _, c := range []struct {
		r    activities.Resume
		want []string
	}{
		{activities.Resume{ToolCallID: "T-2026-001-tc1", Decision: "allow", By: "alice"}, []string{"alice allowed your tool call T-2026-001-tc1", "same call again"}},
		{activities.Resume{ToolCallID: "T-2026-001-tc2", Decision: "deny", By: "bob", Note: "use the mirror"}, []string{"denied by bob: use the mirror", "Do not make it again"}},
		{activities.Resume{ToolCallID: "T-2026-001-tc3", Decision: "allow", By: "alice", Destination: "10.0.0.7:8080"},
			[]string{"allowed your connection to 10.0.0.7:8080", "Run the command that made it again"}},
		{activities.Resume{ToolCallID: "T-2026-001-tc4", Decision: "deny", By: "bob", Note: "not that host", Destination: "10.0.0.7:8080"},
			[]string{"connection to 10.0.0.7:8080", "denied by bob: not that host", "Do not try to reach it again"}},
	} {
		got := resumePrompt(c.r)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: %q lacks %q", c.r, got, w)
			}
		}
	}
}
