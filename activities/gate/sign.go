package gate

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// CallbackSecret is the secret an agent checks its callbacks with: the
// hex HMAC-SHA256 of its id, keyed with gate.webhook_secret. Each agent
// holds its own and never the master secret, so no agent can sign what
// another agent would take.
//
//	printf '%s' "$AGENT_ID" | openssl dgst -sha256 -hmac "$AMPFLOW_GATE_WEBHOOK_SECRET"
func CallbackSecret(master, agentID string) string {
	mac := hmac.New(sha256.New, []byte(master))
	mac.Write([]byte(agentID))
	return hex.EncodeToString(mac.Sum(nil))
}

// CallbackSignature is a callback's X-AMP-Signature: "v2=" and the hex
// HMAC-SHA256, keyed with the agent's CallbackSecret, of the timestamp,
// the recipient (agent id, run id, webhook URL) and the body, each
// followed by a newline but the body. An agent recomputes it with its
// own id, run and URL, so a callback meant for another recipient fails.
func CallbackSignature(agentSecret, ts, agentID, runID, webhookURL string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(agentSecret))
	for _, s := range []string{ts, agentID, runID, webhookURL} {
		mac.Write([]byte(s + "\n"))
	}
	mac.Write(body)
	return "v2=" + hex.EncodeToString(mac.Sum(nil))
}
