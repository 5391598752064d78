package httpapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

var update = flag.Bool("update", false, "rewrite openapi.json")

// The OpenAPI document is generated here from the routes, the error
// table, the Go types (their JSON tags decide which properties are
// required) and amp's embedded JSON Schemas, which are included whole.
// TestOpenAPIUpToDate keeps openapi.json in step; regenerate with
//
//	go test ./integrations/httpapi/ -run TestOpenAPIUpToDate -update
type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// ampRef points into one of amp's schemas, included as amp_TYPE.
func ampRef(schema, pointer string) obj {
	return obj{"$ref": "#/components/schemas/amp_" + schema + pointer}
}

func str(desc string) obj { return obj{"type": "string", "description": desc} }

func strEnum[S ~string](desc string, vals ...S) obj {
	list := make([]any, len(vals))
	for i, v := range vals {
		list[i] = string(v)
	}
	o := obj{"type": "string", "enum": list}
	if desc != "" {
		o["description"] = desc
	}
	return o
}

func integer(desc string) obj { return obj{"type": "integer", "description": desc} }
func boolean(desc string) obj { return obj{"type": "boolean", "description": desc} }
func dateTime(desc string) obj {
	return obj{"type": "string", "format": "date-time", "description": desc}
}
func array(items obj, desc string) obj {
	return obj{"type": "array", "items": items, "description": desc}
}

const taskIDPattern = "^T-[0-9]{4}-[0-9]{3,}$"

func taskIDSchema(desc string) obj {
	return obj{"type": "string", "pattern": taskIDPattern, "description": desc}
}

// object is the schema of the Go struct v: props are its properties, and
// the fields without omitempty or omitzero are required.
func object(v any, desc string, props obj) obj {
	o := obj{"type": "object", "description": desc, "properties": props}
	var req []string
	for _, f := range jsonFields(reflect.TypeOf(v)) {
		if !f.omitempty {
			req = append(req, f.name)
		}
	}
	if len(req) > 0 {
		o["required"] = req
	}
	return o
}

type jsonField struct {
	name      string
	omitempty bool
}

// jsonFields lists the JSON object keys of struct type t, as
// encoding/json writes them.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, omitempty: slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool { return o == "omitempty" || o == "omitzero" })})
	}
	return out
}

var roles = []amp.Role{amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator, amp.RoleAdmin, amp.RoleSystem}

