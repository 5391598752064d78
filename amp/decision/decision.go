// Package decision holds the types of ampflow's decision engine: a
// question a workflow (a task, later a gate or a lease) puts to the
// admins, the answers it takes, and the policy that says how many admins
// must agree and what happens when nobody answers. The engine itself runs
// inside workflows (package workflows/decide); these types are what the
// API, the CLI, the chat bots and the SSOT see.
package decision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
)

// Kind names the question a decision asks (plan_approval, …). Each
// workflow defines its own kinds.
type Kind string

// Option ids the engine itself gives meaning to. Workflows add their own.
const (
	// OptApprove is the approving answer: where a decision needs a quorum,
	// only approvals are counted.
	OptApprove = "approve"
	// OptReject rejects; any admin's reject decides at once.
	OptReject = "reject"
	// OptWithdrawn closes a decision without an admin because what it
	// asked became moot (a late ACK, a new plan).
	OptWithdrawn = "withdrawn"
)

// Channels a decision is taken on besides the admins' own (cli, api,
// slack, telegram, dashboard).
const (
	// ChannelSystem: the workflow withdrew the decision.
	ChannelSystem = "system"
	// ChannelExpiry: nobody answered before the decision expired.
	ChannelExpiry = "expiry"
)

// By is who closes a decision that no admin closed.
const By = "ampflow"

// Option is one answer a decision offers.
type Option struct {
	ID           string `json:"id"`
	Label        string `json:"label"`
	NoteRequired bool   `json:"note_required,omitempty"`
}

// Decision is a question waiting for the admins.
type Decision struct {
	// ID is unique across all workflows: the subject's id, "-d" and a
	// sequence number.
	ID string `json:"id"`
	// Subject is the id of the workflow the decision belongs to; answers
	// are routed to it.
	Subject string   `json:"subject"`
	Kind    Kind     `json:"kind"`
	Prompt  string   `json:"prompt"`
	Options []Option `json:"options"`
	// Context gives the deciding admin what they need at a glance.
	Context Context `json:"context"`
	// Escalation is the escalation message behind the decision, if any.
	Escalation *amp.Message `json:"escalation,omitempty"`
	// Digest is the SHA-256 (hex) of the canonical JSON of exactly what is
	// being approved. An answer must carry the digest its admin was shown.
	Digest   string    `json:"digest"`
	RaisedAt time.Time `json:"raised_at"`
	// ExpiresAt is when OnExpiry applies; zero means never.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// OnExpiry is the option taken when the decision expires; it is
	// never an approval.
	OnExpiry string `json:"on_expiry"`
	// Required is how many distinct admins must approve; Approvals are
	// those given so far.
	Required  int        `json:"required"`
	Approvals []Approval `json:"approvals"`
	// RemindedAt and EscalatedAt are when the reminder went out and when
	// the escalation group was added; zero until then.
	RemindedAt  time.Time `json:"reminded_at,omitzero"`
	EscalatedAt time.Time `json:"escalated_at,omitzero"`
}

// Option returns the option with the given id.
func (d Decision) Option(id string) (Option, bool) {
	for _, o := range d.Options {
		if o.ID == id {
			return o, true
		}
	}
	return Option{}, false
}

// Progress says how far the quorum has come.
func (d Decision) Progress() Progress {
	p := Progress{Given: len(d.Approvals), Required: max(d.Required, 1)}
	for _, a := range d.Approvals {
		p.By = append(p.By, a.By)
	}
	return p
}

// Approval is one admin's approval towards a quorum.
type Approval struct {
	By      string    `json:"by"`
	Channel string    `json:"channel"`
	At      time.Time `json:"at"`
	Note    string    `json:"note,omitempty"`
}

// Progress counts the approvals of a decision.
type Progress struct {
	Given    int      `json:"given"`
	Required int      `json:"required"`
	By       []string `json:"by"`
}

// String reads "1 of 2 approvals: ops".
func (p Progress) String() string {
	s := fmt.Sprintf("%d of %d approvals", p.Given, p.Required)
	if len(p.By) > 0 {
		s += ": " + strings.Join(p.By, ", ")
	}
	return s
}

