package delivery

import (
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/runcred"
)

// RunCredentials mint each runner run a credential of its own
// (amp/runcred): its tool hook and its MCP server present it, and the
// API takes it only for the run's task, as the run's role, on the routes
// a run needs. A run never holds an API token: nothing it reads lets it
// act on another task, as another role, or as an admin.
type RunCredentials struct {
	// Key is runcred.Key of the decision key.
	Key []byte
	// Names are who each role's runs act as (agents.<role>.token_name);
	// a role without one acts as its role's name.
	Names map[amp.Role]string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// runLifetime bounds a credential whose run has no wall-clock bound
// (agents.<role>.timeout unset).
const runLifetime = 24 * time.Hour

// Mint makes the credential of one run of role on taskID, good for the
// run's timeout (runLifetime when it has none) and a margin for the
// run's last tool call.
func (c *RunCredentials) Mint(role amp.Role, taskID string, timeout time.Duration) (string, error) {
	if c == nil {
		return "", nil
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if timeout <= 0 {
		timeout = runLifetime
	}
	tok, _, err := runcred.Mint(c.Key, runcred.Claims{Task: taskID, Role: role, Agent: c.Names[role],
		Expires: now().Add(timeout + 5*time.Minute).Unix()})
	return tok, err
}
