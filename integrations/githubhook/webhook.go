// Package githubhook takes GitHub's webhook deliveries for the tasks' pull
// requests. A delivery only wakes the task the pull request belongs to;
// the task then reads the reviews from GitHub itself, so nothing in a
// delivery is trusted beyond "look now".
package githubhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Path is where the webhook is served.
const Path = "/v1/github/webhook"

// maxBody bounds a delivery; GitHub caps payloads at 25 MB, review
// events are far smaller.
const maxBody = 5 << 20

// Waker wakes a task waiting for its pull request's reviews.
type Waker interface {
	WakeForGitHubReview(ctx context.Context, taskID, delivery string) error
}

// IssueEvents takes the "issues" deliveries (the issues intake).
type IssueEvents interface {
	IssueEvent(ctx context.Context, delivery string, body []byte) error
}

// Handler serves GitHub's signed deliveries (X-Hub-Signature-256): review
// events wake the tasks (Tasks, signed with Secret), issue events go to
// the intake (Issues, signed with IssueSecret, or Secret when unset). A
// nil receiver takes none of its events.
type Handler struct {
	Secret []byte
	Tasks  Waker
	// Issues and IssueSecret take the issues intake's deliveries.
	Issues      IssueEvents
	IssueSecret []byte
	Logger      *slog.Logger
}

// issueTimeout bounds the intake's work on one delivery, done after the
// answer.
const issueTimeout = time.Minute

// markerRE finds the task a pull request's body names (as
// activities.TaskMarker writes it).
var markerRE = regexp.MustCompile(`<!-- ampflow-task: (T-[0-9]{4}-[0-9]{3,}) -->`)

// ServeHTTP checks the signature, then wakes the task of a review event.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	sig := r.Header.Get("X-Hub-Signature-256")
	if !Verify(h.Secret, body, sig) && !Verify(h.IssueSecret, body, sig) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	switch r.Header.Get("X-GitHub-Event") {
	case "pull_request_review", "pull_request_review_comment", "pull_request_review_thread":
		if h.Tasks == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	case "issues":
		h.issue(w, r, body)
		return
	default: // ping and the rest: nothing to do
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var ev struct {
		PullRequest struct {
			Body string `json:"body"`
		} `json:"pull_request"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	m := markerRE.FindStringSubmatch(ev.PullRequest.Body)
	if m == nil {
		w.WriteHeader(http.StatusNoContent) // not a task's pull request
		return
	}
	delivery := r.Header.Get("X-GitHub-Delivery")
	if err := h.Tasks.WakeForGitHubReview(r.Context(), m[1], delivery); err != nil {
		// The poll reads the reviews anyway: a task that ended or is not
		// waiting loses nothing.
		h.log().Info("github webhook: waking the task", "task_id", m[1], "delivery", delivery, "error", err)
	}
	w.WriteHeader(http.StatusAccepted)
}

// issue answers an issues delivery, then hands it to the intake: GitHub
// waits at most 10 seconds for an answer.
func (h *Handler) issue(w http.ResponseWriter, r *http.Request, body []byte) {
	if h.Issues == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	delivery := r.Header.Get("X-GitHub-Delivery")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), issueTimeout)
	w.WriteHeader(http.StatusAccepted)
	go func() {
		defer cancel()
		if err := h.Issues.IssueEvent(ctx, delivery, body); err != nil {
			// The poll reads the issues anyway.
			h.log().Warn("github webhook: an issue delivery", "delivery", delivery, "error", err)
		}
	}()
}

// Verify checks GitHub's X-Hub-Signature-256: "sha256=" and the hex
// HMAC-SHA256 of the body under secret. An empty secret verifies nothing.
func Verify(secret, body []byte, header string) bool {
	sig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(secret) == 0 {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Sign is the X-Hub-Signature-256 of body under secret, as GitHub sends it.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func (h *Handler) log() *slog.Logger {
	if h.Logger == nil {
		return slog.Default()
	}
	return h.Logger
}
