package dashboard

import (
	"crypto/hmac"
	"fmt"
	"net/http"
	"strconv"
)

type signInData struct {
	Next, CSRF, Error string
}

// signInPage asks for an API token. Its form carries a token that must
// match the cookie set with it, so another site cannot sign a browser in
// under the other site's token.
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"), "/")
	if s.auth.open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.renderSignIn(w, r, http.StatusOK, next, "")
}

func (s *Server) renderSignIn(w http.ResponseWriter, r *http.Request, status int, next, msg string) {
	pre := randomString(18)
	setCookie(w, r, preCookie, pre, 600)
	s.render(w, r, status, "signin", pageData{Title: "Sign in", Data: signInData{Next: next, CSRF: pre, Error: msg}})
}

// signIn exchanges an API token for a session cookie.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if crossSite(r, false) {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	if !parseForm(w, r) {
		return
	}
	next := localPath(r.PostForm.Get("next"), "/")
	if s.auth.open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(preCookie)
	if err != nil || c.Value == "" || !hmac.Equal([]byte(c.Value), []byte(r.PostForm.Get("csrf"))) {
		s.renderSignIn(w, r, http.StatusForbidden, next, "The sign-in form expired or came from elsewhere; try again.")
		return
	}
	if wait := s.signIns.blocked(r); wait > 0 {
		s.log.Warn("dashboard sign-in throttled", "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		s.renderSignIn(w, r, http.StatusTooManyRequests, next,
			fmt.Sprintf("Too many failed sign-ins from this address; try again in %d minutes.", int(wait.Minutes())+1))
		return
	}
	t, ok := s.auth.match(r.PostForm.Get("token"))
	if !ok {
		s.signIns.failed(r)
		s.log.Info("dashboard sign-in refused", "remote", r.RemoteAddr)
		s.renderSignIn(w, r, http.StatusUnauthorized, next, "That token is not one of this server's auth.tokens.")
		return
	}
	setCookie(w, r, preCookie, "", -1)
	setCookie(w, r, sessionCookie, s.auth.newSession(t), int(s.auth.ttl.Seconds()))
	s.log.Info("dashboard sign-in", "name", t.name, "role", t.role)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut ends the browser's session.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, v viewer) {
	setCookie(w, r, sessionCookie, "", -1)
	if v.Open {
		s.setFlash(w, r, "Open mode (no auth.tokens): the local user is always signed in.")
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}
