package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// ValidationError lists every problem Validate found, each a setting's
// key (the field's path) and why.
type ValidationError struct {
	Problems []amp.FieldError
}

// Error returns all the problems on one line.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "invalid configuration: " + strings.Join(parts, "; ")
}

// problems collects Problems in the order the checks run.
type problems []amp.FieldError

func (ps *problems) add(key, format string, args ...any) {
	*ps = append(*ps, amp.FieldError{Path: key, Problem: fmt.Sprintf(format, args...)})
}

func (ps *problems) oneOf(key, val string, allowed ...string) {
	if !slices.Contains(allowed, val) {
		ps.add(key, "must be %s, not %q", orList(allowed), val)
	}
}

func (ps *problems) positive(key string, d time.Duration) {
	if d <= 0 {
		ps.add(key, "must be a positive duration, not %s", d)
	}
}

func (ps *problems) required(key, val, when string) {
	if strings.TrimSpace(val) == "" {
		ps.add(key, "required when %s", when)
	}
}

func (ps *problems) url(key, val string) {
	u, err := url.Parse(val)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ps.add(key, "must be an http or https URL, not %q", val)
	}
}

// port accepts 0, which the dev server reads as "pick one" or "none".
func (ps *problems) port(key string, p int) {
	if p < 0 || p > 65535 {
		ps.add(key, "must be a port between 0 and 65535, not %d", p)
	}
}

func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// Validate checks every key and reports all problems at once as a
// *ValidationError, each naming its key; nil if there are none.
func (c Config) Validate() error {
	var ps problems
	if strings.TrimSpace(c.DataDir) == "" {
		ps.add("data_dir", "must not be empty")
	}
	ps.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	ps.oneOf("log.format", c.Log.Format, "text", "json")

	c.validateTemporal(&ps)
	ps.port("dev.temporal_port", c.Dev.TemporalPort)
	ps.port("dev.ui_port", c.Dev.UIPort)
	if c.Dev.TemporalPort != 0 && c.Dev.TemporalPort == c.Dev.UIPort {
		ps.add("dev.ui_port", "must differ from dev.temporal_port")
	}
	if net.ParseIP(c.Dev.TemporalIP) == nil {
		ps.add("dev.temporal_ip", "must be an IP address, not %q", c.Dev.TemporalIP)
	}
	if db := c.Dev.TemporalDB; db != "" && !strings.HasPrefix(db, "postgres://") && !strings.HasPrefix(db, "postgresql://") {
		ps.add("dev.temporal_db", "must be a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DB) or empty for SQLite")
	}
	if _, _, err := net.SplitHostPort(c.HTTP.Addr); err != nil {
		ps.add("http.addr", "must be host:port, not %q", c.HTTP.Addr)
	}
	if c.HTTP.Rate <= 0 {
		ps.add("http.rate", "must be more than 0 writing requests a minute, not %d", c.HTTP.Rate)
	}
	c.validateAPI(&ps)
	c.validateAuth(&ps)
	c.validateProtocol(&ps)
	c.validateAOF(&ps)
	for _, a := range []struct {
		key string
		val Approval
	}{{"policy.plan_approval", c.Policy.PlanApproval}, {"policy.final_approval", c.Policy.FinalApproval}} {
		ps.oneOf(a.key+".low", string(a.val.Low), string(task.HandlingAuto), string(task.HandlingAdmin))
		ps.oneOf(a.key+".medium", string(a.val.Medium), string(task.HandlingAuto), string(task.HandlingAdmin))
		ps.oneOf(a.key+".high", string(a.val.High), string(task.HandlingAuto), string(task.HandlingAdmin))
	}
	c.validateDecisions(&ps)
	ps.positive("policy.lease_wait", c.Policy.LeaseWait)
	c.validateCI(&ps)
	c.validateDelivery(&ps)
	c.validateIntake(&ps)
	c.validateRunner(&ps)
	c.validateGoals(&ps)
	c.validateNotifyWebhooks(&ps)
	ps.positive("ssot.sweep_interval", c.SSOT.SweepInterval)
	validateSSOTURL(&ps, c.SSOT.URL)
	if c.SSOT.Git.Push {
		if !c.SSOT.Git.Commit {
			ps.add("ssot.git.commit", "must be true when ssot.git.push is true")
		}
		ps.required("ssot.git.remote", c.SSOT.Git.Remote, "ssot.git.push is true")
	}
	c.Dashboard.validate(&ps)
	validateAgent(&ps, "agents.executor", c.Agents.Executor)
	validateAgent(&ps, "agents.reviewer", c.Agents.Reviewer)
	c.childEnvs(&ps)
	c.validateSlack(&ps)
	c.validateTelegram(&ps)
	c.validateGate(&ps)
	c.validatePricing(&ps)
	c.validateContracts(&ps)
	c.validateTools(&ps)
	c.validateRunnerGate(&ps)

	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}

