package activities

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
)

// keptErrors is an ErrorLog that keeps its entries.
type keptErrors []ssot.ErrorEntry

func (k *keptErrors) AppendError(_ context.Context, e ssot.ErrorEntry) error {
	*k = append(*k, e)
	return nil
}

// TestAnswerChecker: a signed answer passes and is kept nowhere; a
// refused one says why and is kept once in the error log, under the task
// only when the subject is a task id.
func TestAnswerChecker(t *testing.T) {
	key := []byte(strings.Repeat("k", decision.MinKeySize))
	now := time.Now()
	sign := func(subject string) decision.Answer {
		a := decision.Answer{DecisionID: "command:submit", Digest: "d", Option: "submit", By: "exec-a", Channel: decision.ChannelCommand, At: now}
		a.Signature = decision.SignAnswer(key, subject, a)
		return a
	}
	for _, tc := range []struct {
		name    string
		key     []byte
		subject string
		answer  decision.Answer
		want    error
		taskID  string
	}{
		{"Signed", key, "T-2026-001", sign("T-2026-001"), nil, ""},
		{"Unsigned", key, "T-2026-001", decision.Answer{DecisionID: "command:submit", By: "ops"}, decision.ErrUnsigned, "T-2026-001"},
		{"OtherSubject", key, "T-2026-002", sign("T-2026-001"), decision.ErrForged, "T-2026-002"},
		{"NotATask", key, "lease:repo/main", sign("T-2026-001"), decision.ErrForged, ""},
		{"NoKey", nil, "T-2026-001", sign("T-2026-001"), decision.ErrNoKey, "T-2026-001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kept keptErrors
			c := AnswerChecker{Key: tc.key, Refusals: &kept, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			err := c.Check(t.Context(), tc.subject, tc.answer, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Check: %v, want %v", err, tc.want)
			}
			if tc.want == nil {
				if len(kept) != 0 {
					t.Errorf("error log %+v, want nothing for a signed answer", kept)
				}
				return
			}
			if len(kept) != 1 || kept[0].Source != ErrorSourceDecide || kept[0].TaskID != tc.taskID ||
				!strings.Contains(kept[0].Reason, tc.subject) || !strings.Contains(kept[0].Raw, tc.answer.DecisionID) {
				t.Errorf("error log %+v, want one %s entry naming %s (task %q)", kept, ErrorSourceDecide, tc.subject, tc.taskID)
			}
		})
	}
}
