package slack

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	slackapi "github.com/slack-go/slack"
)

// maxBody bounds an interaction request; Slack's are a few kilobytes.
const maxBody = 1 << 20

// Handler returns the handler of Slack's interaction requests in HTTP
// mode; mount it at InteractionsPath. It checks the request signature
// (401 for a forged or stale one, with no effect), acknowledges at once,
// and does the work after.
func (b *Bot) Handler() http.Handler { return http.HandlerFunc(b.serveInteraction) }

func (b *Bot) serveInteraction(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "request too large or unreadable", http.StatusBadRequest)
		return
	}
	if err := verify(r.Header, body, b.cfg.SigningSecret, b.now()); err != nil {
		b.log.Warn("interaction refused", "reason", err.Error(), "remote", r.RemoteAddr)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "malformed form", http.StatusBadRequest)
		return
	}
	var cb slackapi.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "malformed payload", http.StatusBadRequest)
		return
	}
	if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
		b.log.Debug("interaction redelivered", "retry", n, "reason", r.Header.Get("X-Slack-Retry-Reason"))
	}
	ack, work := b.interaction(cb)
	if ack != nil {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ack)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	if work != nil {
		b.goWork(work)
	}
}
