package amcp

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// limiter is a token bucket per key: limit requests per window, refilled
// continuously. Buckets idle for a window are dropped as they are met.
type limiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// limitState is what the rate-limit headers say.
type limitState struct {
	limit, remaining int
	// retryAfter is the seconds until a request is admitted again; reset
	// those until the bucket is full.
	retryAfter, reset int
}

func newLimiter(limit int, window time.Duration) *limiter {
	return &limiter{limit: limit, window: window, buckets: map[string]*bucket{}}
}

func (l *limiter) take(key string, now time.Time) (bool, limitState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > l.window {
		for k, b := range l.buckets {
			if now.Sub(b.at) > l.window {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	rate := float64(l.limit) / l.window.Seconds()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: float64(l.limit), at: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.at).Seconds(); el > 0 {
		b.tokens = math.Min(float64(l.limit), b.tokens+el*rate)
		b.at = now
	}
	ok := b.tokens >= 1
	if ok {
		b.tokens--
	}
	st := limitState{limit: l.limit, remaining: int(b.tokens)}
	st.reset = int(math.Ceil((float64(l.limit) - b.tokens) / rate))
	if !ok {
		st.retryAfter = max(1, int(math.Ceil((1-b.tokens)/rate)))
	}
	return ok, st
}

// headers sets the rate-limit headers (and Retry-After on a refusal).
func (st limitState) headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(st.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(st.remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(st.reset))
	if st.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(st.retryAfter))
	}
}