// apiSchemas are the schemas of the API's own types, by component name,
// with the Go value each describes (nil for schemas of no single type).
func apiSchemas() (map[string]obj, map[string]any) {
	types := map[string]any{}
	s := map[string]obj{}
	add := func(name string, v any, schema obj) {
		if strings.HasSuffix(name, "Request") {
			schema["additionalProperties"] = false // the server refuses unknown fields
		}
		s[name] = schema
		if v != nil {
			types[name] = v
		}
	}
	add("Status", nil, strEnum("Where a task stands; done and terminated are final. A task reports awaiting_admin while a decision is open in an agent's turn: its state's waiting_for names the decision's kind, underlying_status the turn. It reports recovering while an agent's run that died (its worker died, or its attempt stopped) is delivered again, until the retried run starts: its state's recovering names the run, underlying_status the turn.", task.Statuses()...))
	add("Role", nil, strEnum("An AMP role.", roles...))
	add("Error", nil, obj{
		"type": "object", "required": []string{"error"},
		"description": "The body of every error answer.",
		"properties":  obj{"error": ref("ErrorDetail")},
	})
	add("ErrorDetail", errorDetail{}, object(errorDetail{}, "What went wrong and, for invalid input, which fields.", obj{
		"code":    ref("ErrorCode"),
		"message": str("A plain sentence naming the field, setting or state at fault; for 409 unexpected, what the task expects now; for 409 task_ended, the task's final status."),
		"fields":  array(ref("FieldError"), "The fields at fault (mostly with code invalid)."),
	}))
	add("FieldError", amp.FieldError{}, object(amp.FieldError{}, "One field at fault.", obj{
		"path":    str(`The field's path in the request body, such as "payload.commit_hash" or "plan.subtasks[0].estimated_lines"; "(root)" for the whole body; a query parameter or header name for those.`),
		"problem": str("What is wrong with it."),
	}))
	add("ErrorCode", nil, errorCodeSchema())
	add("OK", nil, obj{"type": "object", "required": []string{"ok"}, "properties": obj{"ok": obj{"const": true}}})
	add("WhoAmI", WhoAmI{}, object(WhoAmI{}, "Who the caller's token says it is.", obj{
		"name": str("The token's name: who acts."),
		"id":   str("The token's id (the agent's other name in the mesh), when set."),
		"role": ref("Role"),
		"open": obj{"type": "boolean", "description": "True when the API has no tokens: every caller is an admin."},
	}))

	add("StartRequest", StartRequest{}, object(StartRequest{}, "Starts a task from a plan.", obj{
		"task_id":       taskIDSchema("The task id; without it the next free id of the year is used."),
		"plan":          ampRef("task_dispatch", "/$defs/payload"),
		"handling":      strEnum(`"admin" asks an admin to approve the plan whatever its risk_level; "auto" (or absent) follows the risk level.`, task.HandlingAuto, task.HandlingAdmin),
		"coordinator":   str("Who coordinates the task; defaults to the token's name."),
		"external_id":   obj{"type": "string", "maxLength": task.MaxExternalID, "description": "The id of the tracker's item the task is for (owner/repo#42, PROJ-7). The first start of an item starts its task; every later start with the same source and external_id, from any token or worker, answers with that task (existing true) and starts nothing."},
		"source":        obj{"type": "string", "pattern": "^[a-z0-9][a-z0-9_.-]{0,39}$", "description": `The tracker: github, jira, or any such name; "api" when external_id comes without one. GET /v1/tasks?source= lists its tasks.`},
		"external_url":  obj{"type": "string", "format": "uri", "description": "A link back to the item (http or https)."},
		"create_branch": boolean("Make the plan's branch at the default branch's head when the repository lacks it, instead of refusing the task (`ampflow task start \"…\"` sets it)."),
		"priority":      integer("Orders the task's agent runs in a runner host's queue for its slots (runner.slots): the higher first, -100 to 100; 0 by default."),
	}))
	add("StartResponse", StartResponse{}, object(StartResponse{}, "The started task.", obj{
		"task_id":  taskIDSchema("The task's id."),
		"existing": boolean("True when the start's external_id had started this task before: nothing new was started."),
	}))
	add("Origin", task.Origin{}, object(task.Origin{}, "The tracker's item a task came from.", obj{
		"source":      str("The tracker (github, api, …)."),
		"external_id": str("The item's id in the tracker."),
		"url":         str("A link back to the item."),
	}))
	add("SubmitResponse", SubmitResponse{}, object(SubmitResponse{}, "How the task took a message or ACK.", obj{
		"msg_id":    str("The msg_id of the accepted message or ACK record."),
		"status":    ref("Status"),
		"duplicate": boolean("True when the task had taken this same record before; it had no further effect."),
		"warnings":  array(obj{"type": "string"}, "For a task_result whose diff_summary git does not confirm: each difference, as the reviewer's review_request will say it (coordinator_notes). The result is taken all the same; empty when git agrees or its check did not come in time."),
	}))
	add("AckRequest", AckRequest{}, object(AckRequest{}, "Acknowledges a message waiting in an inbox; the server writes the ACK record.", obj{
		"msg_id": str("The msg_id of the message to acknowledge, as GET /v1/inbox lists it."),
		"as":     strEnum("The acknowledging role; defaults to the token's role (required when no tokens are configured).", amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator, amp.RoleAdmin),
	}))
	add("MessageRequest", MessageRequest{}, object(MessageRequest{}, "The short form of a message: the server builds the envelope (msg_id and timestamp now, requires_ack and ack_timeout_sec by the type, from and to by the type's route), as `ampflow send --type` does. A body with msg_id, protocol_version or ack_of is read as a whole envelope or ACK record instead.", obj{
		"type":    strEnum("The message type; other types are sent as whole envelopes.", amp.AgentTypes()...),
		"task_id": taskIDSchema("The task."),
		"from":    strEnum("Only for escalation: the sender; defaults to the token's role. task_result is sent by executor and review_verdict by reviewer, and take no from.", amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator, amp.RoleAdmin),
		"payload": obj{"description": "The payload of type.", "oneOf": []any{
			ampRef("task_result", "/$defs/payload"), ampRef("review_verdict", "/$defs/payload"), ampRef("escalation", "/$defs/payload")}},
	}))
	add("HeartbeatRequest", HeartbeatRequest{}, object(HeartbeatRequest{}, "An agent's sign of life; restarts the task's heartbeat timer.", obj{
		"task_id": taskIDSchema("The task worked on."),
		"from":    strEnum("The sending role; the token must have it. Defaults to the token's role, as an ACK's as does (required when the API is open).", amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator),
		"note":    str("A short progress note."),
	}))
	add("InboxResponse", InboxResponse{}, object(InboxResponse{}, "A page of the messages addressed to role that still await its ACK or reply.", obj{
		"role":     strEnum("Whose inbox this is.", amp.RoleExecutor, amp.RoleReviewer),
		"messages": array(ref("Message"), "Whole AMP envelopes, oldest first (by timestamp, then msg_id), at most limit; empty when none is waiting."),
		"acked": array(object(AckedMessage{}, "A message of the page that the caller ACKed and has not answered: its own work.", obj{
			"msg_id":   str("The message (one of messages)."),
			"task_id":  taskIDSchema("Its task."),
			"by":       str("The token name that holds it: the caller's."),
			"acked_at": dateTime("When it was ACKed."),
		}), "With include=acked or mine=true: which messages of the page the caller holds; empty when none."),
		"next_cursor": str("Pass as cursor to read the next page; absent on the last page."),
	}))
	add("DecisionsResponse", DecisionsResponse{}, object(DecisionsResponse{}, "The decisions waiting for an admin.", obj{
		"decisions":   array(ref("Decision"), "Every open decision of every workflow, at most limit, oldest first (by raised_at, then id)."),
		"next_cursor": str("Pass as cursor to read the next page; absent on the last page."),
	}))
	add("DecideRequest", DecideRequest{}, object(DecideRequest{}, "An admin's choice on a pending decision.", obj{
		"option": str("The id of one of the decision's options."),
		"note":   str("Why; required when the option has note_required."),
		"digest": obj{"type": "string", "pattern": "^[0-9a-fA-F]{64}$",
			"description": "The digest of the decision as the admin was shown it (GET /v1/decisions). Required whenever the decision has one (400 naming digest): when what is being approved has changed since, the answer is refused with 409 stale_decision and nothing changes."},
	}))
	add("DecideResult", task.DecideResult{}, object(task.DecideResult{}, "How the answer was taken: outcome when it closed the decision; decision and progress when it was an approval counted towards a quorum not yet reached, the decision still open.", obj{
		"outcome":  ref("Outcome"),
		"decision": ref("Decision"),
		"progress": ref("Progress"),
		"note":     str("Why nothing changed: this admin's approval was counted already."),
		"status":   ref("Status"),
	}))
	add("Progress", decision.Progress{}, object(decision.Progress{}, `How far a quorum has come: "1 of 2 approvals: ops".`, obj{
		"given":    integer("Distinct admins who approved so far."),
		"required": integer("Approvals the decision needs."),
		"by":       array(obj{"type": "string"}, "Who approved, in order."),
	}))
	add("Outcome", decision.Outcome{}, object(decision.Outcome{}, "A decision taken.", obj{
		"decision_id": str("The decision's id: its subject's id, -d and a number (T-YYYY-NNN-dN for a task)."),
		"kind":        ref("DecisionKind"),
		"option":      str("The option chosen."),
		"note":        str("The admin's note."),
		"by":          str("Who decided: a token's name, slack:<id> or telegram:<id>; ampflow when the workflow withdrew the decision or it expired."),
		"channel":     str("Where: cli, api, slack, telegram or dashboard; system for a withdrawal, expiry when nobody answered in time (the option is then the decision's on_expiry)."),
		"at":          dateTime("When."),
		"subject":     str("The id of the workflow the decision belongs to (a task id)."),
		"digest":      str("The SHA-256 (hex) of what was approved or refused."),
		"approvers":   array(ref("Approval"), "Every admin whose approval made the quorum."),
	}))
	add("Approval", decision.Approval{}, object(decision.Approval{}, "One admin's approval towards a quorum.", obj{
		"by":      str("Who approved."),
		"channel": str("Where: cli, api, slack, telegram or dashboard."),
		"at":      dateTime("When."),
		"note":    str("The admin's note."),
	}))
	add("DecisionKind", nil, strEnum("What a decision is about.", task.KindPlanApproval, task.KindAckTimeout,
		task.KindHeartbeatTimeout, task.KindPartialResult, task.KindCIExhausted, task.KindLowConfidence,
		task.KindHallucinationLock, task.KindBranchViolation, task.KindFinalApproval, task.KindResultProblem,
		task.KindAgentEscalation, task.KindDeliveryFailed, task.KindLeaseWait))
	add("Option", decision.Option{}, object(decision.Option{}, "One choice of a decision.", obj{
		"id":            str("What POST /v1/decisions/{id} takes as option."),
		"label":         str("A human label."),
		"note_required": boolean("The choice needs a note."),
	}))
	add("Decision", decision.Decision{}, object(decision.Decision{}, "A question put to the admins by a workflow (its subject): the plan to approve, a timeout, a locked review.", obj{
		"id":           str("The decision's id, unique across workflows: its subject's id, -d and a number (T-YYYY-NNN-dN for a task); the {id} of POST /v1/decisions/{id}."),
		"subject":      str("The id of the workflow the decision belongs to: a task id, later a gate or lease id. Answers are routed to it."),
		"kind":         ref("DecisionKind"),
		"prompt":       str("The question."),
		"options":      array(ref("Option"), "The choices."),
		"raised_at":    dateTime("When it was raised."),
		"escalation":   ref("Message"),
		"context":      ref("DecisionContext"),
		"digest":       str("The SHA-256 (hex) of the canonical JSON of exactly what is being approved; POST /v1/decisions/{id} must send it back."),
		"expires_at":   dateTime("When on_expiry applies; absent when the decision never expires."),
		"on_expiry":    str("The option taken when the decision expires; never an approval."),
		"required":     integer("How many distinct admins must approve."),
		"approvals":    array(ref("Approval"), "The approvals given so far."),
		"reminded_at":  dateTime("When the reminder went out; absent until then."),
		"escalated_at": dateTime("When the escalation group was added; absent until then."),
	}))
	add("DecisionContext", decision.Context{}, object(decision.Context{}, "What the deciding admin needs at a glance.", obj{
		"description":       str("The task's description."),
		"repo":              str("The task's repository."),
		"branch":            str("The task's branch."),
		"risk":              ampRef("task_dispatch", "/$defs/payload/properties/risk_level"),
		"subtask":           str("The current subtask id."),
		"reject_count":      integer("Reviews rejected so far."),
		"ci_state":          str("The CI state, when CI is involved."),
		"issues":            array(ampRef("review_verdict", "/$defs/payload/properties/issues/items"), "The reviewer's issues."),
		"blockers":          array(obj{"type": "string"}, "The executor's blockers."),
		"confidence":        obj{"type": "number", "description": "The reviewer's confidence."},
		"suggested_actions": array(obj{"type": "string"}, "What the escalating agent suggests."),
		"agent_stderr":      str("The end of a failed command-mode agent's stderr, secrets masked."),
		"extra": obj{"type": "object", "description": "Anything else of note, by key (the system that raised the decision names them: aof_task_id, reviewer_agent, contract_id, …).",
			"additionalProperties": obj{"type": []any{"string", "number", "boolean", "array", "object"}}},
	}))
	add("ListResponse", ListResponse{}, object(ListResponse{}, "Tasks, newest first.", obj{
		"tasks":       array(ref("TaskSummary"), "At most limit tasks, newest first (by started_at, then task_id)."),
		"next_cursor": str("Pass as cursor to read the next page; absent on the last page."),
	}))
	add("TaskSummary", workflows.TaskSummary{}, object(workflows.TaskSummary{}, "One line of a task listing.", obj{
		"task_id":      taskIDSchema("The task."),
		"status":       ref("Status"),
		"risk_level":   str("The plan's risk_level."),
		"repo":         str("The plan's repository."),
		"reject_count": integer("Reviews rejected so far."),
		"started_at":   dateTime("When the task started."),
		"running":      boolean("Whether its workflow still runs."),
		"origin":       ref("Origin"),
	}))
	add("HistoryResponse", HistoryResponse{}, object(HistoryResponse{}, "A task's SSOT records in chain order, and the chain's head.", obj{
		"task_id":     taskIDSchema("The task."),
		"records":     array(ref("StoredRecord"), "At most limit records, in chain order (the order they were written)."),
		"head":        ref("ChainHead"),
		"next_cursor": str("Pass as cursor to read the next page; absent on the last page."),
	}))
	add("ChainHead", ssot.Head{}, object(ssot.Head{}, "The last link of a task's hash chain when the page was read; `ampflow audit verify` checks the chain up to it.", obj{
		"seq":  integer("The last record's place in the chain, from 1."),
		"hash": str("The last record's hash (SHA-256, hex)."),
	}))
	add("StoredRecord", ssot.Record{}, object(ssot.Record{}, "One record as the SSOT keeps it: a link of its task's hash chain.", obj{
		"id":          str("The record's id: a message's or ACK's msg_id, or the id of a decision or event."),
		"kind":        strEnum("What the record is.", "message", "ack", "decision", "event"),
		"task_id":     taskIDSchema("The task."),
		"seq":         integer("The record's place in its task's chain, from 1."),
		"recorded_at": dateTime("When the recorded event happened (to the microsecond)."),
		"digest":      str("For a decision record, the SHA-256 (hex) of what it decided on; absent otherwise."),
		"body_hash":   str("SHA-256 (hex) of the body in canonical form."),
		"prev_hash":   str("The hash of the record before it in the chain; empty for the first."),
		"hash":        str("SHA-256 (hex) over the record's fields, its body_hash and prev_hash."),
		"body": obj{"description": "The record itself: the whole AMP envelope of a message (kind message), the ACK record (kind ack), or the decision or event as JSON.",
			"anyOf": []any{ref("Message"), ampRef("ack", ""), ref("Decision"), ref("Outcome"), obj{"type": "object",
				"description": "An event: the task's plan ({task_id, plan}), a heartbeat ({from, note}), a cancel ({reason, by}) or a replan ({plan, by}).",
				"properties": obj{"task_id": taskIDSchema(""), "plan": ampRef("task_dispatch", "/$defs/payload"), "from": ref("Role"), "note": str(""),
					"reason": str(""), "by": str("Who acted.")}}}},
	}))
	add("TaskCIResponse", TaskCIResponse{}, object(TaskCIResponse{}, "Whether a task has CI, and each round of it.", obj{
		"task_id": taskIDSchema("The task."),
		"ci":      strEnum("on; off when the task's policy has no CI (ci.provider none): no round is read, and nothing passed.", CIOn, CIOff),
		"state":   str("The last reading's state, as the task's state.ci: off, pending, passed, failed, timed_out or none; empty before the first reading."),
		"rounds":  array(ref("CIRound"), fmt.Sprintf("The task's CI rounds, oldest first; at most the last %d.", ssot.MaxCIRounds)),
	}))
	add("CIRound", ssot.CIRound{}, object(ssot.CIRound{}, "One round of a task's CI: the readings of one result's commit, from the first to the verdict.", obj{
		"round":       integer("The round's number, from 1."),
		"subtask":     str("The subtask whose result CI read."),
		"commit":      str("The commit read: in full once the provider resolved it, else as the executor named it."),
		"state":       strEnum("pending until the verdict; timed_out: still pending at ci.timeout; none: the provider had no CI for it.", ssot.CIRoundPending, ssot.CIRoundPassed, ssot.CIRoundFailed, ssot.CIRoundTimedOut, ssot.CIRoundNone),
		"failing":     array(obj{"type": "string"}, "The failing checks."),
		"checks":      obj{"type": "object", "additionalProperties": obj{"type": "string"}, "description": "Each check's state, by name."},
		"log":         str(fmt.Sprintf("The tail of what the failing checks printed, secrets masked; at most %d bytes.", ssot.MaxCIRoundLog)),
		"log_url":     str("Where the provider shows a failing check's whole log (github); absent when it gives none."),
		"log_kept":    boolean("The whole log is kept beside the task's records (the command provider's): GET /v1/tasks/{id}/ci/logs/{commit} serves it."),
		"reads":       integer("How many times CI was read in the round."),
		"started_at":  dateTime("The round's first reading."),
		"updated_at":  dateTime("Its last reading."),
		"finished_at": dateTime("When its verdict was read; absent while pending."),
	}))
	add("SayRequest", SayRequest{}, object(SayRequest{}, "A message for the task's running agent.", obj{
		"text": obj{"type": "string", "minLength": 1, "maxLength": ssot.MaxTaskMessageText, "description": "What to tell the agent; required, at most 8192 bytes."},
	}))
	add("InterruptRequest", InterruptRequest{}, object(InterruptRequest{}, "Stops the task's running agent; the body may be empty.", obj{
		"reason": obj{"type": "string", "maxLength": ssot.MaxTaskMessageText, "description": "Why; kept as the interrupt's text. Optional."},
	}))
	add("TaskMessage", ssot.TaskMessage{}, object(ssot.TaskMessage{}, "A message or interrupt sent to a task's running agent, and when the agent got it.", obj{
		"id":           integer("The message's id; ids grow in the order messages are sent."),
		"task_id":      taskIDSchema("The task."),
		"kind":         strEnum("message: given to the agent as a user turn; interrupt: stops its run.", ssot.TaskMessageSay, ssot.TaskMessageInterrupt),
		"sender":       str("Who sent it: the token's name."),
		"text":         str("The message, or an interrupt's reason (absent when it gave none)."),
		"created_at":   dateTime("When it was sent."),
		"delivered_at": dateTime("When the agent got it (written to Claude Code's input, or the prompt of a resumed run); absent until then."),
		"run":          str("The delivery that took it: <msg_id>/<role>."),
	}))
	add("TaskMessagesResponse", TaskMessagesResponse{}, object(TaskMessagesResponse{}, "A task's messages and interrupts, oldest first.", obj{
		"task_id":  taskIDSchema("The task."),
		"messages": array(ref("TaskMessage"), fmt.Sprintf("At most %d.", ssot.MaxTaskMessages)),
	}))
	add("CancelRequest", CancelRequest{}, object(CancelRequest{}, "Ends a task.", obj{
		"reason": str("Why; required."),
	}))
	add("ReplanRequest", ReplanRequest{}, object(ReplanRequest{}, "Replaces the subtasks not yet done.", obj{
		"subtasks": array(ampRef("task_dispatch", "/$defs/payload/properties/subtasks/items"), "The new subtasks; at least one."),
		"note":     str("Why."),
	}))
	add("ChangeResult", task.ChangeResult{}, object(task.ChangeResult{}, "The task's status after the change.", obj{
		"status": ref("Status"),
	}))
	add("TimelineEntry", task.TimelineEntry{}, object(task.TimelineEntry{}, "One event of a task.", obj{
		"at": dateTime("When."),
		"kind": strEnum("What happened.", "message", "ack", "heartbeat", "decision", "status", "lease", "check", "subtask", "cost", "rate_limit", "parked", "say", "interrupted",
			"tool_call", "replan", "github", "worktree", "host", "account"),
		"msg_id": str("The message or ACK, if any."),
		"type":   str("The message type, if any."),
		"from":   str("The sender, if any."),
		"to":     str("The recipient, if any."),
		"status": ref("Status"),
		"note":   str("Anything else."),
	}))
	add("Tokens", task.Tokens{}, object(task.Tokens{}, "Tokens the task's runner-mode agents have used.", obj{
		"input":  integer("Input tokens, cached ones included."),
		"output": integer("Output tokens."),
	}))
	add("Spend", task.Spend{}, object(task.Spend{}, "What one role's runs have cost the task.", obj{
		"role":     str("executor or reviewer."),
		"cost_usd": obj{"type": "number", "description": "USD spent."},
		"tokens":   ref("Tokens"),
		"runs":     integer("Runs counted."),
		"cap_usd":  obj{"type": "number", "description": "The role's cap on the task (agents.<role>.max_cost_usd and each raise); absent when none."},
	}))
	add("State", task.State{}, object(task.State{}, "A task as its workflow sees it now.", obj{
		"task_id":     taskIDSchema("The task."),
		"status":      ref("Status"),
		"waiting_for": str("The kind of the decision open on the task (tool_call, delivery_failed, final_approval, plan_approval, …): what it waits for from the admins; absent when none is open."),
		"underlying_status": obj{"allOf": []any{ref("Status")},
			"description": "The agent's turn the task is in (dispatched, in_progress, ci_check, in_review) while status reports awaiting_admin for an open decision, or recovering for a run delivered again; absent otherwise."},
		"recovering": object(task.Recovery{}, "Set while an agent's run that died (its worker died, or its attempt stopped) is delivered again, until the retried run's first heartbeat; status then reports recovering.", obj{
			"role": ref("Role"), "msg_id": str("The message the run works on."),
			"session": str("The agent's session the retried run resumes; absent when it starts afresh."),
			"since":   dateTime("When the task learned the run died."), "note": str("What happened.")}),
		"risk_level":    ampRef("task_dispatch", "/$defs/payload/properties/risk_level"),
		"plan_approval": strEnum("How the plan is approved: auto (at once) or admin (an admin's plan_approval decision), from the policy for the plan's risk level (policy.plan_approval) made stricter by the start's handling; absent until the task has read its policy.", task.HandlingAuto, task.HandlingAdmin),
		"description":   str("The plan's description."),
		"coordinator":   str("Who started the task: they and the admins may steer its agent (POST /v1/tasks/{id}/messages)."),
		"interrupted": object(task.Interruption{}, "Set while a run a person interrupted waits for a message or a redispatch.", obj{
			"role": ref("Role"), "by": str("Who interrupted it."), "at": dateTime("When the run stopped.")}),
		"origin":       ref("Origin"),
		"repo":         str("The plan's repository."),
		"branch":       str("The plan's branch."),
		"ci_repo":      str("The GitHub repository (HOST/OWNER/NAME) whose checks count; absent when none."),
		"pull_request": str("The URL of the task's pull request (delivery.pull_request); absent when none."),
		"merge_commit": str("The commit that merged the task's pull request (delivery.merge), or the target's head its merge queue made; absent until merged."),
		"queue": object(task.QueueState{}, "The task's place in its target's merge queue (a goal's task); absent until it enters it.", obj{
			"target": str("The branch it merges into."),
			"status": strEnum("queued for the target's lease; merging: rebase, CI on it, the move of the target; round: a conflict or failing CI sent it back to its executor; merged.",
				task.QueueQueued, task.QueueMerging, task.QueueRound, task.QueueMerged),
			"rounds":     integer("The rounds the queue sent it back to its executor."),
			"merged":     str("The target's head its merge made."),
			"entered_at": dateTime("When it last entered the queue."),
			"moves":      integer("The moves in the queue told to the task's goal."),
		}),
		"subtasks":        array(ampRef("task_dispatch", "/$defs/payload/properties/subtasks/items"), "The plan's subtasks, as replanned."),
		"subtask_index":   integer("The index of the current subtask."),
		"subtask":         ampRef("task_dispatch", "/$defs/payload/properties/subtasks/items"),
		"reject_count":    integer("Reviews rejected so far."),
		"diff_mismatches": array(obj{"type": "string"}, "Where the executor's diff_summary differs from what git shows."),
		"result_checked":  str("The task_result whose git check diff_mismatches reports."),
		"ci_rounds":       integer("CI rounds of the current subtask."),
		"ci":              strEnum("off when the task's policy has no CI (ci.provider none); else the state of the last CI reading. Absent before the first. GET /v1/tasks/{id}/ci lists each round.", task.CIOff, ssot.CIRoundPending, ssot.CIRoundPassed, ssot.CIRoundFailed, ssot.CIRoundTimedOut, ssot.CIRoundNone),
		"ci_round":        integer("The number of the task's last CI round (one per result read); 0 before the first."),
		"rounds":          integer("Executor rounds so far."),
		"pending":         ref("Decision"),
		"decided":         array(ref("Outcome"), "Decisions taken."),
		"outbox":          array(ref("Message"), "Messages sent to agents that still await their ACK or reply."),
		"timeline":        array(ref("TimelineEntry"), "Events, oldest first."),
		"cost_usd":        obj{"type": "number", "description": "What the task's runner-mode agents have spent on it, in USD: the CLI's own figure where it reports one (Claude Code, OpenCode), else its tokens priced from pricing.models."},
		"tokens":          ref("Tokens"),
		"spend":           array(ref("Spend"), "The same per role, with each role's cap; empty before a runner's first run."),
		"paused_until":    dateTime("While a delivery waits out an agent's rate limit: when it is sent again."),
		"holders": array(object(task.Holder{}, "The agent holding a role's work: the token that first ACKed (or answered) the role's current message. Another token's ACK, reply or heartbeat is refused with 409 claimed until a new message to the role (a redispatch, the next subtask, a review asked again, after a recovered heartbeat or an admin's choice to send again) hands the work on.", obj{
			"role":       strEnum("The role.", amp.RoleExecutor, amp.RoleReviewer),
			"agent":      str("The holding token's name."),
			"msg_id":     str("The message it took."),
			"since":      dateTime("When it took it."),
			"unanswered": ref("Message"),
		}), "Who holds each role's work; empty while nobody does."),
		"lease": object(task.BranchLease{}, "The lease the task holds on its branch (resource key repo:<repo>:<branch>), from before its first dispatch until it ends.", obj{
			"lease_id":     str("The lease (GET /v1/leases)."),
			"resource_key": str("repo:<repo>:<branch>."),
			"expires_at":   dateTime("When it runs out unless the task renews it."),
		}),
		"lease_holder": str("While the task is awaiting_lease: the task holding its branch."),
		"last_error":   str("The last refused input or failure."),
		"reason":       str("Why the task ended or is suspended."),
		"started_at":   dateTime("When the task started."),
		"updated_at":   dateTime("When it last changed."),
	}))
	msgs := []any{}
	for _, t := range amp.Types() {
		msgs = append(msgs, ampRef(string(t), ""))
	}
	add("Message", nil, obj{
		"description": "A whole AMP/1.0 envelope; its type decides the payload. The schemas are amp's own (`ampflow schema TYPE`).",
		"oneOf":       msgs,
	})
	return s, types
}

