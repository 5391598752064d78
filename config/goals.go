package config

import "time"

// Goals configures goals (docs/goals.md): the planner that proposes a
// goal's graph when its file gives only a description.
type Goals struct {
	// Planner is the runner that proposes a goal's graph; none when its
	// runner is empty, and a goal file must then list its tasks.
	Planner Planner `mapstructure:"planner"`
	// PlannerRounds bounds the graphs the planner proposes to the admins
	// for one goal: each rejection, with its note, goes back to it until
	// this many were rejected, and the goal ends rejected.
	PlannerRounds int `mapstructure:"planner_rounds"`
}

// Planner is a coding-agent CLI run as a goal's planner, configured as
// a runner of agents.<role> is: it runs sandboxed in a checkout of the
// goal's target, with only Env beside its base environment.
type Planner struct {
	// Runner names the CLI (one of Runners); empty: no planner.
	Runner string `mapstructure:"runner"`
	// Command is the binary and fixed arguments, else the runner's name
	// on PATH.
	Command     []string      `mapstructure:"command"`
	Model       string        `mapstructure:"model"`
	Env         []string      `mapstructure:"env"`
	Timeout     time.Duration `mapstructure:"timeout"`
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// MaxCostUSD caps one run of the planner, in dollars; 0: no cap.
	MaxCostUSD float64 `mapstructure:"max_cost_usd"`
	// Sandbox is on (the default) or off, as agents.<role>.sandbox.
	Sandbox string `mapstructure:"sandbox"`
}

// On reports whether a planner is configured.
func (p Planner) On() bool { return p.Runner != "" }

// Defaults of goals.*.
const (
	DefaultPlannerRounds  = 3
	DefaultPlannerTimeout = 30 * time.Minute
	// MaxPlannerRounds bounds goals.planner_rounds.
	MaxPlannerRounds = 20
)

func init() {
	defaults["goals.planner.runner"] = ""
	defaults["goals.planner.command"] = []string{}
	defaults["goals.planner.model"] = ""
	defaults["goals.planner.env"] = []string{}
	defaults["goals.planner.timeout"] = DefaultPlannerTimeout
	defaults["goals.planner.idle_timeout"] = DefaultAgentIdleTimeout
	defaults["goals.planner.max_cost_usd"] = 0.0
	defaults["goals.planner.sandbox"] = SandboxOn
	defaults["goals.planner_rounds"] = DefaultPlannerRounds
}

func (c Config) validateGoals(ps *problems) {
	g := c.Goals
	if r := g.PlannerRounds; r < 1 || r > MaxPlannerRounds {
		ps.add("goals.planner_rounds", "must be 1 to %d, not %d", MaxPlannerRounds, r)
	}
	p := g.Planner
	if !p.On() {
		return
	}
	ps.oneOf("goals.planner.runner", p.Runner, Runners...)
	if p.Runner == RunnerACP && (len(p.Command) == 0 || p.Command[0] == "") {
		ps.add("goals.planner.command", "required when goals.planner.runner is acp: the agent's ACP command line, e.g. [gemini, --acp]")
	} else if len(p.Command) > 0 {
		ps.argv("goals.planner.command", p.Command)
	}
	ps.envList("goals.planner.env", p.Env)
	ps.positive("goals.planner.timeout", p.Timeout)
	ps.positive("goals.planner.idle_timeout", p.IdleTimeout)
	ps.oneOf("goals.planner.sandbox", p.Sandbox, SandboxOn, SandboxOff)
	if p.MaxCostUSD < 0 {
		ps.add("goals.planner.max_cost_usd", "must not be negative (0: no cap), not %v", p.MaxCostUSD)
	}
}
