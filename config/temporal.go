package config

// Temporal locates the Temporal service the worker and clients connect to.
type Temporal struct {
	Address   string      `mapstructure:"address"`
	Namespace string      `mapstructure:"namespace"`
	TaskQueue string      `mapstructure:"task_queue"`
	TLS       TemporalTLS `mapstructure:"tls"`
	APIKey    string      `mapstructure:"api_key"` // secret
	// Plaintext sends APIKey without TLS to an address that is not
	// loopback: an `ampflow temporal` on a trusted network.
	Plaintext bool `mapstructure:"plaintext"`
	// WorkflowCache is how many workflows a worker process keeps in
	// memory between their workflow tasks; one not kept replays its
	// history at its next task.
	WorkflowCache int `mapstructure:"workflow_cache"`
}

// DefaultWorkflowCache is temporal.workflow_cache unless configured: an
// open task kept costs its goroutines' stacks, tens of KiB.
const DefaultWorkflowCache = 2000

// MaxWorkflowCache bounds temporal.workflow_cache.
const MaxWorkflowCache = 1000000

// TemporalTLS configures TLS to the Temporal service.
type TemporalTLS struct {
	Enabled    bool   `mapstructure:"enabled"`
	CertFile   string `mapstructure:"cert_file"`
	KeyFile    string `mapstructure:"key_file"`
	CAFile     string `mapstructure:"ca_file"`
	ServerName string `mapstructure:"server_name"`
}

// Dev configures the embedded Temporal server of `ampflow dev` and
// `ampflow temporal`.
type Dev struct {
	TemporalPort int `mapstructure:"temporal_port"` // 0 picks a free port
	UIPort       int `mapstructure:"ui_port"`       // 0 turns the web UI off
	// TemporalIP is the address the frontend and the UI bind.
	TemporalIP string `mapstructure:"temporal_ip"`
	// TemporalDB, when set, keeps Temporal's state on PostgreSQL instead of
	// SQLite in DataDir: postgres://USER:PASSWORD@HOST:PORT/DB, visibility
	// in DB_visibility. Its password is a secret.
	TemporalDB string `mapstructure:"temporal_db"`
	// UIWrites lets the web UI signal, cancel, terminate, reset and start
	// workflows; by default it only reads.
	UIWrites bool `mapstructure:"ui_writes"`
}