func (c Config) validateTemporal(ps *problems) {
	t := c.Temporal
	if _, _, err := net.SplitHostPort(t.Address); err != nil {
		ps.add("temporal.address", "must be host:port, not %q", t.Address)
	}
	if t.Namespace == "" {
		ps.add("temporal.namespace", "must not be empty")
	}
	if t.TaskQueue == "" {
		ps.add("temporal.task_queue", "must not be empty")
	}
	if t.WorkflowCache < 1 || t.WorkflowCache > MaxWorkflowCache {
		ps.add("temporal.workflow_cache", "must be 1 to %d workflows, not %d", MaxWorkflowCache, t.WorkflowCache)
	}
	if t.Plaintext && t.TLS.Enabled {
		ps.add("temporal.plaintext", "contradicts temporal.tls.enabled")
	}
	if t.TLS.CertFile != "" && t.TLS.KeyFile == "" {
		ps.add("temporal.tls.key_file", "required when temporal.tls.cert_file is set")
	}
	if t.TLS.KeyFile != "" && t.TLS.CertFile == "" {
		ps.add("temporal.tls.cert_file", "required when temporal.tls.key_file is set")
	}
}

// MinTokenLength is the fewest characters an API token (auth.tokens)
// may have.
const MinTokenLength = 16

func (c Config) validateAuth(ps *problems) {
	if c.Auth.DecisionKey != "" {
		if _, err := decision.ParseKey(c.Auth.DecisionKey); err != nil {
			ps.add("auth.decision_key", "%v", err)
		}
	}
	seen := map[string]bool{}
	names := map[string]int{}
	for i, t := range c.Auth.Tokens {
		key := fmt.Sprintf("auth.tokens[%d]", i)
		switch {
		case t.Token == "":
			ps.add(key+".token", "must not be empty")
		case len(t.Token) < MinTokenLength:
			ps.add(key+".token", "is %d characters, at least %d are needed (openssl rand -hex 24)", len(t.Token), MinTokenLength)
		case seen[t.Token]:
			ps.add(key+".token", "repeats an earlier token")
		}
		seen[t.Token] = true
		ps.oneOf(key+".role", string(t.Role), string(amp.RoleCoordinator), string(amp.RoleExecutor), string(amp.RoleReviewer), string(amp.RoleAdmin))
		// The name is who the token acts as: an admin token's decisions
		// are taken under it, so two tokens must not share one.
		name := strings.TrimSpace(t.Name)
		j, taken := names[name]
		switch {
		case name == "":
			ps.add(key+".name", "required: who the token acts as (token:role:name in AMPFLOW_AUTH_TOKENS)")
		case name == task.AnyAdmin:
			ps.add(key+".name", "must not be %q", task.AnyAdmin)
		case taken:
			ps.add(key+".name", "%q is the name of auth.tokens[%d] too; names must be unique", name, j)
		default:
			names[name] = i
		}
	}
	// An id is another name of the token's agent: unique among the ids
	// and the names.
	ids := map[string]int{}
	for i, t := range c.Auth.Tokens {
		id := strings.TrimSpace(t.ID)
		if id == "" {
			continue
		}
		key := fmt.Sprintf("auth.tokens[%d].id", i)
		if j, ok := ids[id]; ok {
			ps.add(key, "%q is the id of auth.tokens[%d] too; ids must be unique", id, j)
			continue
		}
		if j, ok := names[id]; ok && j != i {
			ps.add(key, "%q is the name of auth.tokens[%d]; an id must not be another token's name", id, j)
			continue
		}
		ids[id] = i
	}
	adminIDs := map[string]int{}
	for i, a := range c.Admins {
		key := fmt.Sprintf("admins[%d]", i)
		if strings.TrimSpace(a.Name) == "" {
			ps.add(key, "must not be empty")
		}
		for _, id := range []string{SlackAdmin(a.Slack), TelegramAdmin(a.Telegram)} {
			if strings.HasSuffix(id, ":") {
				continue
			}
			if j, ok := adminIDs[id]; ok {
				ps.add(key, "%s is admins[%d]'s already: one identity is one person", id, j)
			}
			adminIDs[id] = i
		}
		if a.Name == task.AnyAdmin && (a.Slack != "" || a.Telegram != "") {
			ps.add(key, "%s names no person, so has no channel identities", task.AnyAdmin)
		}
	}
}

