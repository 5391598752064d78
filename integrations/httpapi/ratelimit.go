package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

// DefaultRate is the writing requests one token may make a minute when
// Options.Rate is zero.
const DefaultRate = 600

// maxBuckets bounds the limiter's memory: past it, callers not yet seen
// share one bucket until idle ones are dropped.
const maxBuckets = 1 << 16

// Limiter is a token bucket per key: limit requests per window, refilled
// continuously. Buckets idle for a window are dropped as they are met; past
// maxBuckets, keys not yet seen share one bucket. The API limits each
// token's writing requests with one; a system may keep its own (the
// contracts' per-key rate).
type Limiter struct {
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

// LimitState is what a limiter's answer says, as the X-RateLimit headers
// do: the limit, the requests left, the seconds until a refused request is
// admitted again (RetryAfter, 0 when admitted) and until the bucket is
// full (Reset).
type LimitState struct {
	Limit, Remaining, RetryAfter, Reset int
}

// NewLimiter is a Limiter of limit requests a window.
func NewLimiter(limit int, window time.Duration) *Limiter {
	return &Limiter{limit: limit, window: window, buckets: map[string]*bucket{}}
}

// Take spends one request of key's bucket, and says whether it was
// admitted and where the bucket stands.
func (l *Limiter) Take(key string, now time.Time) (bool, LimitState) {
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
		if len(l.buckets) >= maxBuckets {
			key = "\x00overflow"
			b = l.buckets[key]
		}
		if b == nil {
			b = &bucket{tokens: float64(l.limit), at: now}
			l.buckets[key] = b
		}
	}
	if el := now.Sub(b.at).Seconds(); el > 0 {
		b.tokens = math.Min(float64(l.limit), b.tokens+el*rate)
		b.at = now
	}
	ok := b.tokens >= 1
	if ok {
		b.tokens--
	}
	st := LimitState{Limit: l.limit, Remaining: int(b.tokens), Reset: int(math.Ceil((float64(l.limit) - b.tokens) / rate))}
	if !ok {
		st.RetryAfter = max(1, int(math.Ceil((1-b.tokens)/rate)))
	}
	return ok, st
}

// Headers sets the X-RateLimit headers of st, and Retry-After when the
// request was refused.
func (st LimitState) Headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(st.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(st.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(st.Reset))
	if st.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(st.RetryAfter))
	}
}

// writing reports whether a route's pattern ("METHOD /path") changes
// something: the routes the rate limit applies to.
func writing(pattern string) bool {
	method, _, _ := strings.Cut(pattern, " ")
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// limited serves next unless key's writing requests are over the rate:
// then 429 rate_limited with Retry-After, having done nothing. key reads
// who is asking from the request.
func (s *Server) limited(key func(*http.Request) string, next http.Handler) http.Handler {
	if s.limit == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, st := s.limit.Take(key(r), s.now()); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(st.RetryAfter))
			s.writeError(w, r, task.Errorf(task.CodeRateLimited, "more than %d writing requests a minute from this token (http.rate); try again in %d s",
				st.Limit, st.RetryAfter))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenKey is the bucket of an authenticated request: its token's name,
// unique among the tokens (the open caller's in open mode).
func tokenKey(r *http.Request) string { return "token:" + callerOf(r).name }

// credentialKey is the bucket of a request to an Open route, which checks
// its own credentials: the credential it presents (hashed), else its
// client address.
func credentialKey(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		sum := sha256.Sum256([]byte(a))
		return "cred:" + hex.EncodeToString(sum[:12])
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// rateLimitAnswer is the 429 of a writing route in the OpenAPI document.
func rateLimitAnswer() map[string]any {
	return map[string]any{
		"description": "More writing requests a minute from this token than http.rate allows (code rate_limited); nothing was done. Retry-After says when to try again.",
		"headers": map[string]any{"Retry-After": map[string]any{
			"description": "Seconds until a request from this token is taken again.", "schema": map[string]any{"type": "integer"}}},
		"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
	}
}
