package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/workflows/decision"
	"github.com/ampflow/ampflow/workflows/task"
)

// ErrorLog keeps refused input: the SSOT's error log.
type ErrorLog interface {
	AppendError(ctx context.Context, e ssot.ErrorEntry) error
}

// ErrorSourceDecide is the error log's source of answers refused for
// their signature.
const ErrorSourceDecide = "decide"

// VerifyAnswerInput is an answer to a decision of Subject, as the engine
// received it. The key is not in it: only the worker holds it.
type VerifyAnswerInput struct {
	Subject string          `json:"subject"`
	Answer  decision.Answer `json:"answer"`
}

// VerifyAnswerResult says whether the answer was signed with the
// decision key, and if not, why.
type VerifyAnswerResult struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

// VerifyAnswer checks an answer's signature with the worker's decision key
// and its time with the worker's clock. The decision engine runs it as a
// local activity before it takes an answer, so the key never enters the
// workflow's history. A refused answer is kept in the error log.
func (a *Activities) VerifyAnswer(ctx context.Context, in VerifyAnswerInput) (VerifyAnswerResult, error) {
	err := decision.VerifyAnswer(a.DecisionKey, in.Subject, in.Answer, time.Now())
	if err == nil {
		return VerifyAnswerResult{OK: true}, nil
	}
	reason := fmt.Sprintf("answer %s to %s of %s as %q via %q refused: %v",
		in.Answer.Option, in.Answer.DecisionID, in.Subject, in.Answer.By, in.Answer.Channel, err)
	log := a.Log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("refused an unverified answer", "subject", in.Subject, "decision_id", in.Answer.DecisionID,
		"by", in.Answer.By, "channel", in.Answer.Channel, "reason", err)
	if a.Refusals != nil {
		raw, _ := json.Marshal(in.Answer)
		e := ssot.ErrorEntry{Source: ErrorSourceDecide, Reason: reason, Raw: string(raw)}
		if task.ValidID(in.Subject) {
			// The task's page lists it among the task's refusals.
			e.TaskID = in.Subject
		}
		// A lost entry must not retry the check: it is logged above.
		if err := a.Refusals.AppendError(ctx, e); err != nil {
			log.Error("keeping a refused answer in the error log", "subject", in.Subject, "err", err)
		}
	}
	return VerifyAnswerResult{Reason: err.Error()}, nil
}
