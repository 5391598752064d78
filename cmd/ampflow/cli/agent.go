package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

func (a *App) agentCommands() []*cobra.Command {
	cmds := []*cobra.Command{a.inboxCommand(), a.ackCommand(), a.sendCommand(), a.heartbeatCommand()}
	for _, c := range cmds {
		c.GroupID = groupAgent
	}
	return cmds
}

// roleFlag checks an --as (or --from) value against the allowed roles.
func roleFlag(flag, v string, allowed ...amp.Role) (amp.Role, error) {
	names := make([]string, len(allowed))
	for i, r := range allowed {
		names[i] = string(r)
	}
	if v == "" {
		return "", UsageError(fmt.Errorf("%s is required: %s", flag, strings.Join(names, " or ")))
	}
	if !slices.Contains(allowed, amp.Role(v)) {
		return "", UsageError(fmt.Errorf("%s %q: must be %s", flag, v, strings.Join(names, " or ")))
	}
	return amp.Role(v), nil
}

// submitOutput is the JSON output of send and ack.
type submitOutput struct {
	MsgID     string      `json:"msg_id"`
	TaskID    string      `json:"task_id"`
	Duplicate bool        `json:"duplicate"`
	Status    task.Status `json:"status"`
	// Warnings name where a task_result's diff_summary differs from git.
	Warnings []string `json:"warnings,omitempty"`
}

func (a *App) printSubmit(taskID string, res task.SubmitResult, verb string) error {
	if a.JSON() {
		return a.PrintJSON(submitOutput{MsgID: res.MsgID, TaskID: taskID, Duplicate: res.Duplicate, Status: res.Status, Warnings: res.Warnings})
	}
	for _, w := range res.Warnings {
		if _, err := fmt.Fprintf(a.Stdout, "warning: diff_summary does not match git: %s\n", w); err != nil {
			return err
		}
	}
	if res.Duplicate {
		_, err := fmt.Fprintf(a.Stdout, "duplicate: %s was %s before, no further effect; task %s is %s\n", res.MsgID, verb, taskID, res.Status)
		return err
	}
	_, err := fmt.Fprintf(a.Stdout, "%s %s; task %s is %s\n", verb, res.MsgID, taskID, res.Status)
	return err
}

