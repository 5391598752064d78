package decision

import "time"

// ChannelCommand is the channel of a signed command (CommandAnswer).
const ChannelCommand = "command"

// CommandAnswer is the answer a decisive command other than an answer (a
// task's cancel or replan) is signed and verified as, with SignAnswer and
// VerifyAnswer: the command's name stands for the decision id and the
// option, digest (Digest of the command's input without its At and
// Signature) for what is decided. A command id can never be a decision's.
func CommandAnswer(command, digest, by, note string, at time.Time, signature string) Answer {
	return Answer{DecisionID: "command:" + command, Digest: digest, Option: command, Note: note, By: by,
		Channel: ChannelCommand, At: at, Signature: signature}
}
