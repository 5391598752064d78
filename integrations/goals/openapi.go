package goals

import (
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
)

// The goal routes' OpenAPI operations and schemas.

var decisionKinds = []decision.Kind{goal.DecisionGoalPlan, goal.DecisionBlocked}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonBody(schema map[string]any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func errResp(desc string) map[string]any {
	return map[string]any{"description": desc, "content": jsonBody(ref("Error"))}
}

func responses(okStatus, okSchema string, errs map[string]string) map[string]any {
	resp := map[string]any{okStatus: map[string]any{"description": "OK", "content": jsonBody(ref(okSchema))}}
	errs["401"] = "No valid bearer token (code unauthenticated)."
	errs["403"] = "The token's role may not do this (code forbidden): coordinators and admins start and read goals."
	errs["503"] = "Temporal or the worker did not answer (code unavailable); retry."
	for st, d := range errs {
		resp[st] = errResp(d)
	}
	return resp
}

var opStart = map[string]any{
	"operationId": "startGoal",
	"summary":     "Start a goal: a graph of tasks",
	"description": "Takes a goal file as JSON (ampflow goal start turns YAML into it). Each task's plan is checked as task start checks one (its repo defaults to the goal's, its branch to goal/<goal_id>/<key>), and the graph is checked: unique keys, every blocked_by naming a task, no cycle (named: \"tasks a → b → a form a cycle\"), at most 50 tasks and 20 blockers a task. " +
		"The goal's workflow then asks the admins to approve the whole graph as one goal_plan decision bound by digest (when the plan approval of its highest risk level asks an admin), and starts each task once the tasks it is blocked by are merged, on a branch made from the target's head at that time. " +
		"A task whose review and final approval pass enters the target's merge queue: one task at a time per repository and target, its branch is rebased onto the target's head, its CI runs on the rebase, and the target is moved to it.",
	"tags":        []string{"Goals"},
	"requestBody": map[string]any{"required": true, "content": jsonBody(ref("GoalFile"))},
	"responses": responses("201", "GoalStartResponse", map[string]string{
		"400": "Invalid goal (code invalid); fields names each field at fault, as tasks[2].blocked_by[0].",
	}),
}

var opGet = map[string]any{
	"operationId": "getGoal",
	"summary":     "Read a goal: its graph, each task's state and cost, what waits on whom",
	"description": "The goal's status (awaiting_approval, running, blocked, done, rejected, failed, terminated), its target, each task's status in the goal (waiting, starting, running, done, terminated, held), the blockers it still waits on, its task id, branch and base once started, its task's own status and cost, and the files its branch changes that another running task's branch changes too. " +
		"Each task's place in the target's merge queue (queued, merging, round, merged), the commit its merge made, and the queue's order. " +
		"A task that ends terminated holds the tasks that wait on it, and the goal is blocked on a goal_blocked decision: retry the task as a new task, or abandon the goal.",
	"tags": []string{"Goals"},
	"parameters": []any{map[string]any{"in": "path", "name": "id", "required": true, "description": "The goal id, G- and eight hex digits.",
		"schema": map[string]any{"type": "string"}}},
	"responses": responses("200", "GoalView", map[string]string{
		"400": "The id is not a goal id (code invalid).",
		"404": "No such goal (code not_found).",
	}),
}

func obj(required []string, props map[string]any) map[string]any {
	return map[string]any{"type": "object", "required": required, "properties": props}
}

func typed(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

func stringList(desc string) map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
}

func enum(desc string, vals ...string) map[string]any {
	return map[string]any{"type": "string", "enum": vals, "description": desc}
}

func timeOf(desc string) map[string]any {
	return map[string]any{"type": "string", "format": "date-time", "description": desc}
}

var schemas = map[string]any{
	"GoalFile": obj([]string{"description", "repo"}, map[string]any{
		"description": typed("string", "What the goal is for, at most 4000 bytes."),
		"repo":        typed("string", "The repository every task works in unless its plan names another."),
		"target":      typed("string", "The branch the tasks start from and go to; the repository's default branch when absent."),
		"tasks": map[string]any{"type": "array", "items": ref("GoalFileTask"), "maxItems": goal.MaxTasks,
			"description": "The graph. Left out (or empty), the goal's planner proposes it from the description (goals.planner); without a planner it is required."},
	}),
	"GoalFileTask": obj([]string{"key", "plan"}, map[string]any{
		"key":        typed("string", "The task's name in the goal: lower-case letters, digits, - and _, at most 40 bytes."),
		"plan":       map[string]any{"allOf": []any{ref("amp_task_dispatch/$defs/payload")}, "description": "The task's plan, a task_dispatch payload as task start takes it; repo (the goal's) and branch (goal/<goal_id>/<key>) may be left out."},
		"blocked_by": stringList("Keys of the tasks that must be done before this one starts."),
	}),
	"Goal": obj([]string{"id", "description", "repo", "tasks"}, map[string]any{
		"id":          typed("string", "The goal's id."),
		"description": typed("string", "What the goal is for."),
		"repo":        typed("string", "The goal's repository."),
		"target":      typed("string", "The target as the file named it; empty for the default branch."),
		"tasks":       map[string]any{"type": "array", "items": ref("GoalTask")},
	}),
	"GoalTask": obj([]string{"key", "plan"}, map[string]any{
		"key":        typed("string", "The task's key."),
		"plan":       ref("amp_task_dispatch/$defs/payload"),
		"blocked_by": stringList("Keys of the tasks that must be done before this one starts."),
	}),
	"GoalStartResponse": obj([]string{"goal_id", "status"}, map[string]any{
		"goal_id": typed("string", "The goal's id, G- and eight hex digits."),
		"status": enum("awaiting_approval: the workflow checks its target and asks for the approval its policy wants; planning: the planner proposes the graph.",
			string(goal.StatusAwaitingApproval), string(goal.StatusPlanning)),
	}),
	"GoalView": obj([]string{"goal", "status", "target", "tasks", "started_at", "cost_usd"}, map[string]any{
		"goal": ref("Goal"),
		"status": enum("Where the goal stands.", string(goal.StatusPlanning), string(goal.StatusAwaitingApproval), string(goal.StatusRunning), string(goal.StatusBlocked),
			string(goal.StatusDone), string(goal.StatusRejected), string(goal.StatusFailed), string(goal.StatusTerminated)),
		"target":     typed("string", "The target branch, resolved at the start."),
		"digest":     typed("string", "The digest of the graph and target the goal_plan decision approves."),
		"pending":    ref("Decision"),
		"approval":   ref("Outcome"),
		"tasks":      map[string]any{"type": "array", "items": ref("GoalTaskView")},
		"queue":      stringList("The keys of its tasks in the target's merge queue, in order: the one merging, then the queued by when they entered. Tasks of other goals on the same target queue with them."),
		"reason":     typed("string", "Why the goal is blocked, or how it ended."),
		"started_at": timeOf("When the goal started."),
		"ended_at":   timeOf("When it ended; absent while it runs."),
		"cost_usd":   typed("number", "The sum of its tasks' costs, in dollars."),
		"planned":    typed("boolean", "The planner proposed the graph."),
		"proposals":  map[string]any{"type": "array", "items": ref("GoalProposal"), "description": "The graphs the planner proposed, in order."},
	}),
	"GoalProposal": obj([]string{"round", "try", "at"}, map[string]any{
		"round":    typed("integer", "The graph put to the admins it belongs to: 1, then one more after each rejection."),
		"try":      typed("integer", "The planner's answer in its round: a refused graph goes back to it with its problem."),
		"at":       timeOf("When the planner answered."),
		"keys":     stringList("The tasks of a graph that passed the checks."),
		"problem":  typed("string", "Why the graph was refused: its check's problems, a cycle named (tasks a → b → a form a cycle)."),
		"rejected": typed("string", "The admins' rejection, with their note, which went back to the planner."),
	}),
	"GoalTaskView": obj([]string{"key", "status", "repo", "branch", "cost_usd"}, map[string]any{
		"key": typed("string", "The task's key."),
		"status": enum("The task in the goal: held waits on a terminated task.", string(goal.TaskWaiting), string(goal.TaskStarting), string(goal.TaskRunning),
			string(goal.TaskDone), string(goal.TaskTerminated), string(goal.TaskHeld)),
		"blocked_by": stringList("The keys it is blocked by."),
		"waiting_on": stringList("Those not yet done."),
		"task_id":    typed("string", "Its task, once started."),
		"repo":       typed("string", "Its repository."),
		"branch":     typed("string", "Its branch."),
		"base":       typed("string", "The target's head its branch was made from."),
		"started_at": timeOf("When its task started."),
		"ended_at":   timeOf("When its task ended."),
		"reason":     typed("string", "Why it ended terminated, or is held."),
		"overlaps":   map[string]any{"type": "array", "items": ref("GoalOverlap"), "description": "Running tasks whose branches change the same files."},
		"queue": enum("Where it stands in the target's merge queue: queued for the target's lease, merging (rebase, CI, the move of the target), "+
			"round (a conflict or failing CI sent it back to its executor), merged. Absent before it enters the queue.",
			string(task.QueueQueued), string(task.QueueMerging), string(task.QueueRound), string(task.QueueMerged)),
		"queued_at":    timeOf("When it last entered the merge queue."),
		"queue_rounds": typed("integer", "The rounds the merge queue sent it back to its executor."),
		"merged":       typed("string", "The target's head its merge made."),
		"queue_seq":    typed("integer", "The number of the last move in the queue its task told the goal; moves arriving late are dropped."),
		"task_status":  typed("string", "Its task's own status (in_review, say)."),
		"cost_usd":     typed("number", "What its task has cost, in dollars."),
	}),
	"GoalOverlap": obj([]string{"with", "files"}, map[string]any{
		"with":  typed("string", "The other task's key."),
		"files": stringList("The files both branches change."),
	}),
}
