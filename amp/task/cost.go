package task

import "github.com/ampflow/ampflow/amp"

// SignalUsage carries what one run of a runner-mode agent cost: a
// UsageInput. The runner sends it after every run, before its reply.
const SignalUsage = "usage"

// OptRaiseCap raises a runner's cost cap on the task by its configured
// amount (agents.<role>.max_cost_usd) and sends the work again.
const OptRaiseCap = "raise_cap"

// UsageInput is the usage of one agent run.
type UsageInput struct {
	// Key names the run (msg_id/attempt/run): a key the task has counted
	// is not counted again, so a signal sent twice costs once.
	Key       string   `json:"key"`
	From      amp.Role `json:"from"`
	MsgID     string   `json:"msg_id"`
	Runner    string   `json:"runner,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	// SessionTotal says the figures are the session's running total (as
	// Codex reports them): the task charges the difference from the last
	// total it was sent for the session.
	SessionTotal bool    `json:"session_total,omitempty"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Tokens counts input and output tokens.
type Tokens struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
}

// Spend is what one role's runs have cost the task, against its cap.
type Spend struct {
	Role    amp.Role `json:"role"`
	CostUSD float64  `json:"cost_usd"`
	Tokens  Tokens   `json:"tokens"`
	Runs    int      `json:"runs"`
	// CapUSD is the role's cap on the task: agents.<role>.max_cost_usd
	// and each raise the admins chose; 0 is none.
	CapUSD float64 `json:"cap_usd,omitempty"`
}

// Charge is what a run adds to its task: its figures, or for a session
// total the difference from last, the session's previous total (a total
// below last is a new session's and is charged whole).
func Charge(in UsageInput, last *UsageInput) (usd float64, tok Tokens) {
	usd, tok = in.CostUSD, Tokens{Input: in.InputTokens, Output: in.OutputTokens}
	if !in.SessionTotal || last == nil || in.InputTokens < last.InputTokens || in.OutputTokens < last.OutputTokens {
		return usd, tok
	}
	return max(0, usd-last.CostUSD), Tokens{Input: tok.Input - last.InputTokens, Output: tok.Output - last.OutputTokens}
}

// Remaining is what a cap leaves of spent; capUSD 0 is no cap, and
// ok is false once the cap is spent.
func Remaining(capUSD, spent float64) (left float64, ok bool) {
	if capUSD <= 0 {
		return 0, true
	}
	left = capUSD - spent
	return max(0, left), left > 0
}
