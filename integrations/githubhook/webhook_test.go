package githubhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type wakes []string

func (w *wakes) WakeForGitHubReview(_ context.Context, taskID, _ string) error {
	*w = append(*w, taskID)
	return nil
}

func TestWebhook(t *testing.T) {
	secret := []byte("s3cret")
	review := `{"action":"submitted","review":{"state":"changes_requested"},"pull_request":{"number":7,"body":"Plan\n<!-- ampflow-task: T-2026-042 -->\n"}}`
	tests := []struct {
		name, event, body, sig string
		status                 int
		woken                  string
	}{
		{"Review", "pull_request_review", review, Sign(secret, []byte(review)), http.StatusAccepted, "T-2026-042"},
		{"BadSignature", "pull_request_review", review, Sign([]byte("other"), []byte(review)), http.StatusUnauthorized, ""},
		{"NoSignature", "pull_request_review", review, "", http.StatusUnauthorized, ""},
		{"Ping", "ping", `{"zen":"x"}`, Sign(secret, []byte(`{"zen":"x"}`)), http.StatusNoContent, ""},
		{"OtherPullRequest", "pull_request_review", `{"pull_request":{"body":"hi"}}`, Sign(secret, []byte(`{"pull_request":{"body":"hi"}}`)), http.StatusNoContent, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w wakes
			h := &Handler{Secret: secret, Tasks: &w}
			req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(tc.body))
			req.Header.Set("X-GitHub-Event", tc.event)
			if tc.sig != "" {
				req.Header.Set("X-Hub-Signature-256", tc.sig)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status || strings.Join(w, ",") != tc.woken {
				t.Errorf("status %d woke %v; want %d %q", rec.Code, w, tc.status, tc.woken)
			}
		})
	}
	if Verify(nil, []byte("x"), Sign(nil, []byte("x"))) {
		t.Error("an empty secret verified a signature")
	}
}
