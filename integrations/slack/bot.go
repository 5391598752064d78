// Package slack posts ampflow's decisions to a Slack channel and takes the
// admins' answers from its buttons, over Socket Mode or an HTTP endpoint.
//
// Rendering (render.go) is pure; transport lives in socket.go and http.go;
// what a click does is in interact.go, who may click in auth.go.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Channel is the channel name recorded with decisions taken in Slack.
const Channel = "slack"

// InteractionsPath is where the HTTP mode expects Slack's interaction
// requests; set it as the app's Interactivity Request URL.
const InteractionsPath = "/slack/interactions"

// Decider is what the bot needs of the task workflows.
type Decider = chat.Decider

// webAPI is the part of Slack's Web API the bot calls.
type webAPI interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slackapi.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slackapi.MsgOption) (string, string, string, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slackapi.MsgOption) (string, error)
	OpenViewContext(ctx context.Context, triggerID string, view slackapi.ModalViewRequest) (*slackapi.ViewResponse, error)
}

// Bot is the Slack integration: a Notifier for the task workflows, and
// the receiver of admins' clicks.
type Bot struct {
	cfg    config.Slack
	log    *slog.Logger
	client *slackapi.Client
	api    webAPI
	core   *chat.Core[msgRef]

	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	// maxRetries and maxWait bound how rate limits are waited out.
	maxRetries int
	maxWait    time.Duration

	seen chat.Dedupe
	work sync.WaitGroup
}

// Option configures a Bot.
type Option func(*Bot)

// WithHTTPClient sets the HTTP client for Slack's Web API.
func WithHTTPClient(c *http.Client) Option {
	return func(b *Bot) { b.client = newClient(b.cfg, c) }
}

func newClient(cfg config.Slack, hc *http.Client) *slackapi.Client {
	opts := []slackapi.Option{slackapi.OptionAPIURL(apiURL(cfg.APIURL))}
	if cfg.AppToken != "" {
		opts = append(opts, slackapi.OptionAppLevelToken(cfg.AppToken))
	}
	if hc != nil {
		opts = append(opts, slackapi.OptionHTTPClient(hc))
	}
	return slackapi.New(cfg.BotToken, opts...)
}

// apiURL makes sure the base URL ends in a slash: slack-go appends method
// names to it.
func apiURL(u string) string {
	if u == "" {
		return slackapi.APIURL
	}
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// New returns a Bot for the configured channel and admins, keeping its
// state (posted decisions, button tokens, notices posted) in the SSOT
// every worker shares: any worker then answers any click and nothing is
// posted twice. It makes no network calls.
func New(cfg config.Slack, dec Decider, log *slog.Logger, db *ssot.DB, opts ...Option) (*Bot, error) {
	if cfg.BotToken == "" {
		return nil, errors.New("slack: bot_token is required")
	}
	if cfg.Channel == "" {
		return nil, errors.New("slack: channel is required")
	}
	if dec == nil {
		return nil, errors.New("slack: a Decider is required")
	}
	if log == nil {
		log = slog.Default()
	}
	if db == nil {
		return nil, errors.New("slack: the SSOT is required for the bot's state")
	}
	b := &Bot{
		cfg:        cfg,
		log:        log.With("integration", Channel),
		now:        time.Now,
		sleep:      chat.Sleep,
		maxRetries: 3,
		maxWait:    time.Minute,
	}
	b.core = &chat.Core[msgRef]{
		Channel: Channel, Platform: "Slack", By: config.SlackAdmin,
		Admins: chat.AdminSet(cfg.Admins), Escalation: cfg.AdminsEscalation, Poster: poster{b}, Decider: dec,
		Log: b.log, Now: b.now,
		DecideTimeout: 20 * time.Second, // a click's Decide call
		State:         chat.NewSQLState[msgRef](db, Channel, b.log),
	}
	b.client = newClient(cfg, nil)
	for _, o := range opts {
		o(b)
	}
	b.api = b.client
	return b, nil
}

// call runs one Web API call, waiting out a rate limit for the time Slack
// names, a bounded number of times.
func (b *Bot) call(ctx context.Context, op string, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		var rl *slackapi.RateLimitedError
		if !errors.As(err, &rl) || attempt >= b.maxRetries || rl.RetryAfter > b.maxWait {
			if err != nil {
				return fmt.Errorf("slack %s: %w", op, err)
			}
			return nil
		}
		b.log.Warn("rate limited", "op", op, "retry_after", rl.RetryAfter, "attempt", attempt+1)
		if err := b.sleep(ctx, rl.RetryAfter); err != nil {
			return fmt.Errorf("slack %s: waiting out rate limit: %w", op, err)
		}
	}
}

// goWork runs fn after the platform has been acknowledged. It gets its own
// deadline: the request that brought it has ended by then.
func (b *Bot) goWork(fn func(ctx context.Context)) {
	b.work.Add(1)
	go func() {
		defer b.work.Done()
		ctx, cancel := context.WithTimeout(context.Background(), b.core.DecideTimeout+30*time.Second)
		defer cancel()
		fn(ctx)
	}()
}
