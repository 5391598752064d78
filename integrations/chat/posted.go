// Package chat is what the Slack and Telegram bots share: their state of
// posted decisions, button tokens and note prompts (in the SSOT shared by
// every worker), posting notices once across retries and workers,
// the admin check and the decide-and-explain flow, and plain-text pieces.
// Each platform package keeps its transport, API calls and renderer.
package chat

import (
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
)

// How long closed decisions and notice keys are kept; a late click on an
// old message then still learns who decided.
const (
	KeepDecided = 30 * 24 * time.Hour
	KeepNotices = 7 * 24 * time.Hour
)

// Ref is a platform's reference to one posted copy of a decision. It
// records whether that copy was edited to its outcome.
type Ref[R any] interface {
	// IsClosed reports whether the copy shows its outcome.
	IsClosed() bool
	// AsClosed returns the reference marked closed.
	AsClosed() R
	// String names the message in errors.
	String() string
}

// Posted is one decision and the copies of it the bot posted.
type Posted[R any] struct {
	Decision decision.Decision `json:"decision"`
	Messages []R               `json:"messages"`
	Outcome  *decision.Outcome `json:"outcome,omitempty"`
	// Again says which copies were posted again (reminders, escalations),
	// by the copy's String, so an edit keeps what they said.
	Again    map[string]Post `json:"again,omitempty"`
	PostedAt time.Time       `json:"posted_at"`
	// ClosedAt is when the outcome reached the bot, by the bot's clock.
	ClosedAt time.Time `json:"closed_at,omitzero"`
}

// Button is what a button token stands for. The token is all the
// platform sees. A click answers the decision as the button showed it:
// to its subject, with its digest, so an answer to a question that has
// changed since is refused.
type Button struct {
	DecisionID string `json:"decision_id"`
	Subject    string `json:"subject,omitempty"`
	Digest     string `json:"digest,omitempty"`
	Option     string `json:"option"`
}

// tokensFor returns a button token per option of d, as d stands: those
// of buttons (d's, by token) that carry its digest, and new ones where
// none does; fresh are the new ones, for the caller to record once they
// are used.
func tokensFor(d decision.Decision, buttons map[string]Button) (out []string, fresh map[string]Button) {
	out = make([]string, len(d.Options))
	for tok, b := range buttons {
		if b.DecisionID != d.ID || b.Digest != d.Digest {
			continue
		}
		for i, o := range d.Options {
			if o.ID == b.Option && (out[i] == "" || tok < out[i]) {
				out[i] = tok
			}
		}
	}
	fresh = map[string]Button{}
	for i, o := range d.Options {
		if out[i] == "" {
			out[i] = NewToken()
			fresh[out[i]] = Button{DecisionID: d.ID, Subject: d.Subject, Digest: d.Digest, Option: o.ID}
		}
	}
	return out, fresh
}

// NewToken returns an opaque, unguessable button value.
func NewToken() string {
	b := make([]byte, 9)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}
