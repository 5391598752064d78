package transcripts

import (
	"fmt"

	"github.com/ampflow/ampflow/activities/ssot"
)

type obj = map[string]any

func str(desc string) obj { return obj{"type": "string", "description": desc} }
func integer(desc string) obj {
	return obj{"type": "integer", "description": desc}
}
func param(name, desc string, schema obj) obj {
	return obj{"name": name, "in": "query", "required": false, "schema": schema, "description": desc}
}
func errBody(desc string) obj {
	return obj{"description": desc, "content": obj{"application/json": obj{"schema": obj{"$ref": "#/components/schemas/Error"}}}}
}

// Description is the route's documentation, shared with docs/runners.md.
const Description = "The entries of the task's agent runs, oldest first: the agent's text, each tool call with its input, each tool result with the tail of its output and its exit code where the CLI reports one, errors, retries and rate-limit waits, each run's start and end, and ampflow's notes, each with the run's cost and tokens so far. " +
	"Secrets are masked (***). A run keeps at most 2 MiB of text; past that one note says the rest was elided. " +
	"With follow=1 the answer is a text/event-stream: each entry as an event \"entry\" (id: its seq; data: the entry as JSON), a comment every 15 s while nothing happens, and an event \"end\" once the task is done or terminated and every entry was sent; a stream lasts at most 30 minutes, and a client reconnects with Last-Event-ID (or after) to go on. " +
	"Any token reads it; an agent run's credential reads its own task's."

func operation() obj {
	return obj{
		"operationId": "getTaskTranscript",
		"tags":        []any{"Tasks"},
		"summary":     "The transcript of a task's agent runs",
		"description": Description,
		"parameters": []any{
			obj{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "The task id, T-YYYY-NNN."},
			param("after", "Only entries after this seq (a page's next_after); absent: from the first.", obj{"type": "integer", "minimum": 0}),
			param("limit", fmt.Sprintf("At most this many entries; from 1 to %d, %d when absent.", ssot.MaxLimit, ssot.DefaultLimit),
				obj{"type": "integer", "minimum": 1, "maximum": ssot.MaxLimit}),
			param("role", "Only the runs of this role.", obj{"type": "string", "enum": []any{"executor", "reviewer"}}),
			param("run", "Only this run of the role (1, 2, …).", obj{"type": "integer", "minimum": 1}),
			param("follow", "1: stream the entries as server-sent events as they are written.", obj{"type": "string", "enum": []any{"0", "1"}}),
		},
		"responses": obj{
			"200": obj{"description": "A page of the transcript; with follow=1 a stream of its entries.", "content": obj{
				"application/json":  obj{"schema": obj{"$ref": "#/components/schemas/TranscriptPage"}},
				"text/event-stream": obj{"schema": obj{"type": "string", "description": "Server-sent events: \"entry\" with a TranscriptEntry as data, then \"end\"."}},
			}},
			"400": errBody("A parameter out of range (code invalid); fields names it."),
			"404": errBody("No such task (code not_found)."),
			"503": errBody("The SSOT is not available (code unavailable)."),
		},
	}
}

func schemas() obj {
	return obj{
		"TranscriptEntry": obj{
			"type":        "object",
			"description": "One entry of a run's transcript.",
			"required":    []any{"task_id", "seq", "role", "run", "at", "kind", "cost_usd", "input_tokens", "output_tokens"},
			"properties": obj{
				"task_id": str("The task."),
				"seq":     integer("The entry's place in the task's transcript, from 1."),
				"role":    str("executor or reviewer."),
				"run":     integer("The role's run of the task, from 1; 0 is a note outside any run."),
				"at":      obj{"type": "string", "format": "date-time", "description": "When the worker took the event."},
				"kind": obj{"type": "string", "enum": []any{ssot.TranscriptStart, ssot.TranscriptText, ssot.TranscriptToolCall, ssot.TranscriptToolResult,
					ssot.TranscriptError, ssot.TranscriptRetry, ssot.TranscriptUsage, ssot.TranscriptPlan, ssot.TranscriptResult, ssot.TranscriptEnd, ssot.TranscriptNote},
					"description": "start and end of a run; the agent's text, tool_call (input as text), tool_result (the last 4 KiB of the output), error, retry (a retried request, a rate-limit wait), usage, plan, result; note: ampflow's own (the transcript elided, a message delivered)."},
				"tool":          str("The tool, as the CLI names it."),
				"text":          str("The text, the tool's input or the tail of its output; secrets masked as ***."),
				"is_error":      obj{"type": "boolean", "description": "A tool that failed, a run that did not succeed."},
				"exit_code":     integer("A command's exit status, when the CLI reports it (Claude Code's Bash, Codex, OpenCode); on a failed run's end, the CLI's own."),
				"cost_usd":      obj{"type": "number", "description": "The run's cost so far, in dollars."},
				"input_tokens":  integer("The run's input tokens so far."),
				"output_tokens": integer("The run's output tokens so far."),
			},
		},
		"TranscriptPage": obj{
			"type":        "object",
			"description": "A page of a task's transcript.",
			"required":    []any{"task_id", "entries", "next_after"},
			"properties": obj{
				"task_id":    str("The task."),
				"entries":    obj{"type": "array", "items": obj{"$ref": "#/components/schemas/TranscriptEntry"}, "description": "Oldest first."},
				"next_after": integer("The after of the next page: the last entry's seq, or the request's after when the page is empty."),
			},
		},
	}
}
