package runshift

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"

	"github.com/ampflow/ampflow/config"
)

// MinKeyLen is the shortest agent key accepted.
const MinKeyLen = 16

// Keys are the agents' bearer keys, kept as SHA-256 hashes only.
type Keys struct{ agents []agentKey }

type agentKey struct {
	id       string
	hash     [32]byte
	projects []string
}

// Agent is the agent a key belongs to.
type Agent struct {
	ID       string
	Projects []string
}

// MayPost says whether the agent may post for project: any project when
// it lists none or "*".
func (a Agent) MayPost(project string) bool {
	return len(a.Projects) == 0 || slices.Contains(a.Projects, "*") || slices.Contains(a.Projects, project)
}

// NewKeys reads each agent's key from the environment variable its
// key_env names (through lookup). A missing or short key is an error
// naming the key, never showing it.
func NewKeys(agents []config.GateAgent, lookup func(string) (string, bool)) (Keys, error) {
	var ks Keys
	for i, a := range agents {
		key, ok := lookup(a.KeyEnv)
		key = strings.TrimSpace(key)
		switch {
		case !ok || key == "":
			return Keys{}, fmt.Errorf("gate.agents[%d].key_env: %s is not set", i, a.KeyEnv)
		case len(key) < MinKeyLen:
			return Keys{}, fmt.Errorf("gate.agents[%d].key_env: the key in %s is shorter than %d characters", i, a.KeyEnv, MinKeyLen)
		}
		ks.agents = append(ks.agents, agentKey{id: a.ID, hash: sha256.Sum256([]byte(key)), projects: a.Projects})
	}
	return ks, nil
}

// Check finds the agent of an Authorization header's bearer key. Every
// key's hash is compared, in constant time, whichever matches.
func (ks Keys) Check(header string) (Agent, bool) {
	key, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || key == "" {
		return Agent{}, false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(key)))
	found := -1
	for i, a := range ks.agents {
		if subtle.ConstantTimeCompare(h[:], a.hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Agent{}, false
	}
	a := ks.agents[found]
	return Agent{ID: a.id, Projects: a.projects}, true
}

// Len is the number of agents with keys.
func (ks Keys) Len() int { return len(ks.agents) }
