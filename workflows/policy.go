package workflows

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// NewPolicy derives the policy a new task runs by from the worker's
// configuration. Admins are the configured names (AnyAdmin among them lets
// anyone named decide), the chat admins and the names of admin API tokens.
func NewPolicy(cfg config.Config) task.Policy {
	p := task.Policy{
		PlanApproval:  task.RiskHandling(cfg.Policy.PlanApproval),
		FinalApproval: task.RiskHandling(cfg.Policy.FinalApproval),
		AckTimeouts: map[amp.Type]time.Duration{
			amp.TypeTaskDispatch:  cfg.Protocol.AckTimeout.TaskDispatch,
			amp.TypeTaskResult:    cfg.Protocol.AckTimeout.TaskResult,
			amp.TypeReviewRequest: cfg.Protocol.AckTimeout.ReviewRequest,
			amp.TypeReviewVerdict: cfg.Protocol.AckTimeout.ReviewVerdict,
		},
		HeartbeatTimeout: cfg.Protocol.HeartbeatTimeout,
		MaxRejects:       cfg.Protocol.MaxRejects,
		MaxCIRounds:      cfg.Protocol.MaxCIRounds,
		MinConfidence:    cfg.Protocol.MinConfidence,
		CI:               cfg.CI.Provider != "" && cfg.CI.Provider != config.ProviderNone,
		CIPollInterval:   cfg.CI.PollInterval,
		CITimeout:        cfg.CI.Timeout,
		StatusUpdates:    cfg.Notify.StatusUpdates,
		LeaseWait:        cfg.Policy.LeaseWait,
		HostTimeout:      cfg.Runner.HostTimeout,
		Runners:          cfg.Agents.Executor.Mode == config.AgentModeRunner || cfg.Agents.Reviewer.Mode == config.AgentModeRunner,
	}
	for role, a := range map[amp.Role]config.Agent{amp.RoleExecutor: cfg.Agents.Executor, amp.RoleReviewer: cfg.Agents.Reviewer} {
		if a.Mode == config.AgentModeRunner && a.MaxCostUSD > 0 {
			if p.MaxCostUSD == nil {
				p.MaxCostUSD = map[amp.Role]float64{}
			}
			p.MaxCostUSD[role] = a.MaxCostUSD
		}
	}
	if d := cfg.Delivery; d.On() {
		p.Delivery = task.Delivery{Push: d.Push, PullRequest: d.PullRequest, Merge: d.Merge, Approvals: d.GitHub.Approvals,
			CountRejections: d.GitHub.CountRejections, Poll: d.GitHub.Poll}
	}
	p.Admins = append(p.Admins, cfg.AdminNames()...)
	for _, id := range cfg.SlackAdmins() {
		p.Admins = append(p.Admins, config.SlackAdmin(id))
	}
	for _, id := range cfg.TelegramAdmins() {
		p.Admins = append(p.Admins, config.TelegramAdmin(id))
	}
	for _, tok := range cfg.Auth.Tokens {
		if tok.Role == amp.RoleAdmin && tok.Name != "" {
			p.Admins = append(p.Admins, tok.Name)
		}
	}
	p.EscalationAdmins = append(p.EscalationAdmins, cfg.AdminsEscalation...)
	for _, id := range cfg.Slack.AdminsEscalation {
		p.EscalationAdmins = append(p.EscalationAdmins, config.SlackAdmin(id))
	}
	for _, id := range cfg.Telegram.AdminsEscalation {
		p.EscalationAdmins = append(p.EscalationAdmins, config.TelegramAdmin(id))
	}
	p.Decisions = decision.Policy{
		Quorum: decision.Quorum{
			Low:    cfg.Policy.Quorum.Low,
			Medium: cfg.Policy.Quorum.Medium,
			High:   cfg.Policy.Quorum.High,
		},
		RemindAfter:   cfg.Policy.Decisions.RemindAfter,
		EscalateAfter: cfg.Policy.Decisions.EscalateAfter,
		ExpireAfter:   cfg.Policy.Decisions.ExpireAfter,
		Persons:       cfg.Persons(),
	}
	return p
}

// takePolicy sets the policy the task runs by when it starts: the
// worker's, asked for in a local activity, made stricter by the
// coordinator's handling. A policy the client sent is dropped, so a
// client's own configuration cannot loosen a task. On failure the task
// runs by no policy: nobody may decide, and the caller ends it.
func (t *taskRun) takePolicy(ctx workflow.Context) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         recordOptions().RetryPolicy,
	})
	var out activities.PolicyResult
	if err := workflow.ExecuteLocalActivity(ctx, acts.TaskPolicy, activities.PolicyInput{TaskID: t.In.TaskID}).Get(ctx, &out); err != nil {
		t.In.Policy = task.Policy{}
		return fmt.Errorf("reading the worker's policy: %w", err)
	}
	t.In.Policy = stricter(out.Policy, t.In.Handling)
	return nil
}

// stricter returns the worker's policy p with a coordinator's handling
// applied: admin makes every plan approval an admin's. Nothing loosens it.
func stricter(p task.Policy, h task.Handling) task.Policy {
	p.Admins = slices.Clone(p.Admins)
	p.EscalationAdmins = slices.Clone(p.EscalationAdmins)
	p.AckTimeouts = maps.Clone(p.AckTimeouts)
	if h == task.HandlingAdmin {
		p.PlanApproval = task.RiskHandling{Low: task.HandlingAdmin, Medium: task.HandlingAdmin, High: task.HandlingAdmin}
	}
	return p
}
