package task

import (
	"testing"

	"github.com/ampflow/ampflow/amp"
)

// Each risk level takes its own setting; only an unknown level falls back
// to an admin.
func TestRiskHandlingFor(t *testing.T) {
	r := RiskHandling{Low: HandlingAuto, Medium: HandlingAdmin, High: HandlingAuto}
	for risk, want := range map[amp.Risk]Handling{
		amp.RiskLow: HandlingAuto, amp.RiskMedium: HandlingAdmin, amp.RiskHigh: HandlingAuto, "extreme": HandlingAdmin,
	} {
		if got := r.For(risk); got != want {
			t.Errorf("For(%q) = %q, want %q", risk, got, want)
		}
	}
}
