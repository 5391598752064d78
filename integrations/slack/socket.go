package slack

import (
	"context"
	"errors"
	"fmt"

	"github.com/ampflow/ampflow/config"
	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// Run runs the bot until ctx ends. It first posts the pending decisions
// that have no message here (a notice lost in a crash); then, in socket
// mode, it takes interactions over Socket Mode. In HTTP mode Handler takes
// them and Run only waits. It returns after the work it started is done.
func (b *Bot) Run(ctx context.Context) error {
	if err := b.core.Repost(ctx); err != nil {
		b.log.Error("re-posting pending decisions", "err", err)
	}
	var err error
	if b.cfg.Mode == config.SlackModeHTTP {
		<-ctx.Done()
	} else {
		err = b.runSocket(ctx)
	}
	b.work.Wait()
	return err
}

func (b *Bot) runSocket(ctx context.Context) error {
	if b.cfg.AppToken == "" {
		return errors.New("slack socket mode: app_token is required")
	}
	sm := socketmode.New(b.client)
	errc := make(chan error, 1)
	go func() { errc <- sm.RunContext(ctx) }()
	for {
		select {
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slack socket mode: %w", err)
		case ev := <-sm.Events:
			b.socketEvent(ev, sm)
		}
	}
}

// acker acknowledges a Socket Mode envelope.
type acker interface {
	Ack(req socketmode.Request, payload ...any) error
}

// socketEvent acknowledges an envelope first, then starts its work.
func (b *Bot) socketEvent(ev socketmode.Event, a acker) {
	switch ev.Type {
	case socketmode.EventTypeInteractive:
		if ev.Request == nil {
			return
		}
		cb, ok := ev.Data.(slackapi.InteractionCallback)
		if !ok {
			_ = a.Ack(*ev.Request)
			return
		}
		ack, work := b.interaction(cb)
		if err := a.Ack(*ev.Request, ack); err != nil {
			b.log.Error("acknowledging interaction", "err", err)
		}
		if work != nil {
			b.goWork(work)
		}
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand:
		if ev.Request != nil {
			_ = a.Ack(*ev.Request)
		}
	case socketmode.EventTypeConnected:
		b.log.Info("socket mode connected")
	case socketmode.EventTypeConnectionError, socketmode.EventTypeIncomingError:
		b.log.Warn("socket mode trouble", "type", ev.Type, "detail", fmt.Sprint(ev.Data))
	case socketmode.EventTypeInvalidAuth:
		b.log.Error("socket mode: invalid auth; check slack.app_token")
	}
}
