package activities

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/ssot"
)

// appErr asserts err is a Temporal application error of the given type.
func appErr(t testing.TB, err error, typ string, nonRetryable bool) *temporal.ApplicationError {
	t.Helper()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an application error of type %s", err, err, typ)
	}
	if ae.Type() != typ {
		t.Fatalf("error type = %q, want %q (%v)", ae.Type(), typ, err)
	}
	if ae.NonRetryable() != nonRetryable {
		t.Fatalf("error %v: non-retryable = %v, want %v", err, ae.NonRetryable(), nonRetryable)
	}
	return ae
}

// newSSOT opens a fresh SQL SSOT on SQLite in a temporary directory.
func newSSOT(t testing.TB) *TaskRecord {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &TaskRecord{Store: db}
}

func entry(id string, kind ssot.RecordKind, body string) RecordEntry {
	return RecordEntry{ID: id, Kind: kind, Body: json.RawMessage(body)}
}