// Context is what a decision shows about its subject. Task decisions fill
// the task fields; other subjects use what fits and Extra.
type Context struct {
	Description string      `json:"description"`
	Repo        string      `json:"repo"`
	Branch      string      `json:"branch"`
	Risk        amp.Risk    `json:"risk"`
	Subtask     string      `json:"subtask,omitempty"`
	RejectCount int         `json:"reject_count"`
	CIState     string      `json:"ci_state,omitempty"`
	Issues      []amp.Issue `json:"issues"`
	Blockers    []string    `json:"blockers"`
	Confidence  *float64    `json:"confidence,omitempty"`
	Suggested   []string    `json:"suggested_actions"`
	// AgentStderr is the end of a failed command-mode agent's stderr,
	// secrets masked.
	AgentStderr string         `json:"agent_stderr,omitempty"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// Answer is an admin's answer to an open decision.
type Answer struct {
	DecisionID string `json:"decision_id"`
	Option     string `json:"option"`
	Note       string `json:"note,omitempty"`
	// Digest is the digest of the decision the admin was shown.
	Digest string `json:"digest"`
	By     string `json:"by"`
	// Channel is where the admin answered: cli, api, slack, telegram or
	// dashboard.
	Channel string `json:"channel"`
	// At is when the channel took the answer; the signature covers it.
	At time.Time `json:"at,omitzero"`
	// Signature is the channel's HMAC-SHA256 of the answer with the
	// decision key (SignAnswer), hex. The engine takes no answer without
	// a valid one.
	Signature string `json:"signature,omitempty"`
}

// Outcome records how a decision was closed.
type Outcome struct {
	DecisionID string    `json:"decision_id"`
	Subject    string    `json:"subject"`
	Kind       Kind      `json:"kind"`
	Option     string    `json:"option"`
	Note       string    `json:"note,omitempty"`
	By         string    `json:"by"`
	Channel    string    `json:"channel"`
	At         time.Time `json:"at"`
	// Digest is what was approved or refused.
	Digest string `json:"digest,omitempty"`
	// Approvers are every admin whose approval made the quorum.
	Approvers []Approval `json:"approvers"`
}

// Refusal says why a second answer is refused: who decided, on which
// channel, when and what; every approver of a quorum.
func (o Outcome) Refusal() string {
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	if len(o.Approvers) > 1 {
		var by []string
		for _, a := range o.Approvers {
			by = append(by, fmt.Sprintf("%s via %s at %s", a.By, a.Channel, stamp(a.At)))
		}
		return fmt.Sprintf("decision %s already decided by %s (%s)", o.DecisionID, strings.Join(by, ", "), o.Option)
	}
	return fmt.Sprintf("decision %s already decided by %s via %s at %s (%s)", o.DecisionID, o.By, o.Channel, stamp(o.At), o.Option)
}

// Policy governs the decisions of one workflow.
type Policy struct {
	// Quorum is how many distinct admins must approve a decision that
	// asks for a quorum, by risk; zero counts as one.
	Quorum Quorum `json:"quorum"`
	// RemindAfter re-posts an unanswered decision; EscalateAfter adds the
	// escalation group; ExpireAfter applies its OnExpiry. Zero turns
	// each off.
	RemindAfter   time.Duration `json:"remind_after"`
	EscalateAfter time.Duration `json:"escalate_after"`
	ExpireAfter   time.Duration `json:"expire_after"`
	// Persons maps a channel identity ("slack:U123") to the person who
	// holds it ("ana"): a quorum counts persons, so one person approving
	// from two channels counts once. An identity not here is its own
	// person.
	Persons map[string]string `json:"persons,omitempty"`
}

// Person is who holds identity by.
func (p Policy) Person(by string) string {
	if n, ok := p.Persons[by]; ok && n != "" {
		return n
	}
	return by
}

// Quorum is a number of approvals per risk level.
type Quorum struct {
	Low    int `json:"low"`
	Medium int `json:"medium"`
	High   int `json:"high"`
}

// For returns the approvals needed at risk r, at least one.
func (q Quorum) For(r amp.Risk) int {
	n := 1
	switch r {
	case amp.RiskLow:
		n = q.Low
	case amp.RiskMedium:
		n = q.Medium
	case amp.RiskHigh:
		n = q.High
	}
	return max(n, 1)
}

// Digest returns the SHA-256 (hex) of v's canonical JSON: what an admin
// approves, named so that an answer to anything else is refused.
func Digest(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("digest: %w", err)
	}
	c, err := amp.Canonical(b)
	if err != nil {
		return "", fmt.Errorf("digest: %w", err)
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// MaxSubject bounds a subject: a workflow id.
const MaxSubject = 200

// CheckSubject refuses a subject no workflow can have: empty, longer than
// MaxSubject, or with spaces or control characters.
func CheckSubject(s string) error {
	switch {
	case s == "":
		return errors.New("subject is required")
	case len(s) > MaxSubject:
		return fmt.Errorf("subject is %d bytes, at most %d", len(s), MaxSubject)
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("subject %q must not contain spaces or control characters", s)
	}
	return nil
}