// validateDecisions checks the decision policy: quorums a configured set
// of admins can reach, durations not negative, escalation before expiry.
func (c Config) validateDecisions(ps *problems) {
	n, anyone := c.adminCount()
	for _, q := range []struct {
		key string
		val int
	}{{"policy.quorum.low", c.Policy.Quorum.Low}, {"policy.quorum.medium", c.Policy.Quorum.Medium}, {"policy.quorum.high", c.Policy.Quorum.High}} {
		switch {
		case q.val < 1:
			ps.add(q.key, "must be ≥ 1, not %d", q.val)
		case q.val > 1 && !anyone && q.val > n:
			ps.add(q.key, "%d approvals can never be given: only %d admins are configured (admins, slack.admins, telegram.admins and admin tokens)", q.val, n)
		}
	}
	d := c.Policy.Decisions
	for _, k := range []struct {
		key string
		val time.Duration
	}{{"policy.decisions.remind_after", d.RemindAfter}, {"policy.decisions.escalate_after", d.EscalateAfter}, {"policy.decisions.expire_after", d.ExpireAfter}} {
		if k.val < 0 {
			ps.add(k.key, "must be ≥ 0 (0 turns it off), not %s", k.val)
		}
	}
	if d.EscalateAfter > 0 && d.ExpireAfter > 0 && d.EscalateAfter > d.ExpireAfter {
		ps.add("policy.decisions.escalate_after", "must not be after policy.decisions.expire_after (%s > %s): the escalation group would never be asked", d.EscalateAfter, d.ExpireAfter)
	}
	for i, a := range c.AdminsEscalation {
		if strings.TrimSpace(a) == "" {
			ps.add(fmt.Sprintf("admins_escalation[%d]", i), "must not be empty")
		}
	}
}

// adminCount counts the distinct people who may decide; anyone reports
// task.AnyAdmin among the admins.
func (c Config) adminCount() (n int, anyone bool) {
	seen := map[string]bool{}
	add := func(name string) {
		if name = strings.TrimSpace(name); name != "" {
			seen[name] = true
		}
	}
	persons := c.Persons()
	for _, a := range c.Admins {
		if a.Name == task.AnyAdmin {
			anyone = true
		}
		add(a.Name)
	}
	for _, id := range c.Slack.Admins {
		if persons[SlackAdmin(id)] == "" {
			add(SlackAdmin(id))
		}
	}
	for _, id := range c.Telegram.Admins {
		if persons[TelegramAdmin(id)] == "" {
			add(TelegramAdmin(id))
		}
	}
	for _, t := range c.Auth.Tokens {
		if t.Role == amp.RoleAdmin {
			add(t.Name)
		}
	}
	return len(seen), anyone
}

