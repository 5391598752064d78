// Package runcred is a run's credential: what an agent run presents to
// ampflow's API (its tool hook, its MCP server) in place of an API
// token. It names one task, one role and the run's end, and is signed
// with a key derived from the decision key, which every worker and API
// process holds and no run sees, so any of them can check it and no run
// can make another.
//
// Its form is
//
//	ampr1.<base64url(JSON claims)>.<base64url(HMAC-SHA256)>
//
// The API takes it only on the routes a run needs, for its own task and
// as its own role (integrations/httpapi).
package runcred

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
)

// Prefix starts every run credential, so the API tells one from an API
// token without trying it.
const Prefix = "ampr1."

// keyTag is what the credential key is derived under; another form of
// credential would take another tag.
const keyTag = "ampflow-run-credential/1"

// Claims are what a credential binds.
type Claims struct {
	// Task is the task the run works on.
	Task string `json:"task"`
	// Role is the run's role: executor or reviewer.
	Role amp.Role `json:"role"`
	// Agent is the name the run acts under: its role's token_name, else
	// the role.
	Agent string `json:"agent"`
	// Run tells one run of the task's role from another.
	Run string `json:"run"`
	// Expires is when the credential stops being taken (Unix seconds).
	Expires int64 `json:"exp"`
}

// Key derives the credentials' key from the decision key.
func Key(decisionKey []byte) []byte {
	m := hmac.New(sha256.New, decisionKey)
	m.Write([]byte(keyTag))
	return m.Sum(nil)
}

// Errors Verify returns.
var (
	ErrMalformed = errors.New("not a run credential")
	ErrSignature = errors.New("the run credential's signature does not match")
	ErrExpired   = errors.New("the run credential has expired: its run is over")
)

// Mint makes a credential for c, with a fresh Run when c has none.
func Mint(key []byte, c Claims) (string, Claims, error) {
	switch {
	case len(key) == 0:
		return "", c, errors.New("runcred: no key")
	case c.Task == "":
		return "", c, errors.New("runcred: no task")
	case c.Role != amp.RoleExecutor && c.Role != amp.RoleReviewer:
		return "", c, fmt.Errorf("runcred: role %q: a run is an executor's or a reviewer's", c.Role)
	case c.Expires == 0:
		return "", c, errors.New("runcred: no expiry")
	}
	if c.Agent == "" {
		c.Agent = string(c.Role)
	}
	if c.Run == "" {
		b := make([]byte, 12)
		if _, err := rand.Read(b); err != nil {
			return "", c, fmt.Errorf("runcred: %w", err)
		}
		c.Run = hex.EncodeToString(b)
	}
	body, err := json.Marshal(c)
	if err != nil {
		return "", c, err
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	return Prefix + payload + "." + base64.RawURLEncoding.EncodeToString(sign(key, payload)), c, nil
}

// Is reports whether s has a run credential's form (not whether it is
// valid).
func Is(s string) bool { return strings.HasPrefix(s, Prefix) }

// Verify checks s against key at now and returns its claims.
func Verify(key []byte, s string, now time.Time) (Claims, error) {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok || len(key) == 0 {
		return Claims{}, ErrMalformed
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return Claims{}, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	if !hmac.Equal(got, sign(key, payload)) {
		return Claims{}, ErrSignature
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	var c Claims
	if err := json.Unmarshal(body, &c); err != nil || c.Task == "" || c.Role == "" {
		return Claims{}, ErrMalformed
	}
	if now.Unix() >= c.Expires {
		return c, ErrExpired
	}
	return c, nil
}

func sign(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}
