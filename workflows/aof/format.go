package aof

import (
	"encoding/json"
	"strings"
	"time"
)

// Stamp formats a time as the document's timestamps: ISO 8601 in UTC to
// the millisecond ("2026-02-09T21:05:00.000Z").
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// WorkLogLine is a status update's work log entry: "- <timestamp>
// Progress: … | Notes: … | Blockers: …", with the parts present, blockers
// joined by ", ". It is empty when the update has none of them.
func WorkLogLine(at time.Time, progress, notes string, blockers []string) string {
	var parts []string
	if progress != "" {
		parts = append(parts, "Progress: "+progress)
	}
	if notes != "" {
		parts = append(parts, "Notes: "+notes)
	}
	if len(blockers) > 0 {
		parts = append(parts, "Blockers: "+strings.Join(blockers, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "- " + Stamp(at) + " " + strings.Join(parts, " | ")
}

// WorkLogHeading heads the work log in a task's body.
const WorkLogHeading = "## Work Log"

// HandoffMarkdown is inputs/handoff.md: the handoff request for people.
func HandoffMarkdown(h HandoffRequest) string {
	var b strings.Builder
	b.WriteString("# Handoff Request\n\n")
	b.WriteString("**From:** " + h.FromAgent + "\n")
	b.WriteString("**To:** " + h.ToAgent + "\n")
	b.WriteString("**Due By:** " + h.DueBy + "\n")
	for _, s := range []struct {
		title string
		items []string
	}{
		{"Acceptance Criteria", h.AcceptanceCriteria},
		{"Expected Outputs", h.ExpectedOutputs},
		{"Context References", h.ContextRefs},
		{"Constraints", h.Constraints},
	} {
		b.WriteString("\n## " + s.title + "\n\n")
		if len(s.items) == 0 {
			b.WriteString("- (none)\n")
		}
		for _, it := range s.items {
			b.WriteString("- " + it + "\n")
		}
	}
	return b.String()
}

// TransitionReason is the reason a status update's transition is logged
// with: its blockers, else its notes, else its progress (the first
// present).
func TransitionReason(u StatusUpdate) string {
	switch {
	case len(u.Blockers) > 0:
		return strings.Join(u.Blockers, ", ")
	case u.Notes != "":
		return u.Notes
	}
	return u.Progress
}

// Timestamp is a time that reads and writes as the document's timestamps
// (see Stamp), as AOF's artifacts hold them.
type Timestamp struct{ time.Time }

// At returns t as a Timestamp.
func At(t time.Time) Timestamp { return Timestamp{t.UTC()} }

// MarshalJSON writes t as Stamp does.
func (t Timestamp) MarshalJSON() ([]byte, error) { return []byte(`"` + Stamp(t.Time) + `"`), nil }

// UnmarshalJSON reads an RFC 3339 time.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = v.UTC()
	return nil
}
