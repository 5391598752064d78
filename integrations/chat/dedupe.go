package chat

import (
	"context"
	"sync"
	"time"
)

// DedupeTTL is how long Dedupe remembers a key.
const DedupeTTL = 15 * time.Minute

// Dedupe remembers keys of interactions already taken for a while, so a
// redelivered one has no second effect. The zero value is ready.
type Dedupe struct {
	mu   sync.Mutex
	keys map[string]time.Time
}

// First reports whether key is new, and remembers it.
func (d *Dedupe) First(key string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.keys == nil {
		d.keys = map[string]time.Time{}
	}
	for k, at := range d.keys {
		if now.Sub(at) > DedupeTTL {
			delete(d.keys, k)
		}
	}
	if _, ok := d.keys[key]; ok {
		return false
	}
	d.keys[key] = now
	return true
}

// Sleep waits d, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
