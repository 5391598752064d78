package workers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Lease is a lease in the store the workers share; *ssot.DB implements
// it. Acquire takes or renews name for holder for ttl and reports whether
// holder holds it; Release gives it up.
type Lease interface {
	Acquire(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, name, holder string) error
}

// Lease timing of the bots' pollers: a holder that dies is replaced once
// its lease runs out and another worker next tries, within LeaseTTL +
// LeaseRetry (25 s).
const (
	LeaseTTL   = 20 * time.Second
	LeaseRetry = 5 * time.Second
)

// Names of the leases of jobs that run on one worker at a time.
const (
	LeaseSlackSocket     = "slack.socket_mode"
	LeaseTelegramPolling = "telegram.long_polling"
)

// Leader runs a job on one worker at a time: the worker that holds the
// lease Name. Its fields are set before Run.
type Leader struct {
	Lease Lease
	Name  string
	// Holder names this worker; it must differ between workers.
	Holder string
	// TTL is how long a lease lasts unrenewed (LeaseTTL when zero); the
	// holder renews it every TTL/3.
	TTL time.Duration
	// Retry is how often a worker that does not hold the lease tries to
	// take it (LeaseRetry when zero).
	Retry time.Duration
	Log   *slog.Logger
}

// NewHolder names this process among the workers: host, pid and a
// random part, so a restarted process never passes for its predecessor.
func NewHolder() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Run tries to take the lease until ctx ends. While it holds the lease it
// runs job, renewing the lease every TTL/3; it cancels job's context, and
// waits for job to return, when the lease is lost or a renewal fails or
// takes longer than TTL/3, so the job has stopped before another worker
// can take the lease. When ctx ends it releases the lease, so another
// worker takes over at its next try. A job that returns by itself gives
// the lease up: with an error, Run returns that error; without, Run tries
// again after Retry.
func (l *Leader) Run(ctx context.Context, job func(context.Context) error) error {
	if l.Lease == nil || l.Name == "" || l.Holder == "" {
		return errors.New("leader: Lease, Name and Holder are required")
	}
	ttl, retry := l.TTL, l.Retry
	if ttl <= 0 {
		ttl = LeaseTTL
	}
	if retry <= 0 {
		retry = LeaseRetry
	}
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("lease", l.Name, "holder", l.Holder)
	for {
		held, err := l.acquire(ctx, ttl)
		if ctx.Err() != nil {
			l.release(log)
			return nil
		}
		if err != nil {
			log.Warn("taking the lease", "err", err)
		}
		if held {
			log.Info("lease taken: starting")
			if err := l.hold(ctx, job, ttl, log); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		if !sleep(ctx, retry) {
			return nil
		}
	}
}

// hold runs job while the lease is held. It returns job's own error, if
// job ended by itself with one.
func (l *Leader) hold(ctx context.Context, job func(context.Context) error, ttl time.Duration, log *slog.Logger) error {
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- job(jctx) }()
	renew := time.NewTicker(ttl / 3)
	defer renew.Stop()
	for {
		select {
		case err := <-done:
			l.release(log)
			if err != nil && ctx.Err() == nil {
				log.Error("job failed: lease released", "err", err)
				return fmt.Errorf("%s: %w", l.Name, err)
			}
			log.Info("job ended: lease released")
			return nil
		case <-ctx.Done():
			<-done
			l.release(log)
			return nil
		case <-renew.C:
			held, err := l.acquire(ctx, ttl)
			if held && err == nil {
				continue
			}
			if ctx.Err() != nil {
				continue // the ctx.Done case stops the job
			}
			if err != nil {
				log.Warn("renewing the lease failed: stopping", "err", err)
			} else {
				log.Warn("lease lost: stopping")
			}
			cancel()
			<-done
			if err != nil {
				// Whether the lease is still ours is unknown; give it up
				// if it is, so nobody waits for it to expire.
				l.release(log)
			}
			return nil
		}
	}
}

// acquire bounds one try to TTL/3, so a hung database cannot keep a job
// running past the lease's expiry: the next renewal would be due anyway.
func (l *Leader) acquire(ctx context.Context, ttl time.Duration) (bool, error) {
	actx, cancel := context.WithTimeout(ctx, ttl/3)
	defer cancel()
	return l.Lease.Acquire(actx, l.Name, l.Holder, ttl)
}

func (l *Leader) release(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Lease.Release(ctx, l.Name, l.Holder); err != nil {
		log.Warn("releasing the lease", "err", err)
	}
}

// sleep waits d and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
