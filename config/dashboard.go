package config

import (
	"maps"
	"time"
)

// Dashboard configures the admin dashboard that the HTTP API's process
// serves at /.
type Dashboard struct {
	// Enabled serves the dashboard beside the API when the worker has the
	// SSOT store.
	Enabled bool `mapstructure:"enabled"`
	// PollInterval is how often each process looks at the store for
	// changes to push to open pages: the pages' lag behind any worker.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// SessionTTL is how long a sign-in with an API token lasts.
	SessionTTL time.Duration `mapstructure:"session_ttl"`
}

// dashboardDefaults are the dashboard's keys, added to defaults so the
// section lives in this file alone.
var dashboardDefaults = map[string]any{
	"dashboard.enabled":       true,
	"dashboard.poll_interval": 300 * time.Millisecond,
	"dashboard.session_ttl":   12 * time.Hour,
}

func init() { maps.Copy(defaults, dashboardDefaults) }

func (d Dashboard) validate(ps *problems) {
	ps.positive("dashboard.poll_interval", d.PollInterval)
	if d.PollInterval > 0 && d.PollInterval < 50*time.Millisecond {
		ps.add("dashboard.poll_interval", "must be at least 50ms, not %s: each process reads the store this often", d.PollInterval)
	}
	ps.positive("dashboard.session_ttl", d.SessionTTL)
}
