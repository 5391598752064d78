package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// ErrorLog keeps refused input: the SSOT's error log.
type ErrorLog interface {
	AppendError(ctx context.Context, e ssot.ErrorEntry) error
}

// ErrorSourceDecide is the error log's source of answers refused for
// their signature.
const ErrorSourceDecide = "decide"

// VerifyAnswer checks an answer's signature with the worker's decision key
// and its time with the worker's clock. The decision engine runs it as a
// local activity before it takes an answer, so the key never enters the
// workflow's history. A refused answer is kept in the error log.
func (a *Activities) VerifyAnswer(ctx context.Context, in decision.VerifyAnswerInput) (decision.VerifyAnswerResult, error) {
	c := AnswerChecker{Key: a.DecisionKey, Refusals: a.Refusals, Log: a.Log}
	if err := c.Check(ctx, in.Subject, in.Answer, time.Now()); err != nil {
		return decision.VerifyAnswerResult{Reason: err.Error()}, nil
	}
	return decision.VerifyAnswerResult{OK: true}, nil
}

// AnswerChecker is VerifyAnswer's check for a caller that is not an
// activity: an update's validator, which runs in the worker and never on
// replay, so the key stays out of the history there too.
type AnswerChecker struct {
	// Key is the decision key. Secret: it never leaves the worker.
	Key []byte
	// Refusals keeps the answers Check refuses; nil keeps none.
	Refusals ErrorLog
	// Log is slog.Default when nil.
	Log *slog.Logger
}

// Check returns nil when a channel holding the key signed a, an answer to
// a decision of subject, within decision.AnswerMaxAge of now. Otherwise
// it logs the refusal, keeps it in the error log (the task's when subject
// is a task id) and returns why, an error of decision.VerifyAnswer.
func (c AnswerChecker) Check(ctx context.Context, subject string, a decision.Answer, now time.Time) error {
	err := decision.VerifyAnswer(c.Key, subject, a, now)
	if err == nil {
		return nil
	}
	reason := fmt.Sprintf("answer %s to %s of %s as %q via %q refused: %v",
		a.Option, a.DecisionID, subject, a.By, a.Channel, err)
	log := c.Log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("refused an unverified answer", "subject", subject, "decision_id", a.DecisionID,
		"by", a.By, "channel", a.Channel, "reason", err)
	if c.Refusals != nil {
		raw, _ := json.Marshal(a)
		e := ssot.ErrorEntry{Source: ErrorSourceDecide, Reason: reason, Raw: string(raw)}
		if task.ValidID(subject) {
			// The task's page lists it among the task's refusals.
			e.TaskID = subject
		}
		// A lost entry must not retry the check: it is logged above.
		if err := c.Refusals.AppendError(ctx, e); err != nil {
			log.Error("keeping a refused answer in the error log", "subject", subject, "err", err)
		}
	}
	return err
}
