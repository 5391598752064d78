package workers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/transcripts"
)

// addTranscripts serves the transcripts of runner runs:
// GET /v1/tasks/{id}/transcript.
func addTranscripts(api *httpapi.Server, parts *Parts) {
	o := transcripts.Options{}
	if parts.Store != nil {
		o.Store = parts.Store
	}
	transcripts.Register(api, o)
}

// noteMessages puts each message a person sent a task's agent (task say)
// and each interrupt in the transcript of the run that took it, with
// when it was sent and when the agent got it.
func noteMessages(store *ssot.DB, log *slog.Logger) {
	store.OnTaskMessage(func(ctx context.Context, m ssot.TaskMessage) {
		if !m.Delivered() {
			return
		}
		_, role, _ := strings.Cut(m.Run, "/")
		if role == "" {
			role = string(amp.RoleExecutor)
		}
		var text string
		switch m.Kind {
		case ssot.TaskMessageInterrupt:
			text = fmt.Sprintf("interrupted by %s at %s", m.Sender, m.DeliveredAt.UTC().Format(time.TimeOnly))
		default:
			text = fmt.Sprintf("message from %s (sent %s, the agent got it %s): %s", m.Sender,
				m.CreatedAt.UTC().Format(time.TimeOnly), m.DeliveredAt.UTC().Format(time.TimeOnly), m.Text)
		}
		// The hook runs in the writer's goroutine, which must not wait.
		go func() {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, err := store.NoteTranscript(wctx, m.TaskID, role, text); err != nil {
				log.Warn("noting a task message in the transcript", "task_id", m.TaskID, "error", err)
			}
		}()
	})
}
