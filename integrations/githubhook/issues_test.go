package githubhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type issueEvents chan string

func (c issueEvents) IssueEvent(_ context.Context, delivery string, _ []byte) error {
	c <- delivery
	return nil
}

// TestIssueDeliveries: an issues delivery signed with the intake's secret
// goes to the intake after the answer; one signed otherwise is refused,
// and a review signed with the intake's secret alone wakes nothing it
// should not (there is no delivery secret here).
func TestIssueDeliveries(t *testing.T) {
	secret := []byte("intake-s3cret")
	body := `{"action":"labeled","issue":{"number":100},"repository":{"full_name":"acme/widget"}}`
	for _, tc := range []struct {
		name, sig string
		status    int
		taken     bool
	}{
		{"Signed", Sign(secret, []byte(body)), http.StatusAccepted, true},
		{"Forged", Sign([]byte("guess"), []byte(body)), http.StatusUnauthorized, false},
		{"Unsigned", "", http.StatusUnauthorized, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(issueEvents, 1)
			h := &Handler{IssueSecret: secret, Issues: got}
			req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
			req.Header.Set("X-GitHub-Event", "issues")
			req.Header.Set("X-GitHub-Delivery", "d-1")
			if tc.sig != "" {
				req.Header.Set("X-Hub-Signature-256", tc.sig)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			select {
			case d := <-got:
				if !tc.taken || d != "d-1" {
					t.Errorf("the intake got delivery %q", d)
				}
			case <-time.After(time.Second):
				if tc.taken {
					t.Error("the intake got nothing")
				}
			}
		})
	}
}
