package activities

import (
	"context"
	"errors"
)

// Notifiers sends every notice to each of its notifiers (Slack, Telegram).
// Each notifier must skip what it already posted, since a failure of one
// retries the notice for all.
type Notifiers []Notifier

// Notify implements Notifier.
func (ns Notifiers) Notify(ctx context.Context, in NotifyInput) error {
	var errs []error
	for _, n := range ns {
		if err := n.Notify(ctx, in); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
