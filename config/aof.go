package config

import "maps"

// AOF configures the AOF/1 adapter: AOF agents' tasks on durable
// workflows.
type AOF struct {
	// DataDir, when set, mirrors each task's files into AOF's own layout
	// there (runs/<taskId>/…, tasks/<status>/<taskId>/inputs/…, events/)
	// for AOF's tools; the store keeps them either way.
	DataDir string `mapstructure:"data_dir"`
	// Review is who reviews a task in review: admin (a decision on every
	// channel).
	Review string `mapstructure:"review"`
}

// AOF review modes.
const (
	AOFReviewAdmin = "admin"
)

var aofDefaults = map[string]any{
	"aof.data_dir": "",
	"aof.review":   AOFReviewAdmin,
}

func init() { maps.Copy(defaults, aofDefaults) }

func (c Config) validateAOF(ps *problems) {
	switch c.AOF.Review {
	case AOFReviewAdmin:
	case "agent":
		ps.add("aof.review", "agent review is not available in this version; use admin")
	default:
		ps.add("aof.review", "must be admin, not %q", c.AOF.Review)
	}
}
