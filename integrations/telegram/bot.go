// Package telegram posts ampflow's decisions to a Telegram chat and takes
// the admins' answers from inline buttons, by long polling or a webhook.
//
// Rendering (render.go) is pure; transport is in transport.go; what a
// button or a reply does is in interact.go.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Channel is the channel name recorded with decisions taken in Telegram.
const Channel = "telegram"

// WebhookPath is where webhook mode expects Telegram's updates; give it
// to setWebhook with the secret_token of telegram.webhook_secret.
const WebhookPath = "/telegram/webhook"

// Decider is what the bot needs of the task workflows.
type Decider = chat.Decider

// botAPI is the part of the Bot API the bot calls outside the update loop.
type botAPI interface {
	SendMessage(ctx context.Context, params *tgbot.SendMessageParams) (*models.Message, error)
	EditMessageText(ctx context.Context, params *tgbot.EditMessageTextParams) (*models.Message, error)
	AnswerCallbackQuery(ctx context.Context, params *tgbot.AnswerCallbackQueryParams) (bool, error)
}

// Bot is the Telegram integration: a Notifier for the task workflows, and
// the receiver of admins' button presses and note replies.
type Bot struct {
	cfg  config.Telegram
	log  *slog.Logger
	tg   *tgbot.Bot
	api  botAPI
	chat any
	core *chat.Core[msgRef]

	now        func() time.Time
	sleep      func(context.Context, time.Duration) error
	maxRetries int
	maxWait    time.Duration

	seen chat.Dedupe
}

type options struct {
	client      *http.Client
	pollTimeout time.Duration
}

// Option configures a Bot.
type Option func(*options)

// WithHTTPClient sets the HTTP client for the Bot API and the long-poll
// timeout; the client's own timeout must exceed the poll timeout.
func WithHTTPClient(c *http.Client, pollTimeout time.Duration) Option {
	return func(o *options) { o.client, o.pollTimeout = c, pollTimeout }
}

// New returns a Bot for the configured chat and admins, keeping its state
// (posted decisions, button tokens, note prompts, notices posted) in the
// SSOT every worker shares: any worker then answers any click and nothing
// is posted twice. It makes no network calls; Run checks the token.
func New(cfg config.Telegram, dec Decider, log *slog.Logger, db *ssot.DB, opts ...Option) (*Bot, error) {
	if cfg.Token == "" {
		return nil, errors.New("telegram: token is required")
	}
	if cfg.ChatID == "" {
		return nil, errors.New("telegram: chat_id is required")
	}
	if dec == nil {
		return nil, errors.New("telegram: a Decider is required")
	}
	if log == nil {
		log = slog.Default()
	}
	if db == nil {
		return nil, errors.New("telegram: the SSOT is required for the bot's state")
	}
	b := &Bot{
		cfg:        cfg,
		log:        log.With("integration", Channel),
		chat:       chatID(cfg.ChatID),
		now:        time.Now,
		sleep:      chat.Sleep,
		maxRetries: 3,
		maxWait:    time.Minute,
	}
	b.core = &chat.Core[msgRef]{
		Channel: Channel, Platform: "Telegram", By: config.TelegramAdmin,
		Admins: chat.AdminSet(cfg.Admins), Escalation: cfg.AdminsEscalation, Poster: poster{b}, Decider: dec,
		Log: b.log, Now: b.now,
		// Decide runs while a callback query waits for its answer, which
		// must come in time.
		DecideTimeout: 8 * time.Second,
		State:         chat.NewSQLState[msgRef](db, Channel, b.log),
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tgOpts := []tgbot.Option{
		tgbot.WithSkipGetMe(),
		tgbot.WithDefaultHandler(b.onUpdate),
		tgbot.WithAllowedUpdates(tgbot.AllowedUpdates{"message", "callback_query"}),
		// The library's messages never carry the token; they can be logged.
		tgbot.WithErrorsHandler(func(err error) { b.log.Warn("bot api", "err", err) }),
	}
	if cfg.ServerURL != "" {
		tgOpts = append(tgOpts, tgbot.WithServerURL(strings.TrimSuffix(cfg.ServerURL, "/")))
	}
	if o.client != nil {
		tgOpts = append(tgOpts, tgbot.WithHTTPClient(o.pollTimeout, o.client))
	}
	tg, err := tgbot.New(cfg.Token, tgOpts...)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	b.tg, b.api = tg, tg
	return b, nil
}

// chatID reads a numeric chat id as a number, anything else (@channel)
// as it is.
func chatID(s string) any {
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		return n
	}
	return strings.TrimSpace(s)
}

// isAdmin reports whether a Telegram user may decide; 0 is no user.
func (b *Bot) isAdmin(userID string) bool { return userID != "0" && b.core.IsAdmin(userID) }

// mayDecide reports whether userID may press the button token: see
// chat.Core.MayDecide.
func (b *Bot) mayDecide(userID, token string) bool {
	return userID != "0" && b.core.MayDecide(userID, token)
}

// call runs one Bot API call, waiting out a 429 for the retry_after
// Telegram names, a bounded number of times.
func (b *Bot) call(ctx context.Context, op string, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		var rl *tgbot.TooManyRequestsError
		if !errors.As(err, &rl) || attempt >= b.maxRetries || time.Duration(rl.RetryAfter)*time.Second > b.maxWait {
			if err != nil {
				return fmt.Errorf("telegram %s: %w", op, err)
			}
			return nil
		}
		wait := time.Duration(rl.RetryAfter) * time.Second
		b.log.Warn("rate limited", "op", op, "retry_after", wait, "attempt", attempt+1)
		if err := b.sleep(ctx, wait); err != nil {
			return fmt.Errorf("telegram %s: waiting out rate limit: %w", op, err)
		}
	}
}
