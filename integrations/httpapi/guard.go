package httpapi

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/ampflow/ampflow/amp/task"
)

// Codes of the checks every API request passes before its route.
const (
	codeUnsupportedMediaType task.Code = "unsupported_media_type"
	codeMisdirected          task.Code = "misdirected_request"
)

// guard refuses what a web page could send the API from a browser: in
// open mode a Host that is not loopback (DNS rebinding), an Origin that is
// not the API's own (cross-site requests), and a body that is not JSON (a
// text/plain or form POST needs no CORS preflight). Mounted handlers, the
// chat platforms' callbacks, have their own formats and signature checks
// and are not guarded here.
func (s *Server) guard(r *http.Request) error {
	if err := checkSite(r, len(s.tokens) == 0, "with no auth.tokens configured the API"); err != nil {
		return err
	}
	if hasBody(r) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return task.Errorf(codeUnsupportedMediaType, "Content-Type %q: a request body must be application/json", r.Header.Get("Content-Type"))
		}
	}
	return nil
}

// checkSite refuses a request whose Origin is not the server's own and,
// when loopbackOnly, one whose Host is not loopback; who names the server
// in the refusal ("the Web UI").
func checkSite(r *http.Request, loopbackOnly bool, who string) error {
	if loopbackOnly && !LoopbackHost(r.Host) {
		return task.Errorf(codeMisdirected, "Host %q is not a loopback name or address; %s answers only to localhost, 127.0.0.1 or [::1]", r.Host, who)
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		return task.Errorf(task.CodeForbidden, "Origin %q is not this server's origin; %s takes no cross-site requests", origin, who)
	}
	return nil
}

// Guard serves next behind the API's open-mode checks of Host and Origin,
// for a local web server with no sign-in of its own (the embedded Temporal
// Web UI): a request whose Host is not loopback (DNS rebinding) gets 421,
// one from another site's page 403, both in the API's error form. name
// names the server in the refusal.
func Guard(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkSite(r, true, name); err != nil {
			te := asTaskError(err)
			writeJSON(w, statusOf[te.Code], errorBody{Error: errorDetail{Code: te.Code, Message: te.Message}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasBody reports whether r carries a body or uses a method that sends one.
func hasBody(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return true
	}
	return r.ContentLength != 0
}

// LoopbackHost reports whether host (a Host header, with or without a
// port) names the loopback interface.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether origin names the host and port r was sent
// to. The scheme is not compared, so a TLS proxy in front of the API does
// not turn its own pages away.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // "null" and anything else that is not a web origin
	}
	return strings.EqualFold(withPort(u.Host, u.Scheme), withPort(r.Host, u.Scheme))
}

// withPort adds the scheme's default port to a host that has none.
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
