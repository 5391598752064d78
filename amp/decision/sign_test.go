package decision

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestVerifyAnswer(t *testing.T) {
	key := []byte(strings.Repeat("k", MinKeySize))
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	signed := func(subject string, a Answer) Answer {
		a.Signature = SignAnswer(key, subject, a)
		return a
	}
	base := Answer{DecisionID: "T-2026-001-d1", Digest: "abc", Option: OptApprove, Note: "fine",
		By: "alice", Channel: "slack", At: now.Add(-time.Minute)}
	good := signed("T-2026-001", base)
	tests := []struct {
		name    string
		subject string
		key     []byte
		a       func(Answer) Answer
		want    error
	}{
		{name: "Signed", a: func(a Answer) Answer { return a }},
		{name: "Unsigned", a: func(a Answer) Answer { a.Signature = ""; return a }, want: ErrUnsigned},
		{name: "NoTime", a: func(a Answer) Answer { a.At = time.Time{}; return a }, want: ErrUnsigned},
		{name: "NotHex", a: func(a Answer) Answer { a.Signature = "zz"; return a }, want: ErrForged},
		{name: "OtherSubject", subject: "T-2026-002", a: func(a Answer) Answer { return a }, want: ErrForged},
		{name: "DecisionID", a: func(a Answer) Answer { a.DecisionID = "T-2026-001-d2"; return a }, want: ErrForged},
		{name: "Digest", a: func(a Answer) Answer { a.Digest = "abd"; return a }, want: ErrForged},
		{name: "Option", a: func(a Answer) Answer { a.Option = OptReject; return a }, want: ErrForged},
		{name: "Note", a: func(a Answer) Answer { a.Note = "fine!"; return a }, want: ErrForged},
		{name: "By", a: func(a Answer) Answer { a.By = "bob"; return a }, want: ErrForged},
		{name: "Channel", a: func(a Answer) Answer { a.Channel = "cli"; return a }, want: ErrForged},
		{name: "At", a: func(a Answer) Answer { a.At = a.At.Add(time.Second); return a }, want: ErrForged},
		// Fields run together differently must not sign alike.
		{name: "ShiftedFields", a: func(a Answer) Answer { a.Option, a.Note = "approvefine", ""; return a }, want: ErrForged},
		{name: "WrongKey", key: []byte(strings.Repeat("x", MinKeySize)), a: func(a Answer) Answer { return a }, want: ErrForged},
		{name: "NoKey", key: []byte{}, a: func(a Answer) Answer { return a }, want: ErrNoKey},
		{name: "Stale", a: func(a Answer) Answer { return signed("T-2026-001", withAt(a, now.Add(-AnswerMaxAge-time.Second))) }, want: ErrStale},
		{name: "JustInTime", a: func(a Answer) Answer { return signed("T-2026-001", withAt(a, now.Add(-AnswerMaxAge))) }},
		{name: "Future", a: func(a Answer) Answer { return signed("T-2026-001", withAt(a, now.Add(2*AnswerMaxSkew))) }, want: ErrStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subject, k := "T-2026-001", key
			if tt.subject != "" {
				subject = tt.subject
			}
			if tt.key != nil {
				k = tt.key
			}
			err := VerifyAnswer(k, subject, tt.a(good), now)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("VerifyAnswer: %v, want %v", err, tt.want)
			}
		})
	}
}

func withAt(a Answer, at time.Time) Answer {
	a.At = at
	return a
}

func TestParseKey(t *testing.T) {
	raw := []byte(strings.Repeat("\xfe", MinKeySize))
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"Hex", strings.Repeat("fe", MinKeySize), true},
		{"HexSpaced", " " + strings.Repeat("fe", MinKeySize) + "\n", true},
		{"Base64", "/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v4=", true},
		{"Base64URL", "_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v4", true},
		{"Short", strings.Repeat("fe", MinKeySize-1), false},
		{"Empty", "", false},
		{"Neither", strings.Repeat("!", 64), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKey(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseKey: %v", err)
			}
			if tt.ok && string(k) != string(raw) {
				t.Errorf("ParseKey = %x, want %x", k, raw)
			}
		})
	}
}
