package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/integrations/repomesh"
)

func (a *App) chatCommand() *cobra.Command {
	chat := &cobra.Command{
		Use:   "chat",
		Short: "Message other agents in the mesh: send, inbox, thread, search",
		Long: "The agent mesh keeps agent.chat messages in the SSOT: direct (to a name),\n" +
			"broadcast (to all), threaded (--reply-to) and searchable. @name in a message\n" +
			"puts it in that agent's inbox too. You speak as the token's name.",
		GroupID: groupAgent,
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	chat.AddCommand(a.chatSendCommand(), a.chatInboxCommand(), a.chatThreadCommand(), a.chatSearchCommand())
	return chat
}

func (a *App) chatSendCommand() *cobra.Command {
	var from, subject, parent, taskID, channel, severity string
	send := &cobra.Command{
		Use:   "send TO CONTENT",
		Short: "Send an agent.chat message to an agent, or to all",
		Example: "  ampflow chat send qwen-reviewer 'Can you review src/auth.py?' --subject 'Code review'\n" +
			"  ampflow chat send qwen-assistant 'Sure, @mcp-e2e-agent will run the tests' --reply-to E1a2b",
		Args: exactArgs(2, "TO and CONTENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			// The API takes the sender from the token and refuses
			// another name unless the token is an admin's.
			sender := from
			if sender == "" {
				sender, _ = a.LookupEnv("AMPFLOW_AGENT_NAME")
			}
			subj := subject
			if subj == "" {
				subj, _, _ = strings.Cut(args[1], "\n")
				if len(subj) > 80 {
					subj = subj[:80]
				}
			}
			p := map[string]any{"to": args[0], "subject": subj, "content": args[1], "timestamp": time.Now().UTC().Format(time.RFC3339Nano)}
			setAny(p, "from", sender)
			setAny(p, "from_id", sender)
			setAny(p, "parent_message_id", parent)
			setAny(p, "task_id", taskID)
			payload, _ := json.Marshal(p)
			var e repomesh.Event
			env := repomesh.Envelope{Type: repomesh.TypeChat, Severity: severity, Channel: channel, Payload: payload}
			if err := c.do(cmd.Context(), http.MethodPost, "/v1/events", nil, env, &e); err != nil {
				return err
			}
			if a.JSON() {
				return a.PrintJSON(e)
			}
			_, err = fmt.Fprintln(a.Stdout, e.ID)
			return err
		},
	}
	send.Flags().StringVar(&from, "from", "", "speak as `NAME`: only an admin may name another than the token's (default: $AMPFLOW_AGENT_NAME, else the token's name)")
	send.Flags().StringVar(&subject, "subject", "", "`SUBJECT` (default: the content's first line)")
	send.Flags().StringVar(&parent, "reply-to", "", "the `EVENT_ID` this replies to")
	send.Flags().StringVar(&taskID, "task", "", "the `TASK_ID` it is about")
	send.Flags().StringVar(&channel, "channel", "", "`CHANNEL` (e.g. work)")
	send.Flags().StringVar(&severity, "severity", "info", "info, warning or error")
	return send
}

func (a *App) chatInboxCommand() *cobra.Command {
	var recipient, since, direction, channel, cursor string
	var broadcast bool
	var limit int
	inbox := &cobra.Command{
		Use:     "inbox",
		Short:   "Read your inbox, oldest first: messages to you or mentioning you, and broadcasts with --all",
		Example: "  ampflow chat inbox --all\n  ampflow chat inbox --since 2026-11-23T10:00:00Z --direction asc -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			setIf(q, "recipient_id", recipient)
			if broadcast {
				q.Set("include_broadcast", "true")
			}
			setIf(q, "since", since)
			setIf(q, "direction", direction)
			setIf(q, "channel", channel)
			setIf(q, "cursor", cursor)
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			return a.getEvents(cmd, args, "/v1/events/inbox?"+q.Encode())
		},
	}
	inbox.Flags().StringVar(&recipient, "agent", "", "whose inbox (default: the token's name; others' need admin)")
	inbox.Flags().BoolVar(&broadcast, "all", false, "include broadcasts (to: all)")
	inbox.Flags().StringVar(&since, "since", "", "only messages after `TIME` (RFC 3339)")
	inbox.Flags().StringVar(&direction, "direction", "", "asc or desc (default: asc for your own inbox, desc for another's)")
	inbox.Flags().StringVar(&channel, "channel", "", "only `CHANNEL`")
	inbox.Flags().IntVar(&limit, "limit", 0, "at most `N` (1 to 500; default 50)")
	inbox.Flags().StringVar(&cursor, "cursor", "", "go on from the `CURSOR` a previous page printed (its more: line)")
	return inbox
}

