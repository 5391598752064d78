package chat

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
)

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"ééééééé", 4, "ééé…"},
		{"  padded  ", 10, "padded"},
	}
	for _, tt := range tests {
		if got := Clip(tt.in, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// A decision a quorum took names every approver when a late click asks.
func TestAlreadyTextNamesTheQuorum(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d := decision.Decision{Options: []decision.Option{{ID: decision.OptApprove, Label: "Approve"}}}
	one := AlreadyText(d, decision.Outcome{Option: decision.OptApprove, By: "slack:U1", Channel: "slack", At: at})
	if one != "Already decided: Approve by slack:U1 via slack at 2026-11-23 12:00 UTC." {
		t.Errorf("one approver: %q", one)
	}
	two := AlreadyText(d, decision.Outcome{Option: decision.OptApprove, By: "ana", Channel: "cli", At: at,
		Approvers: []decision.Approval{{By: "slack:U1", Channel: "slack", At: at}, {By: "ana", Channel: "cli", At: at}}})
	if !strings.Contains(two, "slack:U1 via slack") || !strings.Contains(two, "ana via cli") {
		t.Errorf("a quorum: %q, want both approvers", two)
	}
}

func TestWhere(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d := decision.Decision{Options: []decision.Option{{ID: decision.OptApprove, Label: "Approve"}}}
	for _, tc := range []struct{ channel, want string }{{"dashboard", "on the dashboard"}, {"slack", "via slack"}, {"cli", "via cli"}} {
		if got := Where(tc.channel); got != tc.want {
			t.Errorf("Where(%q) = %q, want %q", tc.channel, got, tc.want)
		}
	}
	if got := AlreadyText(d, decision.Outcome{Option: decision.OptApprove, By: "ana", Channel: "dashboard", At: at}); got != "Already decided: Approve by ana on the dashboard at 2026-11-23 12:00 UTC." {
		t.Errorf("decided on the dashboard: %q", got)
	}
}
