package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// childEnvs refuses an env list (agents.<role>.env, ci.command.env) that
// would pass code ampflow runs one of ampflow's own credentials from the
// worker's environment: its settings (AMPFLOW_*, where the API tokens,
// the decision key and the Temporal key live) or a gate agent's key.
// A NAME=value entry sets what the operator wrote and is not checked.
func (c Config) childEnvs(ps *problems) {
	keys := map[string]string{}
	for _, a := range c.Gate.Agents {
		keys[a.KeyEnv] = a.ID
	}
	for _, l := range []struct {
		key string
		env []string
	}{
		{"agents.executor.env", c.Agents.Executor.Env},
		{"agents.reviewer.env", c.Agents.Reviewer.Env},
		{"ci.command.env", c.CI.Command.Env},
	} {
		for i, name := range l.env {
			if strings.Contains(name, "=") {
				continue
			}
			k := fmt.Sprintf("%s[%d]", l.key, i)
			if strings.HasPrefix(name, EnvPrefix) {
				ps.add(k, "must not pass the worker's own %s* settings to code ampflow runs, not %q", EnvPrefix, name)
			} else if id, ok := keys[name]; ok {
				ps.add(k, "must not pass %q, which holds gate agent %s's key, to code ampflow runs", name, id)
			}
		}
	}
}

// SecretFiles are the worker's files a process ampflow runs for code it
// does not control must not read, beside data_dir: the configuration
// file, the key files it names, and a SQLite store kept elsewhere.
func (c Config) SecretFiles() []string {
	var out []string
	for _, f := range []string{c.File, c.Auth.DecisionKeyFile, c.Temporal.TLS.KeyFile, c.Temporal.TLS.CertFile} {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs)
		}
	}
	if u := c.SSOT.URL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		if abs, err := filepath.Abs(strings.TrimPrefix(u, "sqlite://")); err == nil {
			out = append(out, abs, abs+"-wal", abs+"-shm")
		}
	}
	return out
}
