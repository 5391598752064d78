package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// Cookie names.
const (
	sessionCookie = "ampflow_session"
	// preCookie carries the sign-in form's CSRF token before there is a
	// session (double submit).
	preCookie   = "ampflow_signin"
	flashCookie = "ampflow_flash"
)

// viewer is who is looking: the name and role of the token signed in with.
type viewer struct {
	Name string
	// ID is the token's id, when it has one besides its name.
	ID   string
	Role amp.Role
	// Open is true in `ampflow dev` mode: no tokens, the local admin.
	Open bool
	// session is the cookie's value, which the CSRF token is bound to.
	session string
}

// Admin reports whether the viewer may decide, cancel and replan.
func (v viewer) Admin() bool { return v.Open || v.Role == amp.RoleAdmin }

// meshNames are the names the viewer reads the mesh as: nil for an
// admin, who reads every event; else its token's name and id, as the
// mesh's own search has them.
func (v viewer) meshNames() []string {
	switch {
	case v.Admin():
		return nil
	case v.ID != "" && v.ID != v.Name:
		return []string{v.Name, v.ID}
	}
	return []string{v.Name}
}

type viewerKey struct{}

// viewerFrom is the viewer a page is rendered for, which panelPage puts
// in the context its Panel reads with.
func viewerFrom(ctx context.Context) (viewer, bool) {
	v, ok := ctx.Value(viewerKey{}).(viewer)
	return v, ok
}

// token is a configured token known by a fingerprint of its hash, which
// is what a session cookie names: removing the token from the config ends
// its sessions, and the cookie never holds the token.
type token struct {
	sum  [sha256.Size]byte
	fp   string
	role amp.Role
	name string
	id   string
}

type auth struct {
	tokens   []token
	openName string
	ttl      time.Duration
	now      func() time.Time
	// key signs sessions, sign-in forms and flashes. With tokens it is
	// derived from them, so every worker of one config accepts the
	// others' sessions and a changed token list ends them all.
	key []byte
}

func newAuth(in []config.AuthToken, openName string, ttl time.Duration, now func() time.Time) *auth {
	a := &auth{openName: openName, ttl: ttl, now: now}
	if a.openName == "" {
		a.openName = "local"
	}
	mac := hmac.New(sha256.New, []byte("ampflow dashboard session key v1"))
	var secrets []string
	for _, t := range in {
		if t.Token == "" {
			continue
		}
		sum := sha256.Sum256([]byte(t.Token))
		fpSum := sha256.Sum256(append([]byte("fingerprint:"), sum[:]...))
		a.tokens = append(a.tokens, token{sum: sum, fp: hex.EncodeToString(fpSum[:8]), role: t.Role, name: t.Name, id: t.ID})
		secrets = append(secrets, t.Token)
	}
	if len(secrets) == 0 {
		secrets = []string{randomString(32)}
	}
	slices.Sort(secrets)
	for _, s := range secrets {
		mac.Write([]byte(s))
		mac.Write([]byte{0})
	}
	a.key = mac.Sum(nil)
	return a
}

func (a *auth) open() bool { return len(a.tokens) == 0 }

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (a *auth) sign(parts ...string) string {
	mac := hmac.New(sha256.New, a.key)
	for _, p := range parts {
		mac.Write([]byte(p))
		mac.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// match finds the configured token presented, comparing every one in
// constant time.
func (a *auth) match(presented string) (token, bool) {
	sum := sha256.Sum256([]byte(strings.TrimSpace(presented)))
	found := -1
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].sum[:]) == 1 && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return token{}, false
	}
	return a.tokens[found], true
}

// newSession is a cookie value for token t: its fingerprint, expiry and a
// nonce, signed.
func (a *auth) newSession(t token) string {
	body := t.fp + "." + strconv.FormatInt(a.now().Add(a.ttl).Unix(), 10) + "." + randomString(12)
	return body + "." + a.sign("session", body)
}

// session reads a cookie value: the token it names must still be
// configured, and the role and name come from the config, not the cookie.
func (a *auth) session(value string) (viewer, bool) {
	if a.open() {
		return viewer{Name: a.openName, Role: amp.RoleAdmin, Open: true, session: "open"}, true
	}
	i := strings.LastIndexByte(value, '.')
	if i < 0 {
		return viewer{}, false
	}
	body, sig := value[:i], value[i+1:]
	if !hmac.Equal([]byte(sig), []byte(a.sign("session", body))) {
		return viewer{}, false
	}
	parts := strings.Split(body, ".")
	if len(parts) != 3 {
		return viewer{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || a.now().Unix() >= exp {
		return viewer{}, false
	}
	for _, t := range a.tokens {
		if t.fp == parts[0] {
			return viewer{Name: t.name, ID: t.id, Role: t.role, session: value}, true
		}
	}
	return viewer{}, false
}

// csrf is the token every form of a session carries.
func (a *auth) csrf(v viewer) string { return a.sign("csrf", v.session) }

func (a *auth) checkCSRF(v viewer, got string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(a.csrf(v)))
}

// flash signs a message for the next page.
func (a *auth) flash(msg string) string {
	enc := base64.RawURLEncoding.EncodeToString([]byte(msg))
	return enc + "." + a.sign("flash", enc)
}

func (a *auth) readFlash(value string) string {
	enc, sig, ok := strings.Cut(value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.sign("flash", enc))) {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return ""
	}
	return string(b)
}
