package decision

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MinKeySize is the shortest decision key, in bytes.
const MinKeySize = 32

// Bounds of an answer's At as the engine checks it: an answer signed
// longer ago than AnswerMaxAge is stale, one signed further in the future
// than AnswerMaxSkew (clocks that disagree) is refused too.
const (
	AnswerMaxAge  = 10 * time.Minute
	AnswerMaxSkew = time.Minute
)

// Why VerifyAnswer refuses an answer.
var (
	ErrUnsigned = errors.New("the answer is not signed")
	ErrForged   = errors.New("the answer's signature does not match it")
	ErrStale    = errors.New("the answer's time is out of bounds")
	ErrNoKey    = errors.New("no decision key")
)

// SignAnswer returns a's signature for the workflow subject: the hex
// HMAC-SHA256 with key of the canonical encoding of every field an admin
// chose or is named by (decision id, digest, option, note, by, channel,
// at). Every channel signs through workflows.Client.Decide; the engine
// checks with VerifyAnswer.
func SignAnswer(key []byte, subject string, a Answer) string {
	m := hmac.New(sha256.New, key)
	m.Write(canonicalAnswer(subject, a))
	return hex.EncodeToString(m.Sum(nil))
}

// VerifyAnswer checks a's signature against key and its time against now:
// nil when a channel holding key signed exactly this answer to subject
// within AnswerMaxAge. The errors wrap ErrNoKey, ErrUnsigned, ErrForged or
// ErrStale.
func VerifyAnswer(key []byte, subject string, a Answer, now time.Time) error {
	if len(key) == 0 {
		return ErrNoKey
	}
	if a.Signature == "" || a.At.IsZero() {
		return ErrUnsigned
	}
	got, err := hex.DecodeString(a.Signature)
	if err != nil {
		return fmt.Errorf("%w: not hex", ErrForged)
	}
	m := hmac.New(sha256.New, key)
	m.Write(canonicalAnswer(subject, a))
	if !hmac.Equal(got, m.Sum(nil)) {
		return ErrForged
	}
	switch age := now.Sub(a.At); {
	case age > AnswerMaxAge:
		return fmt.Errorf("%w: signed at %s, more than %s ago", ErrStale, a.At.UTC().Format(time.RFC3339), AnswerMaxAge)
	case age < -AnswerMaxSkew:
		return fmt.Errorf("%w: signed at %s, in the future", ErrStale, a.At.UTC().Format(time.RFC3339))
	}
	return nil
}

// canonicalAnswer encodes the signed fields, each as its length, a colon
// and its bytes, so that no two answers encode alike.
func canonicalAnswer(subject string, a Answer) []byte {
	b := []byte("ampflow-answer/1\n")
	for _, f := range []string{subject, a.DecisionID, a.Digest, a.Option, a.Note, a.By, a.Channel,
		a.At.UTC().Format(time.RFC3339Nano)} {
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(b, ':')
		b = append(b, f...)
		b = append(b, '\n')
	}
	return b
}

// ParseKey reads a decision key written as hex or base64 (standard or
// URL alphabet, padded or not) of at least MinKeySize bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, ErrNoKey
	}
	decoders := []func(string) ([]byte, error){hex.DecodeString, base64.StdEncoding.DecodeString,
		base64.RawStdEncoding.DecodeString, base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString}
	for _, dec := range decoders {
		if k, err := dec(s); err == nil {
			if len(k) < MinKeySize {
				return nil, fmt.Errorf("the decision key is %d bytes, at least %d are needed", len(k), MinKeySize)
			}
			return k, nil
		}
	}
	return nil, errors.New("the decision key is neither hex nor base64")
}

// ActivityVerifyAnswer is the registered name of the local activity that
// checks an answer's signature on the worker (activities.VerifyAnswer):
// VerifyAnswerInput in, VerifyAnswerResult out.
const ActivityVerifyAnswer = "VerifyAnswer"

// VerifyAnswerInput is an answer to a decision of Subject, as the engine
// received it. The key is not in it: only the worker holds it.
type VerifyAnswerInput struct {
	Subject string `json:"subject"`
	Answer  Answer `json:"answer"`
}

// VerifyAnswerResult says whether the answer was signed with the
// decision key, and if not, why.
type VerifyAnswerResult struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}
