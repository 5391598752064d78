package decision

import "time"

// ChannelCommand is the channel of a signed command (SignedAs).
const ChannelCommand = "command"

// Signed is what a decisive command other than an answer (a task's
// cancel or replan, a lease's release) is signed with: embedded in the
// command's input, it makes the input a Command that SignedAs signs and
// verifies as an answer, with SignAnswer and VerifyAnswer.
type Signed struct {
	At        time.Time `json:"at,omitzero"`
	Signature string    `json:"signature,omitempty"`
}

func (s *Signed) signed() *Signed { return s }

// Command is the input of a signed command: a struct that embeds Signed.
type Command[C any] interface {
	*C
	signed() *Signed
}

// SignedAs is the answer the signature of in, the input of command,
// covers: the command's name stands for the decision id and the option,
// the Digest of in without its At and Signature for what is decided, by
// and note for who sent it and why. A command id can never be a
// decision's.
func SignedAs[C any, P Command[C]](command string, in C, by, note string) (Answer, error) {
	s := *P(&in).signed()
	*P(&in).signed() = Signed{}
	dg, err := Digest(in)
	return Answer{DecisionID: "command:" + command, Digest: dg, Option: command, Note: note, By: by,
		Channel: ChannelCommand, At: s.At, Signature: s.Signature}, err
}
