package dashboard

import (
	"context"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

// verifyFor is how long a chain's verification is shown again while its
// head has not moved: a busy task's page, refreshed on every record by
// every viewer, walks its chain at most this often.
const verifyFor = 30 * time.Second

// verifyCacheSize bounds the chains whose verification is kept.
const verifyCacheSize = 1000

type verified struct {
	head ssot.Head
	err  string
	at   time.Time
}

type verifyCache struct {
	mu sync.Mutex
	m  map[string]verified
}

// verify walks the chain of taskID unless it was walked at the same head
// within verifyFor; it returns the problem found (empty when the chain
// holds) and when the walk was made.
func (s *Server) verify(ctx context.Context, taskID string, head ssot.Head) (string, time.Time) {
	now := s.now()
	c := s.verified
	c.mu.Lock()
	v, ok := c.m[taskID]
	c.mu.Unlock()
	if ok && v.head == head && now.Sub(v.at) < verifyFor {
		return v.err, v.at
	}
	v = verified{head: head, at: now}
	if _, err := s.store.Verify(ctx, taskID); err != nil {
		v.err = err.Error()
	}
	c.mu.Lock()
	if len(c.m) >= verifyCacheSize {
		clear(c.m)
	}
	c.m[taskID] = v
	c.mu.Unlock()
	return v.err, v.at
}
