package telegram

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/ampflow/ampflow/config"
)

// Run runs the bot until ctx ends. It checks the token (getMe), posts the
// pending decisions that have no message here (a notice lost in a crash),
// then takes updates: by long polling, or in webhook mode from Handler.
// Webhook mode needs Run too: it processes what Handler queues.
func (b *Bot) Run(ctx context.Context) error {
	me, err := b.tg.GetMe(ctx)
	if err != nil {
		return fmt.Errorf("telegram getMe: %w", err)
	}
	b.log.Info("connected", "bot", me.Username, "mode", b.mode())
	if err := b.core.Repost(ctx); err != nil {
		b.log.Error("re-posting pending decisions", "err", err)
	}
	if b.mode() == config.TelegramModeWebhook {
		b.tg.StartWebhook(ctx)
	} else {
		b.tg.Start(ctx)
	}
	return nil
}

func (b *Bot) mode() string {
	if b.cfg.Mode == config.TelegramModeWebhook {
		return config.TelegramModeWebhook
	}
	return config.TelegramModePolling
}

// Handler returns the webhook handler; mount it at WebhookPath. It checks
// X-Telegram-Bot-Api-Secret-Token itself and answers 401 on a mismatch:
// the library's handler would answer 200 and drop the update silently.
func (b *Bot) Handler() http.Handler {
	inner := b.tg.WebhookHandler()
	want := sha256.Sum256([]byte(b.cfg.WebhookSecret))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// Comparing digests keeps the time independent of the length too.
		got := sha256.Sum256([]byte(r.Header.Get("X-Telegram-Bot-Api-Secret-Token")))
		if b.cfg.WebhookSecret == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			b.log.Warn("webhook refused: wrong secret token", "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		inner(w, r)
	})
}
