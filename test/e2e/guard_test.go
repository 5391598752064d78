package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/httpapi"
)

// TestAPIRefusesBrowsers drives a real `ampflow dev` (open mode: no
// tokens) as a web page would: a cross-site text/plain POST, which needs
// no CORS preflight, and a request from a foreign Origin are refused, and
// no task comes of them. A same-origin JSON request still starts one.
func TestAPIRefusesBrowsers(t *testing.T) {
	p := startDev(t, t.TempDir())
	base := "http://" + p.api
	plan, err := json.Marshal(lowRiskPlan(gitRepo(t)))
	if err != nil {
		t.Fatal(err)
	}
	body := func(id string) []byte {
		b, err := json.Marshal(httpapi.StartRequest{TaskID: id, Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	send := func(method, path string, b []byte, header map[string]string) (int, string) {
		t.Helper()
		var rd io.Reader
		if b != nil {
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}

	const (
		plainID   = "T-2026-901"
		foreignID = "T-2026-902"
		rebindID  = "T-2026-903"
		goodID    = "T-2026-904"
	)
	if code, resp := send("POST", "/v1/tasks", body(plainID), map[string]string{
		"Content-Type": "text/plain", "Origin": "http://evil.example",
	}); code != http.StatusUnsupportedMediaType && code != http.StatusForbidden {
		t.Errorf("cross-site text/plain POST answered %d %s, want 415 or 403", code, resp)
	}
	if code, resp := send("POST", "/v1/tasks", body(plainID), map[string]string{"Content-Type": "text/plain"}); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain POST answered %d %s, want 415", code, resp)
	}
	if code, resp := send("POST", "/v1/tasks", body(foreignID), map[string]string{
		"Content-Type": "application/json", "Origin": "http://evil.example",
	}); code != http.StatusForbidden {
		t.Errorf("foreign-Origin POST answered %d %s, want 403", code, resp)
	}
	if code, resp := send("GET", "/v1/tasks", nil, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("foreign-Origin GET answered %d %s, want 403", code, resp)
	}
	if code, resp := send("POST", "/v1/tasks", body(rebindID), map[string]string{
		"Content-Type": "application/json", "Host": "evil.example:" + portOf(p.api),
	}); code != http.StatusMisdirectedRequest {
		t.Errorf("POST with Host evil.example answered %d %s, want 421", code, resp)
	}
	for _, id := range []string{plainID, foreignID, rebindID} {
		if code, resp := send("GET", "/v1/tasks/"+id, nil, nil); code != http.StatusNotFound {
			t.Errorf("task %s after a refused start: %d %s, want 404", id, code, resp)
		}
	}

	if code, resp := send("POST", "/v1/tasks", body(goodID), map[string]string{
		"Content-Type": "application/json", "Origin": base,
	}); code != http.StatusCreated {
		t.Fatalf("same-origin JSON POST answered %d %s, want 201", code, resp)
	}
	// The listing reads Temporal's visibility, which trails a start: wait
	// for the started task to show, then check it is the only one.
	var list httpapi.ListResponse
	for deadline := time.Now().Add(20 * time.Second); ; {
		code, resp := send("GET", "/v1/tasks", nil, nil)
		if err := json.Unmarshal([]byte(resp), &list); code != http.StatusOK || err != nil {
			t.Fatalf("listing tasks: %d %s %v", code, resp, err)
		}
		if len(list.Tasks) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != goodID {
		t.Errorf("tasks %+v, want only %s", list.Tasks, goodID)
	}
}

func portOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[i+1:]
		}
	}
	return ""
}
