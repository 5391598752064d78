package workflows

import (
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows/task"
)

// SlackAdmin and TelegramAdmin name a chat user as an admin identity.
func SlackAdmin(userID string) string { return "slack:" + userID }

// TelegramAdmin names a Telegram user as an admin identity.
func TelegramAdmin(userID string) string { return "telegram:" + userID }

// NewPolicy derives the policy a new task runs by from the configuration.
// Admins are the configured names, the chat admins and the names of admin
// API tokens.
func NewPolicy(cfg config.Config) task.Policy {
	p := task.Policy{
		PlanApproval:  riskHandling(cfg.Policy.PlanApproval),
		FinalApproval: riskHandling(cfg.Policy.FinalApproval),
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
		Notify:           cfg.Slack.Enabled || cfg.Telegram.Enabled,
		StatusUpdates:    cfg.Notify.StatusUpdates,
	}
	p.Admins = append(p.Admins, cfg.Admins...)
	for _, id := range cfg.Slack.Admins {
		p.Admins = append(p.Admins, SlackAdmin(id))
	}
	for _, id := range cfg.Telegram.Admins {
		p.Admins = append(p.Admins, TelegramAdmin(id))
	}
	for _, tok := range cfg.Auth.Tokens {
		if tok.Role == config.RoleAdmin && tok.Name != "" {
			p.Admins = append(p.Admins, tok.Name)
		}
	}
	return p
}

func riskHandling(a config.Approval) task.RiskHandling {
	return task.RiskHandling{Low: task.Handling(a.Low), Medium: task.Handling(a.Medium), High: task.Handling(a.High)}
}
