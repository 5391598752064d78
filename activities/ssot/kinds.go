package ssot

// RecordKind is the kind of a task's record in the SSOT.
type RecordKind string

// SSOT record kinds.
const (
	KindMessage  RecordKind = "message"  // an AMP message (escalations included)
	KindAck      RecordKind = "ack"      // an ACK record
	KindDecision RecordKind = "decision" // an admin decision raised or taken
	KindEvent    RecordKind = "event"    // a heartbeat, cancel or replan
)

// DiffName is where activities.WriteDiff keeps the diff of the result
// msgID, for Chains.File.
func DiffName(msgID string) string { return "diffs/" + msgID + ".diff" }

// DiffPath is the HTTP API path that serves the diff kept at DiffName.
func DiffPath(taskID, msgID string) string { return "/v1/tasks/" + taskID + "/diffs/" + msgID }