func (a *App) inboxCommand() *cobra.Command {
	var as string
	var wait time.Duration
	var mine bool
	var page pageFlags
	cmd := &cobra.Command{
		Use:   "inbox --as ROLE",
		Short: "List messages waiting for an agent's ACK or reply",
		Long: "Inbox lists the messages addressed to the executor or the reviewer that still\n" +
			"await its ACK or reply, oldest first. -o json prints a JSON array of AMP\n" +
			"envelopes, [] when there are none. --wait D waits until a message arrives or\n" +
			"D has passed (GET /v1/inbox?wait=); with --cursor, until one arrives after it.\n" +
			"The first token to ACK a message holds it: it leaves every other inbox. --mine\n" +
			"lists the messages your token ACKed and has not answered yet (GET\n" +
			"/v1/inbox?mine=true), what an agent restarted after a crash was working on.\n" + pageHelp,
		Example: "  ampflow inbox --as executor\n  ampflow inbox --as executor --mine\n  ampflow inbox --as reviewer --wait 5m -o json | jq '.[0]'",
		Args:    exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, args []string) error {
			role, err := roleFlag("--as", as, amp.RoleExecutor, amp.RoleReviewer)
			if err != nil {
				return err
			}
			if wait < 0 {
				return UsageError(errors.New("--wait must not be negative"))
			}
			if err := page.check(); err != nil {
				return err
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			if _, ok := tasks.(pager); mine && !ok {
				return UsageError(errors.New("--mine needs the HTTP API: its token names whose work it is"))
			}
			// Only the first page waits; the pages after it are there.
			w := wait
			msgs, next, err := readPages(cmd.Context(), page, func(ctx context.Context, q pageQuery) ([]amp.Message, string, error) {
				defer func() { w = 0 }()
				q.Mine = mine
				if p, ok := tasks.(pager); ok {
					return p.InboxPage(ctx, role, w, q)
				}
				msgs, err := a.pollInbox(ctx, tasks, role, w)
				return msgs, "", err
			})
			if err != nil {
				return refused(err)
			}
			if done, err := a.printPage(cmd, args, msgs, len(msgs), next, "no messages for "+string(role)); done {
				return err
			}
			t := newTable(a.Stdout, "MSG_ID", "TYPE", "TASK", "FROM", "SENT")
			for _, m := range msgs {
				t.row(m.MsgID, string(m.Type), m.TaskID, string(m.From), m.Timestamp)
			}
			if err := t.flush(); err != nil {
				return err
			}
			return a.printMore(cmd, args, next)
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the agent's `ROLE`: executor or reviewer")
	cmd.Flags().DurationVar(&wait, "wait", 0, "poll until a message arrives or `D` passes")
	cmd.Flags().BoolVar(&mine, "mine", false, "only the messages your token ACKed and has not answered")
	page.add(cmd, "messages")
	return cmd
}

// inboxWaiter is a way in that long-polls the inbox itself, as the HTTP
// API does (GET /v1/inbox?wait=).
type inboxWaiter interface {
	InboxWait(ctx context.Context, role amp.Role, wait time.Duration) ([]amp.Message, error)
}

func (a *App) pollInbox(ctx context.Context, tasks workflows.Tasks, role amp.Role, wait time.Duration) ([]amp.Message, error) {
	if w, ok := tasks.(inboxWaiter); ok && wait > 0 {
		return w.InboxWait(ctx, role, wait)
	}
	timeout := time.After(wait)
	for {
		msgs, err := tasks.Inbox(ctx, role)
		if err != nil {
			return nil, err
		}
		if msgs == nil {
			msgs = []amp.Message{}
		}
		if len(msgs) > 0 || wait == 0 {
			return msgs, nil
		}
		select {
		case <-ctx.Done():
			return msgs, nil
		case <-timeout:
			return msgs, nil
		case <-time.After(a.pollInterval):
		}
	}
}

func (a *App) ackCommand() *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "ack MSG_ID --as ROLE",
		Short: "Acknowledge a message in an agent's inbox",
		Long: "Ack writes ROLE's ACK record of MSG_ID, a message waiting in its inbox, and\n" +
			"hands it to the task. It prints the ACK's msg_id and the task's status.",
		Example: "  ampflow ack task_dispatch-T-2026-045-1740576727001 --as executor",
		Args:    exactArgs(1, "MSG_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			role, err := roleFlag("--as", as, amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator, amp.RoleAdmin)
			if err != nil {
				return err
			}
			_, taskID, ok := amp.ParseMsgID(args[0])
			if !ok {
				return UsageError(fmt.Errorf("%q is not a msg_id {type}-{task_id}-{unix_ms}", args[0]))
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			res, err := tasks.Ack(cmd.Context(), args[0], role)
			if err != nil {
				return refused(err)
			}
			return a.printSubmit(taskID, res, "acknowledged with")
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the acknowledging `ROLE`: executor, reviewer, coordinator or admin")
	return cmd
}

func (a *App) sendCommand() *cobra.Command {
	var file, typ, taskID, from string
	cmd := &cobra.Command{
		Use:   "send -f FILE",
		Short: "Hand an agent's message or ACK record to its task",
		Long: "Send reads a full AMP/1.0 envelope or ACK record from FILE (- for stdin),\n" +
			"checks it strictly and hands it to its task. With --type (task_result,\n" +
			"review_verdict or escalation) and --task, FILE holds only the payload and send\n" +
			"builds the envelope: msg_id, timestamp and ACK settings now, from and to by the\n" +
			"type's route (an escalation names its sender with --from).\n\n" +
			"Exit 0 when the task accepted it (\"duplicate\" when it had before), 1 when it\n" +
			"is invalid or the task refused it, with the reason on stderr.",
		Example: "  ampflow send -f result.json\n" +
			"  ampflow send --type task_result --task T-2026-045 -f payload.json\n" +
			"  ampflow send --type escalation --from executor --task T-2026-045 -f esc.yaml",
		Args: exactArgs(0, "none; the message comes from -f"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return UsageError(errors.New("send needs -f FILE (or -f - for stdin)"))
			}
			if err := checkSendFlags(typ, taskID, from); err != nil {
				return err
			}
			raw, err := a.readInput(file)
			if err != nil {
				return Exit(ExitUsage, err)
			}
			body, rec, err := a.buildRecord(raw, amp.Type(typ), taskID, amp.Role(from))
			if err != nil {
				return Exit(ExitFailed, err)
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			res, err := tasks.Submit(cmd.Context(), body)
			if err != nil {
				return refused(err)
			}
			id := taskID
			if rec.Ack != nil {
				id = rec.Ack.TaskID
			} else if rec.Message != nil {
				id = rec.Message.TaskID
			}
			return a.printSubmit(id, res, "accepted")
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "read the envelope, ACK record or (with --type) payload from `FILE`, - for stdin")
	f.StringVar(&typ, "type", "", "build the envelope for a payload of `TYPE`: task_result, review_verdict or escalation")
	f.StringVar(&taskID, "task", "", "the task `ID` of a built envelope")
	f.StringVar(&from, "from", "", "the sender `ROLE` of a built escalation")
	return cmd
}

func checkSendFlags(typ, taskID, from string) error {
	if typ == "" {
		if taskID != "" || from != "" {
			return UsageError(errors.New("--task and --from go with --type"))
		}
		return nil
	}
	if !slices.Contains(amp.AgentTypes(), amp.Type(typ)) {
		return UsageError(fmt.Errorf("--type %q: must be task_result, review_verdict or escalation", typ))
	}
	if taskID == "" || !task.ValidID(taskID) {
		return UsageError(fmt.Errorf("--type needs --task with a task id T-YYYY-NNN, not %q", taskID))
	}
	if amp.Type(typ) == amp.TypeEscalation {
		_, err := roleFlag("--from", from, amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator, amp.RoleAdmin)
		return err
	}
	if from != "" {
		return UsageError(fmt.Errorf("--from is only for escalation; %s is sent by its route", typ))
	}
	return nil
}

// buildRecord returns the bytes to submit: raw itself when it is a whole
// record, else an envelope built around the payload.
func (a *App) buildRecord(raw []byte, typ amp.Type, taskID string, from amp.Role) ([]byte, amp.Record, error) {
	js, err := toJSON(raw)
	if err != nil {
		return nil, amp.Record{}, &inputError{what: "message", raw: raw, fields: []amp.FieldError{{Path: amp.RootPath, Problem: err.Error()}}}
	}
	if typ == "" {
		rec, err := amp.ParseRecord(js)
		if err != nil {
			return nil, amp.Record{}, renameAll(err, "message", js)
		}
		return js, rec, nil
	}
	m, err := amp.WrapAgent(js, typ, taskID, from, a.Now())
	if err != nil {
		return nil, amp.Record{}, renamePayload(err, "payload", "payload", js)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, amp.Record{}, fmt.Errorf("encoding %s: %w", m.MsgID, err)
	}
	return b, amp.Record{Message: &m}, nil
}

// renameAll reports an amp error about a whole record as an inputError.
func renameAll(err error, what string, raw []byte) error {
	var ve *amp.ValidationError
	var se *amp.SyntaxError
	switch {
	case errors.As(err, &ve):
		return &inputError{what: what, fields: ve.Fields, raw: raw}
	case errors.As(err, &se):
		return &inputError{what: what, raw: raw, fields: []amp.FieldError{{
			Path: amp.RootPath, Problem: fmt.Sprintf("malformed JSON at byte offset %d: %s", se.Offset, se.Msg)}}}
	}
	return err
}

func (a *App) heartbeatCommand() *cobra.Command {
	var as, note string
	cmd := &cobra.Command{
		Use:   "heartbeat TASK_ID --as ROLE",
		Short: "Tell a task its agent is still working",
		Long: "Heartbeat sends an agent's sign of life to its task, restarting the task's\n" +
			"heartbeat timer, with an optional progress note.",
		Example: "  ampflow heartbeat T-2026-045 --as executor --note \"tests running\"",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			role, err := roleFlag("--as", as, amp.RoleExecutor, amp.RoleReviewer)
			if err != nil {
				return err
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			if err := tasks.Heartbeat(cmd.Context(), args[0], task.HeartbeatInput{From: role, Note: note}); err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(map[string]any{"task_id": args[0], "from": role, "sent": true})
			}
			_, err = fmt.Fprintf(a.Stdout, "heartbeat from %s sent to %s\n", role, args[0])
			return err
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the agent's `ROLE`: executor or reviewer")
	cmd.Flags().StringVar(&note, "note", "", "a progress note")
	return cmd
}