// errorCodeSchema lists every error code with its HTTP status, from statusOf.
func errorCodeSchema() obj {
	codes := make([]string, 0, len(statusOf))
	for c := range statusOf {
		codes = append(codes, string(c))
	}
	sort.Strings(codes)
	var lines []string
	for _, c := range codes {
		lines = append(lines, fmt.Sprintf("- `%s`: HTTP %d", c, statusOf[task.Code(c)]))
	}
	return obj{"type": "string", "enum": codes,
		"description": "The error's code; each code has one HTTP status:\n" + strings.Join(lines, "\n")}
}

// op is one route of the document.
type op struct {
	pattern     string
	summary     string
	description string
	// noAuth marks routes readable without a token.
	noAuth bool
	params []obj
	body   obj
	// status and answer are the success answer.
	status int
	answer obj
	// errs are the error statuses beyond those of every route.
	errs []int
	// errText says more than statusText about some of errs on this route.
	errText map[int]string
}

var (
	pathID     = obj{"name": "id", "in": "path", "required": true, "schema": taskIDSchema(""), "description": "The task id, T-YYYY-NNN."}
	limitParam = obj{"name": "limit", "in": "query", "schema": obj{"type": "integer", "minimum": 1, "maximum": maxListLimit, "default": defaultListLimit},
		"description": fmt.Sprintf("At most this many items in the page; from 1 to %d (outside: 400 naming limit).", maxListLimit)}
	cursorParam = obj{"name": "cursor", "in": "query", "schema": obj{"type": "string"},
		"description": "The next_cursor of the previous page, opaque; absent reads the first page. A cursor this listing did not give answers 400 naming cursor. The next page starts after the previous page's last item even when that item is gone."}
)

