package dashboard

import (
	"html/template"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/ampflow/ampflow/integrations/httpapi"
)

// maxForm bounds a form body.
const maxForm = 64 << 10

// securityHeaders are set on every answer: no framing, no inline script,
// nothing loaded from elsewhere.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// guarded sets the security headers and, in open mode, refuses a Host
// that is not loopback: a page of another site reached through DNS
// rebinding finds nothing.
func (s *Server) guarded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		if s.auth.open() && !httpapi.LoopbackHost(r.Host) {
			http.Error(w, "with no auth.tokens configured the dashboard answers only to localhost, 127.0.0.1 or [::1]", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// crossSite reports a request another site's page made: the browser says
// so in Sec-Fetch-Site, or its Origin is not this host.
func crossSite(r *http.Request, allowNavigation bool) bool {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin":
	case "none":
		if !allowNavigation {
			return true
		}
	default:
		if !allowNavigation || r.Header.Get("Sec-Fetch-Mode") != "navigate" {
			return true
		}
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "null" && !sameOrigin(origin, r) {
		return true
	}
	return r.Header.Get("Origin") == "null" && r.Method != http.MethodGet
}

// page serves a GET page to a signed-in viewer; others go to sign-in.
// Fragments and the event stream are refused to other sites.
func (s *Server) page(h func(http.ResponseWriter, *http.Request, viewer)) http.Handler {
	return s.guarded(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub := r.Header.Get("X-Dashboard-Fragment") != "" || r.URL.Path == "/events" || strings.HasSuffix(r.URL.Path, "/transcript/events")
		if crossSite(r, !sub) {
			http.Error(w, "cross-site request refused", http.StatusForbidden)
			return
		}
		v, ok := s.viewerOf(r)
		if !ok {
			if sub {
				http.Error(w, "sign in first", http.StatusUnauthorized)
				return
			}
			if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
				// A link from another site (a chat message) arrives
				// without the SameSite=Strict cookie; the same request
				// made again from this site's own page carries it.
				again(w, localPath(r.URL.RequestURI(), "/"))
				return
			}
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, v)
	}))
}

// again answers with a page that asks for uri once more, from this site.
func again(w http.ResponseWriter, uri string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	u := template.HTMLEscapeString(uri)
	_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=` + u +
		`"><title>ampflow</title></head><body><p><a href="` + u + `">Continue to the dashboard</a></p></body></html>`))
}

// form serves a state-changing POST: same-origin only, a form body, the
// session's CSRF token, and for admin forms an admin.
func (s *Server) form(admin bool, h func(http.ResponseWriter, *http.Request, viewer)) http.Handler {
	return s.guarded(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossSite(r, false) {
			http.Error(w, "cross-site request refused", http.StatusForbidden)
			return
		}
		v, ok := s.viewerOf(r)
		if !ok {
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		if !parseForm(w, r) {
			return
		}
		if !s.auth.checkCSRF(v, r.PostForm.Get("csrf")) {
			http.Error(w, "the form's CSRF token is missing or not this session's: reload the page", http.StatusForbidden)
			return
		}
		if admin && !v.Admin() {
			http.Error(w, v.Name+" is "+string(v.Role)+": only admins decide, cancel and replan", http.StatusForbidden)
			return
		}
		h(w, r, v)
	}))
}

// parseForm reads a bounded urlencoded body; it answers the error itself.
func parseForm(w http.ResponseWriter, r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		http.Error(w, "a form body must be application/x-www-form-urlencoded", http.StatusUnsupportedMediaType)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "reading the form: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func (s *Server) viewerOf(r *http.Request) (viewer, bool) {
	if s.auth.open() {
		return s.auth.session("")
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return viewer{}, false
	}
	return s.auth.session(c.Value)
}

// secure reports whether cookies must be Secure: the request came over
// TLS, here or at a proxy in front.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
}

// setFlash keeps a message for the next page the browser shows.
func (s *Server) setFlash(w http.ResponseWriter, r *http.Request, msg string) {
	setCookie(w, r, flashCookie, s.auth.flash(msg), 60)
}

// takeFlash reads and clears the message setFlash kept.
func (s *Server) takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	setCookie(w, r, flashCookie, "", -1)
	return s.auth.readFlash(c.Value)
}

// localPath keeps a redirect on this site: a path, never //host. A
// browser drops tabs and newlines from a URL and reads a backslash as a
// slash, so /<tab>/host and /\host lead elsewhere: any control byte or
// backslash is refused, in the path as sent and as a later hop may decode
// it, and so is a path that starts with // once its dot segments are
// resolved (/.//host).
func localPath(p, fallback string) string {
	if !strings.HasPrefix(p, "/") || unsafeURLBytes(p) {
		return fallback
	}
	raw, _, _ := strings.Cut(p, "?")
	raw, _, _ = strings.Cut(raw, "#")
	dec, err := url.PathUnescape(raw)
	if err != nil || unsafeURLBytes(dec) {
		return fallback
	}
	for _, q := range []string{raw, dec} {
		if strings.HasPrefix(removeDotSegments(q), "//") {
			return fallback
		}
	}
	return p
}

// unsafeURLBytes reports a control byte (below 0x20, or 0x7f) or a
// backslash anywhere in s.
func unsafeURLBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return true
		}
	}
	return false
}

// removeDotSegments resolves . and .. in an absolute path the way a
// browser does (RFC 3986 5.2.4), keeping empty segments: /a/..//b is //b.
func removeDotSegments(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		last := i == len(segs)-1
		switch seg {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
			continue
		}
		if last {
			out = append(out, "")
		}
	}
	return "/" + strings.Join(out, "/")
}

// sameOrigin reports whether origin names the host r was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(withPort(u.Host, u.Scheme), withPort(r.Host, u.Scheme))
}

func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
}
