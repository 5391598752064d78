package dashboard

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Failed sign-ins are throttled per client address: after
// MaxFailedSignIns within SignInWindow, sign-ins from that address are
// refused, right token or wrong, until the window has passed.
const (
	MaxFailedSignIns = 5
	SignInWindow     = 15 * time.Minute
)

// maxSignInClients bounds the addresses remembered.
const maxSignInClients = 10000

type failedSignIns struct {
	mu  sync.Mutex
	by  map[string]failures
	now func() time.Time
}

type failures struct {
	n     int
	first time.Time
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// blocked returns how long r's address must wait before signing in again;
// zero when it may now.
func (f *failedSignIns) blocked(r *http.Request) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.by[clientAddr(r)]
	if !ok || fl.n < MaxFailedSignIns {
		return 0
	}
	return max(0, fl.first.Add(SignInWindow).Sub(f.now()))
}

// failed counts a failed sign-in from r's address.
func (f *failedSignIns) failed(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if f.by == nil || len(f.by) >= maxSignInClients {
		for k, fl := range f.by {
			if now.Sub(fl.first) >= SignInWindow {
				delete(f.by, k)
			}
		}
		if f.by == nil {
			f.by = map[string]failures{}
		}
	}
	addr := clientAddr(r)
	fl := f.by[addr]
	if fl.n == 0 || now.Sub(fl.first) >= SignInWindow {
		fl = failures{first: now}
	}
	fl.n++
	f.by[addr] = fl
}