func (c Config) validateProtocol(ps *problems) {
	p := c.Protocol
	ps.positive("protocol.ack_timeout.task_dispatch", p.AckTimeout.TaskDispatch)
	ps.positive("protocol.ack_timeout.task_result", p.AckTimeout.TaskResult)
	ps.positive("protocol.ack_timeout.review_request", p.AckTimeout.ReviewRequest)
	ps.positive("protocol.ack_timeout.review_verdict", p.AckTimeout.ReviewVerdict)
	ps.positive("protocol.heartbeat_timeout", p.HeartbeatTimeout)
	if p.MaxRejects < 1 {
		ps.add("protocol.max_rejects", "must be ≥ 1, not %d", p.MaxRejects)
	}
	if p.MaxCIRounds < 1 {
		ps.add("protocol.max_ci_rounds", "must be ≥ 1, not %d", p.MaxCIRounds)
	}
	if !(p.MinConfidence >= 0 && p.MinConfidence <= 1) {
		ps.add("protocol.min_confidence", "must be between 0 and 1, not %v", p.MinConfidence)
	}
}

// githubRepoRE is OWNER/NAME as GitHub allows them.
var githubRepoRE = regexp.MustCompile(`^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$`)

func (c Config) validateSlack(ps *problems) {
	s := c.Slack
	ps.oneOf("slack.mode", s.Mode, SlackModeSocket, SlackModeHTTP)
	ps.url("slack.api_url", s.APIURL)
	if !s.Enabled {
		return
	}
	ps.required("slack.bot_token", s.BotToken, "slack.enabled is true")
	ps.required("slack.channel", s.Channel, "slack.enabled is true")
	switch s.Mode {
	case SlackModeSocket:
		ps.required("slack.app_token", s.AppToken, "slack.mode is socket")
	case SlackModeHTTP:
		ps.required("slack.signing_secret", s.SigningSecret, "slack.mode is http")
	}
}

func (c Config) validateTelegram(ps *problems) {
	t := c.Telegram
	ps.oneOf("telegram.mode", t.Mode, TelegramModePolling, TelegramModeWebhook)
	ps.url("telegram.server_url", t.ServerURL)
	if !t.Enabled {
		return
	}
	ps.required("telegram.token", t.Token, "telegram.enabled is true")
	ps.required("telegram.chat_id", t.ChatID, "telegram.enabled is true")
	if t.Mode == TelegramModeWebhook {
		ps.required("telegram.webhook_secret", t.WebhookSecret, "telegram.mode is webhook")
	}
}

// validateAPI checks the CLI's way to the HTTP API: an absolute http or
// https URL without query or fragment, and a token without spaces.
func (c Config) validateAPI(ps *problems) {
	u, err := url.Parse(c.API.URL)
	switch {
	case err != nil || u.Host == "":
		ps.add("api.url", "must be an absolute URL such as http://127.0.0.1:7480, not %q", c.API.URL)
	case u.Scheme != "http" && u.Scheme != "https":
		ps.add("api.url", "must start with http:// or https://, not %q", c.API.URL)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		ps.add("api.url", "must be a base URL without user, query or fragment, not %q", c.API.URL)
	}
	if strings.ContainsAny(c.API.Token, " \t\r\n") {
		ps.add("api.token", "must not contain spaces or line breaks")
	}
}

// validateSSOTURL accepts a SQLite file path (sqlite://PATH too) or a
// postgres:// URL naming a host.
func validateSSOTURL(ps *problems, raw string) {
	const key = "ssot.url"
	switch {
	case raw == "":
		ps.add(key, "is required: a SQLite file path or a postgres:// URL")
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil {
			// The parser's error quotes the URL, password and all.
			ps.add(key, "is not a valid postgres:// URL (check the port and %%-escape special characters in the password)")
		} else if u.Host == "" {
			ps.add(key, "must name the PostgreSQL host: postgres://USER@HOST:PORT/DATABASE")
		}
	case strings.HasPrefix(raw, "sqlite://"):
		if strings.TrimPrefix(raw, "sqlite://") == "" {
			ps.add(key, "must name the SQLite file after sqlite://")
		}
	case strings.Contains(raw, "://"):
		ps.add(key, "must be a SQLite file path, sqlite://PATH or a postgres:// URL, not %q", maskURLPassword(raw))
	}
}
