// Package httpapitest serves the HTTP API to the tests of the rooms that
// add routes to it: a fresh store, the API on a loopback port for the
// test's life, and one way to send it a request.
package httpapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Store opens a fresh SQLite store in the test's temporary directory,
// closed when the test ends. Path is its file, for a test that changes
// rows behind the store's back.
func Store(t testing.TB) (db *ssot.DB, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ampflow.db")
	db, err := ssot.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// Serve serves api on a loopback port until the test ends and returns
// its base URL. Register the rooms' routes on api first: the API takes
// none while it serves.
func Serve(t testing.TB, api *httpapi.Server) string {
	t.Helper()
	ts := httptest.NewServer(api.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// Response is an answer of the API, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a request to url and reads the answer; a request that cannot
// be sent fails the test. A token, when not empty, goes as a bearer
// token. A nil body or an empty string sends none; a string or []byte
// is sent as it is, anything else as its JSON; a body is sent as
// application/json.
func Do(t testing.TB, method, url, token string, body any) Response {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatalf("encoding the body of %s %s: %v", method, url, err)
		}
	}
	var rd io.Reader
	if body != nil && body != "" {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer to %s %s: %v", method, url, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}
