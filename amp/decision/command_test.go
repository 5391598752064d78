package decision

import (
	"encoding/json"
	"testing"
	"time"
)

// A command that embeds Signed signs and encodes as one that spells out
// its At and Signature: the digests of inputs signed before still match.
func TestSignedAs(t *testing.T) {
	type spelled struct {
		Reason    string    `json:"reason"`
		By        string    `json:"by"`
		At        time.Time `json:"at,omitzero"`
		Signature string    `json:"signature,omitempty"`
	}
	type embedded struct {
		Reason string `json:"reason"`
		By     string `json:"by"`
		Signed
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	in := embedded{Reason: "stop", By: "alice", Signed: Signed{At: at, Signature: "abc"}}
	a, err := SignedAs("cancel", in, in.By, in.Reason)
	if err != nil {
		t.Fatal(err)
	}
	dg, err := Digest(spelled{Reason: "stop", By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	want := Answer{DecisionID: "command:cancel", Digest: dg, Option: "cancel", Note: "stop", By: "alice",
		Channel: ChannelCommand, At: at, Signature: "abc"}
	if a != want {
		t.Errorf("SignedAs = %+v, want %+v", a, want)
	}
	if in.At != at || in.Signature != "abc" {
		t.Errorf("SignedAs changed its input: %+v", in)
	}
	got, _ := json.Marshal(in)
	old, _ := json.Marshal(spelled{Reason: "stop", By: "alice", At: at, Signature: "abc"})
	if string(got) != string(old) {
		t.Errorf("encoded as %s, want %s", got, old)
	}
}