func (a *App) chatThreadCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "thread EVENT_ID",
		Short:   "Show the thread a message is in, root first",
		Example: "  ampflow chat thread E1a2b",
		Args:    exactArgs(1, "EVENT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.getEvents(cmd, args, "/v1/events/"+url.PathEscape(args[0])+"/thread")
		},
	}
}

func (a *App) chatSearchCommand() *cobra.Command {
	var sFrom, sTo, sType, sTask, sSince, sUntil, cursor string
	var limit int
	search := &cobra.Command{
		Use:     "search [KEYWORDS]",
		Short:   "Search messages and events by keywords, sender, recipient, type, task, time",
		Example: "  ampflow chat search 'sql injection' --task T-2026-001\n  ampflow chat search --from qwen-reviewer --type review.finding",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if len(args) == 1 {
				q.Set("q", args[0])
			}
			setIf(q, "from", sFrom)
			setIf(q, "to", sTo)
			setIf(q, "type", sType)
			setIf(q, "task_id", sTask)
			setIf(q, "since", sSince)
			setIf(q, "until", sUntil)
			setIf(q, "cursor", cursor)
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			return a.getEvents(cmd, args, "/v1/events/search?"+q.Encode())
		},
	}
	search.Flags().StringVar(&sFrom, "from", "", "sender")
	search.Flags().StringVar(&sTo, "to", "", "recipient")
	search.Flags().StringVar(&sType, "type", "", "event type")
	search.Flags().StringVar(&sTask, "task", "", "task id")
	search.Flags().StringVar(&sSince, "since", "", "from `TIME` (RFC 3339)")
	search.Flags().StringVar(&sUntil, "until", "", "before `TIME` (RFC 3339)")
	search.Flags().IntVar(&limit, "limit", 0, "at most `N` (1 to 500; default 50)")
	search.Flags().StringVar(&cursor, "cursor", "", "go on from the `CURSOR` a previous page printed (its more: line)")
	return search
}

func setAny(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// getEvents prints a page of events; a more: line on stderr says how to
// read the next page. With -o json, stdout is the API's events as it
// answered them, a JSON array, and the next page's cursor is on stderr.
func (a *App) getEvents(cmd *cobra.Command, args []string, path string) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	var out struct {
		Events     []json.RawMessage `json:"events"`
		NextCursor string            `json:"next_cursor"`
	}
	if err := c.do(cmd.Context(), http.MethodGet, path, nil, nil, &out); err != nil {
		return err
	}
	if a.JSON() {
		return a.printRawPage(cmd, args, out.Events, out.NextCursor)
	}
	t := newTable(a.Stdout, "ID", "TIME", "TYPE", "FROM", "TO", "SUBJECT", "THREAD")
	for _, raw := range out.Events {
		var e repomesh.Event
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("reading an event of %s: %w", path, err)
		}
		var p struct{ From, To, Subject string }
		_ = json.Unmarshal(e.Payload, &p)
		t.row(e.ID, e.CreatedAt.Format(time.RFC3339), e.Type, p.From, p.To, p.Subject, e.ThreadID)
	}
	if err := t.flush(); err != nil {
		return err
	}
	return a.printMore(cmd, args, out.NextCursor)
}

// printRawPage prints a listing's items as the API answered them, one
// JSON array ([] when empty), and the next page's cursor on stderr.
func (a *App) printRawPage(cmd *cobra.Command, args []string, items []json.RawMessage, next string) error {
	if items == nil {
		items = []json.RawMessage{}
	}
	if err := a.PrintJSON(items); err != nil {
		return err
	}
	return a.printMore(cmd, args, next)
}
