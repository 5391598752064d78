package workflows

import (
	"errors"
	"slices"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// A refusal crosses the wire as a Temporal failure: encoded by the
// default failure converter in the worker, decoded in the client. The
// client must read the code and fields as the workflow set them.
func TestRefusalCrossesTheWire(t *testing.T) {
	fields := []amp.FieldError{{Path: "payload.description", Problem: "5000 bytes, at most 4096"}}
	sent := refusal.Fields(fields, "payload.description: 5000 bytes, at most 4096")
	fc := temporal.GetDefaultFailureConverter()
	got := fc.FailureToError(fc.ErrorToFailure(sent))

	err := (&Client{}).wrap(got, "submitting")
	var te *task.Error
	if !errors.As(err, &te) {
		t.Fatalf("wrap gave %T %v, want a *task.Error", err, err)
	}
	if te.Code != task.CodeInvalid || !slices.Equal(te.Fields, fields) || te.Message != "payload.description: 5000 bytes, at most 4096" {
		t.Errorf("got %+v, want code invalid with fields %v", te, fields)
	}

	// An application error that is not a refusal is an internal failure.
	other := fc.FailureToError(fc.ErrorToFailure(temporal.NewApplicationError("boom", "SomethingElse")))
	if err := (&Client{}).wrap(other, "submitting"); task.ErrorCode(err) != task.CodeInternal {
		t.Errorf("a failure without details gave code %s, want internal", task.ErrorCode(err))
	}
}
