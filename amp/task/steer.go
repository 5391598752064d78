package task

import "time"

// SignalSteer tells a task that a person sent its running agent a
// message (ampflow task say): a SteerInput. The message itself is in the
// store, where the agent's run reads it; the signal puts it in the
// task's timeline and resumes an interrupted run.
const SignalSteer = "steer"

// SteerInput names a message sent to a task's agent: its id in the store
// and who sent it.
type SteerInput struct {
	ID int64  `json:"id"`
	By string `json:"by"`
}

// Interruption is a run a person interrupted (ampflow task interrupt):
// its role, who and when. The run's session and worktree are kept; a
// message or a redispatch resumes it.
type Interruption struct {
	Role string    `json:"role"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
}
