package config

import (
	"maps"
	"path/filepath"

	"github.com/ampflow/ampflow/amp"
)

// AOF configures the AOF/1 adapter: AOF agents' tasks on durable
// workflows.
type AOF struct {
	// DataDir, when set, mirrors each task's files into AOF's own layout
	// there (runs/<taskId>/…, tasks/<status>/<taskId>/inputs/…, events/)
	// for AOF's tools; the store keeps them either way.
	DataDir string `mapstructure:"data_dir"`
	// Review is who reviews a task in review: admin (a decision on every
	// channel) or agent (the AMP reviewer agent, agents.reviewer, gets a
	// review_request; the admins decide when it does not answer).
	Review string `mapstructure:"review"`
	// Repo and Branch are where the AOF agents' work is, for the reviewer
	// agent: they go in the review's task_dispatch record. Required with
	// review: agent.
	Repo   string `mapstructure:"repo"`
	Branch string `mapstructure:"branch"`
}

// AOF review modes.
const (
	AOFReviewAdmin = "admin"
	AOFReviewAgent = "agent"
)

var aofDefaults = map[string]any{
	"aof.data_dir": "",
	"aof.review":   AOFReviewAdmin,
	"aof.repo":     "",
	"aof.branch":   "",
}

func init() { maps.Copy(defaults, aofDefaults) }

func (c Config) validateAOF(ps *problems) {
	ps.oneOf("aof.review", c.AOF.Review, AOFReviewAdmin, AOFReviewAgent)
	if c.AOF.Review != AOFReviewAgent {
		return
	}
	const when = "aof.review is agent: the reviewer agent is told where the work is"
	ps.required("aof.repo", c.AOF.Repo, when)
	ps.required("aof.branch", c.AOF.Branch, when)
	if c.AOF.Repo != "" && !filepath.IsAbs(c.AOF.Repo) {
		ps.add("aof.repo", "must be an absolute path, not %q", c.AOF.Repo)
	}
	// The review's task_dispatch record is an AMP dispatch.
	if amp.ProtectedBranch(c.AOF.Branch) {
		ps.add("aof.branch", "must be a feature branch, not %s (an AMP dispatch never names main or master)", c.AOF.Branch)
	}
}