func ops() []op {
	return []op{
		{pattern: "GET /healthz", summary: "Liveness", noAuth: true, status: 200, answer: ref("OK")},
		{pattern: "GET /v1/openapi.json", summary: "This document", noAuth: true, status: 200, answer: obj{"type": "object",
			"description": "An OpenAPI 3.1 document (its schema: https://spec.openapis.org/oas/3.1/schema/2022-10-07).", "required": []any{"openapi", "info", "paths"},
			"properties": obj{"openapi": str("3.1.0"), "info": obj{"type": "object", "properties": obj{"title": str(""), "version": str(""), "description": str("")}},
				"servers": array(obj{"type": "object", "properties": obj{"url": str("")}}, ""), "security": array(obj{"type": "object", "additionalProperties": array(str(""), "")}, ""),
				"paths": obj{"type": "object", "additionalProperties": obj{"type": "object", "description": "A path item: an operation per method.", "additionalProperties": obj{"type": "object", "description": "An OpenAPI operation object.", "properties": obj{"operationId": str(""), "summary": str(""), "security": array(obj{"type": "object", "additionalProperties": array(str(""), "")}, "")}}}},
				"components": obj{"type": "object", "properties": obj{"schemas": obj{"type": "object", "additionalProperties": obj{"type": []any{"object", "boolean"}, "description": "A JSON Schema.", "properties": obj{"type": obj{"type": []any{"string", "array"}}}}},
					"securitySchemes": obj{"type": "object", "additionalProperties": obj{"type": "object", "properties": obj{"type": str(""), "scheme": str(""), "description": str("")}}}}}}}},
		{pattern: "GET /metrics", summary: "Prometheus metrics", description: "Text exposition format; with tokens configured, any token reads it.",
			status: 200, answer: nil},
		{pattern: "GET /v1/whoami", summary: "Who the token is", description: "The caller's name (who acts: the holder of what it ACKs, its AOF agent id and mesh id), its token's id when set, and its role; open is true when the API has no tokens, and every caller is then an admin under one local name.",
			status: 200, answer: ref("WhoAmI")},
		{pattern: "POST /v1/tasks", summary: "Start a task", description: "Token role: coordinator or admin. The plan is a task_dispatch payload, validated as AMP/1.0; errors name plan.… paths. The same Idempotency-Key from the same token answers as the first start did; the same source and external_id, from any token, answers with the task the item started.",
			params: []obj{{"name": "Idempotency-Key", "in": "header", "schema": obj{"type": "string"},
				"description": "Makes a retried start safe: a start under a key already used by this token answers with that start's task instead of starting another."}},
			body: ref("StartRequest"), status: 201, answer: ref("StartResponse"), errs: []int{400, 403, 409, 413, 415}},
		{pattern: "GET /v1/tasks", summary: "List tasks", params: []obj{
			{"name": "status", "in": "query", "schema": ref("Status"), "description": "Only tasks with this status."},
			{"name": "risk", "in": "query", "schema": obj{"type": "string", "enum": []string{"low", "medium", "high"}}, "description": "Only tasks of this risk level."},
			{"name": "repo", "in": "query", "schema": obj{"type": "string"}, "description": "Only tasks on this repository, as the plan names it."},
			{"name": "source", "in": "query", "schema": obj{"type": "string"}, "description": "Only tasks started from this tracker's items (a start's source: github, api, …)."},
			limitParam, cursorParam},
			status: 200, answer: ref("ListResponse"), errs: []int{400}},
		{pattern: "GET /v1/tasks/{id}", summary: "A task's state", params: []obj{pathID}, status: 200, answer: ref("State"), errs: []int{400, 404}},
		{pattern: "GET /v1/tasks/{id}/history", summary: "A task's SSOT records", params: []obj{pathID, limitParam, cursorParam}, status: 200, answer: ref("HistoryResponse"), errs: []int{400, 404}},
		{pattern: "GET /v1/tasks/{id}/ci", summary: "A task's CI rounds", description: "Whether the task has CI (ci off: its policy has none, which is not passed) and each round: one per result read, with its commit, state, failing checks, the tail of their log and when it started and finished. Written by the CI activity as it reads, beside the task's records.",
			params: []obj{pathID}, status: 200, answer: ref("TaskCIResponse"), errs: []int{400, 404, 503}},
		{pattern: "GET /v1/tasks/{id}/ci/logs/{commit}", summary: "The whole log of a CI run", description: "The whole output of the command provider's run of commit (its last 64 MiB, secrets masked), kept beside the task's records: a round with log_kept names it.",
			params: []obj{pathID, {"name": "commit", "in": "path", "required": true, "schema": obj{"type": "string", "pattern": "^([0-9a-f]{40}|[0-9a-f]{64})$"}, "description": "The round's commit, in full."}},
			status: 200, answer: nil, errs: []int{400, 404, 503}},
		{pattern: "POST /v1/tasks/{id}/cancel", summary: "Cancel a task", description: "Token role: coordinator or admin.", params: []obj{pathID},
			body: ref("CancelRequest"), status: 200, answer: ref("ChangeResult"), errs: []int{400, 403, 404, 409, 413, 415}},
		{pattern: "POST /v1/tasks/{id}/replan", summary: "Replan a task", description: "Token role: coordinator or admin.", params: []obj{pathID},
			body: ref("ReplanRequest"), status: 200, answer: ref("ChangeResult"), errs: []int{400, 403, 404, 409, 413, 415, 423}},
		{pattern: "POST /v1/tasks/{id}/messages", summary: "Tell the task's agent something", description: "Token role: admin, or the coordinator that started the task (another coordinator: 403). The message reaches the running agent as a user turn: at once on Claude Code's input, else when its run ends, by resuming its session before the result is read. A run interrupted with POST /v1/tasks/{id}/interrupt resumes its session with it. An ended task: 409 task_ended.",
			params: []obj{pathID}, body: ref("SayRequest"), status: 201, answer: ref("TaskMessage"), errs: []int{400, 403, 404, 409, 413, 415, 503}},
		{pattern: "GET /v1/tasks/{id}/messages", summary: "Messages sent to the task's agent", description: "Each message and interrupt, who sent it, and when the agent got it.",
			params: []obj{pathID}, status: 200, answer: ref("TaskMessagesResponse"), errs: []int{400, 503}},
		{pattern: "POST /v1/tasks/{id}/interrupt", summary: "Interrupt the task's agent", description: "Token role: admin. Stops the agent's run within a second, its whole process group; its session and worktree are kept, and the task waits (state.interrupted) for a message (POST /v1/tasks/{id}/messages), which resumes the session, or a redispatch. Only while an agent's run may be going (dispatched, in_progress, in_review; else 409 unexpected).",
			params: []obj{pathID}, body: ref("InterruptRequest"), status: 202, answer: ref("TaskMessage"), errs: []int{400, 403, 404, 409, 413, 415, 503}},
		{pattern: "GET /v1/records/{id}", summary: "One SSOT record", description: "Any record by its id, such as a msg_id. A reviewer reads the task's plan and acceptance criteria here: a review_request's payload.original_dispatch_ref is the task_dispatch's msg_id, and that record's body.payload.acceptance_criteria lists them (payload.task_result_ref likewise names the executor's result).",
			params: []obj{{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "The record's id, such as task_dispatch-T-2026-045-1740576727001."}},
			status: 200, answer: ref("StoredRecord"), errs: []int{400, 404}},
		{pattern: "GET /v1/tasks/{id}/diffs/{msg_id}", summary: "A result's diff", description: "The diff (git diff --binary) of the executor's result msg_id, kept by ampflow when GitHub cannot show it: a review_request's diff_url names it.",
			params: []obj{pathID, {"name": "msg_id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "The task_result's msg_id."}},
			status: 200, answer: nil, errs: []int{400, 404}},
		{pattern: "POST /v1/messages", summary: "Send an AMP message or ACK record", description: messagesDescription,
			body: messageBody(), status: 202, answer: ref("SubmitResponse"), errs: []int{400, 403, 404, 409, 413, 415, 423, 429}},
		{pattern: "POST /v1/acks", summary: "Acknowledge a message", description: "The short form {msg_id, as} has the server write the ACK record; a whole ACK record (with ack_of) is taken as POST /v1/messages takes it.",
			body: obj{"oneOf": []any{ref("AckRequest"), ampRef("ack", "")}}, status: 202, answer: ref("SubmitResponse"), errs: []int{400, 403, 404, 409, 413, 415, 423, 429}},
		{pattern: "POST /v1/heartbeats", summary: "Send a heartbeat", body: ref("HeartbeatRequest"), status: 202, answer: ref("OK"), errs: []int{400, 403, 404, 409, 413, 415}},
		{pattern: "GET /v1/inbox", summary: "An agent's inbox", description: "A page of the messages awaiting the role's ACK, read by a token of that role or an admin (any other: 403 forbidden); the first token to ACK a message holds it, and from then on it is in that token's inbox alone, with include=acked, until answered. With wait, a long poll: the answer comes as soon as the page has a message, or empty when the wait is over.",
			params: []obj{
				{"name": "role", "in": "query", "schema": strEnum("", amp.RoleExecutor, amp.RoleReviewer), "description": "Whose inbox; defaults to the token's role when it is executor or reviewer."},
				{"name": "wait", "in": "query", "schema": obj{"type": "string", "examples": []any{"30s", "30"}}, "description": fmt.Sprintf("How long to wait for a message: a Go duration (\"30s\") or whole seconds; at most %s (the server's bound). Absent answers at once.", MaxWait)},
				{"name": "include", "in": "query", "schema": strEnum("", "acked"), "description": "acked: also the messages the caller's token ACKed and has not answered yet (its own work, which leaves everyone else's inbox at the ACK), listed in acked: what an agent that restarts reads to find what it was doing."},
				{"name": "mine", "in": "query", "schema": obj{"type": "boolean"}, "description": "true: only the messages the caller's token ACKed and has not answered. Needs a token."},
				limitParam, cursorParam,
			}, status: 200, answer: ref("InboxResponse"), errs: []int{400, 403}},
		{pattern: "GET /v1/decisions", summary: "Decisions waiting for an admin", params: []obj{limitParam, cursorParam}, status: 200, answer: ref("DecisionsResponse"), errs: []int{400}},
		{pattern: "POST /v1/decisions/{id}", summary: "Decide", description: decideDescription,
			params: []obj{{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string", "maxLength": maxDecisionID}, "description": "The decision's id as GET /v1/decisions lists it (its subject's id, -d and a number)."}},
			body:   ref("DecideRequest"), status: 200, answer: ref("DecideResult"), errs: []int{400, 403, 404, 409, 413, 415},
			errText: map[int]string{
				404: "No open decision has this id, nor a closed one the SSOT knows (code not_found).",
				409: "Refused by the decision's workflow; nothing changed. stale_decision: the id is no longer the open decision of its subject, or the digest is not the decision's (what is being approved changed): read GET /v1/decisions again. decided: the decision was answered already; the message says by whom, on which channel and when. Also unexpected or task_ended, as for every task.",
			}},
	}
}

const decideDescription = "Token role: admin. The token's name is recorded as who decided. " +
	"The answer goes to the decision's subject (the workflow that raised it) and must carry the digest the admin was shown. " +
	"An answer that closes the decision answers its outcome; an approval that a quorum still needs more of answers the open decision and its progress (\"1 of 2 approvals: ops\"). " +
	"Each decision is answered once: any later answer, on any channel, is refused with 409 decided."

const messagesDescription = "Takes the short form {type, task_id, payload} (MessageRequest) with the envelope built by the server, " +
	"a whole AMP/1.0 envelope, or a whole ACK record. The sender (from) must be the token's role. " +
	"A resend of a whole envelope (same msg_id) answers as the first send did; each short form is a new message with a new msg_id."

func messageBody() obj {
	return obj{"oneOf": []any{ref("MessageRequest"), ref("Message"), ampRef("ack", "")}}
}

var statusText = map[int]string{
	400: "Invalid input (code invalid); fields names each field at fault.",
	401: "No valid bearer token (code unauthenticated).",
	403: "The token's role may not do this, or a cross-site Origin (code forbidden).",
	404: "No such task, record or decision (code not_found).",
	409: "Refused by the task's state: conflict (msg_id reused, task id taken), stale_decision and decided (see POST /v1/decisions/{id}), claimed (another agent's token holds this work: the first to ACK the message; the message names it), unexpected (not what the task expects now; the message says what it does) task_ended (the task is done or terminated; the message names which) or input_budget_spent (the task has taken all the messages one task takes).",
	413: "The body is too large (code too_large).",
	415: "A body that is not application/json (code unsupported_media_type).",
	421: "With no tokens configured, a Host that is not loopback (code misdirected_request).",
	423: "The task is suspended and waits for an admin (code suspended).",
	429: "Too much input in a time window (code rate_limited): more writing requests a minute from this token than http.rate allows, or, for messages, more escalations of a task than its bound. Retry-After says when the token may write again.",
	500: "A fault of the server (code internal).",
	503: "Temporal, the worker or the SSOT did not answer (code unavailable); retry.",
}

func errorResponse(st int) obj {
	return obj{"description": statusText[st], "content": obj{"application/json": obj{"schema": ref("Error")}}}
}

// openAPIDocument builds the whole document.
func openAPIDocument() (obj, error) {
	schemas := obj{}
	own, _ := apiSchemas()
	for n, s := range own {
		schemas[n] = s
	}
	for _, name := range amp.SchemaNames() {
		raw, err := amp.Schema(name)
		if err != nil {
			return nil, err
		}
		var s obj
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("reading amp schema %s: %w", name, err)
		}
		// Inside the document the schema is no resource of its own: its
		// local references become document references, which every
		// OpenAPI tool resolves.
		delete(s, "$id")
		delete(s, "$schema")
		schemas["amp_"+name] = rebase(s, "#/components/schemas/amp_"+name).(obj)
	}
	// Each operation's security is the identity its route registered
	// with.
	identities := New(Options{}).Identities()
	paths := obj{}
	for _, o := range ops() {
		method, path, _ := strings.Cut(o.pattern, " ")
		item, _ := paths[path].(obj)
		if item == nil {
			item = obj{}
			paths[path] = item
		}
		resp := obj{}
		ok := obj{"description": http.StatusText(o.status)}
		if o.answer != nil {
			ok["content"] = obj{"application/json": obj{"schema": o.answer}}
		} else {
			ok["content"] = obj{"text/plain": obj{"schema": obj{"type": "string"}}}
		}
		resp[fmt.Sprint(o.status)] = ok
		errs := o.errs
		if !o.noAuth {
			errs = append(errs, 401)
		}
		errs = append(errs, 421, 500, 503)
		if writing(o.pattern) && !slices.Contains(errs, 429) {
			errs = append(errs, 429)
		}
		for _, st := range errs {
			resp[fmt.Sprint(st)] = errorResponse(st)
			if text, ok := o.errText[st]; ok {
				resp[fmt.Sprint(st)].(obj)["description"] = text
			}
			if st == 429 && writing(o.pattern) {
				resp["429"].(obj)["headers"] = rateLimitAnswer()["headers"]
			}
		}
		operation := obj{
			"operationId": operationID(method, path),
			"summary":     o.summary,
			"responses":   resp,
		}
		if o.description != "" {
			operation["description"] = o.description
		}
		sec, registered := identities[o.pattern]
		if !registered {
			return nil, fmt.Errorf("route %s is not registered", o.pattern)
		}
		operation["security"] = sec
		if len(o.params) > 0 {
			operation["parameters"] = o.params
		}
		if o.body != nil {
			operation["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": o.body}}}
		}
		item[strings.ToLower(method)] = operation
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   "ampflow HTTP API",
			"version": "1",
			"description": "The HTTP API of ampflow, the orchestrator of AI coding agents over AMP/1.0. " +
				"Request and answer bodies are JSON (a body must be sent as application/json). " +
				"Every route but /healthz and /v1/openapi.json needs `Authorization: Bearer <token>` when auth.tokens are configured; " +
				"the token's role decides what it may do and its name is who acts. With no tokens the API is open, acts as admin and answers only on loopback. " +
				"An agent's loop: GET /v1/inbox?wait=60s, POST /v1/acks, do the work, POST /v1/messages. " +
				"Not listed here: the Slack and Telegram callbacks mounted on the same server, which check their platforms' signatures and formats themselves.",
		},
		"servers":  []any{obj{"url": "http://127.0.0.1:7480"}},
		"security": Security(IdentityToken, nil),
		"paths":    paths,
		"components": obj{
			"securitySchemes": SecuritySchemes(),
			"schemas":         schemas,
		},
	}, nil
}

// rebase rewrites the local references ("#/$defs/…") in schema v to
// start at base.
func rebase(v any, base string) any {
	switch v := v.(type) {
	case map[string]any:
		out := obj{}
		for k, x := range v {
			if r, ok := x.(string); ok && k == "$ref" && strings.HasPrefix(r, "#/") {
				x = base + r[1:]
			}
			out[k] = rebase(x, base)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = rebase(x, base)
		}
		return out
	}
	return v
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '.' || r == '{' || r == '}' }) {
		if part == "v1" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func marshalDoc(doc obj) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func TestOpenAPIUpToDate(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	want, err := marshalDoc(doc)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("openapi.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("openapi.json is stale; regenerate: go test ./integrations/httpapi/ -run TestOpenAPIUpToDate -update")
	}
}
