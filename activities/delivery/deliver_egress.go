package delivery

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/toolhook"
)

// Egress is what sandboxed runs reach through the worker's egress proxy
// (sandbox.network): their runner's model API hosts and Allow.
type Egress struct {
	// Allow are sandbox.network.allow's hosts: "host", "*.domain", each
	// with an optional ":port".
	Allow []string
	// Bridge is the command that runs runner.BridgeMain in a sandbox:
	// the ampflow executable and "sandbox-bridge". Empty: runs share the
	// worker's network.
	Bridge []string
	// AskTimeout bounds how long a connection waits for the tool
	// policy's answer (tools.ask_timeout); past it, it is refused.
	AskTimeout time.Duration
	// HTTP asks the API; nil is a client of its own.
	HTTP *http.Client
	// RelayTransport carries the model relays' requests; nil is
	// http.DefaultTransport.
	RelayTransport http.RoundTripper
}

// asker decides a run's destination as a tool call of its task (CLI
// egress, tool connect): POST /v1/tool-calls with the run's credential,
// waiting for an ask's answer up to AskTimeout. Every destination asked
// is a tool_call record in the task's chain. An ask still open at
// AskTimeout parks the run, as the tool hook parks a call: its park file
// (parkFile; empty, none) names the ask, the runner stops the CLI and
// keeps its session, and the run resumes once the admins answer.
func (e *Egress) asker(apiURL, taskID, credential, dir, parkFile string) func(ctx context.Context, host, port string) (bool, string) {
	if apiURL == "" || credential == "" {
		return nil
	}
	client := e.HTTP
	if client == nil {
		client = &http.Client{}
	}
	timeout := e.AskTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	base := strings.TrimRight(apiURL, "/")
	return func(parent context.Context, host, port string) (bool, string) {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		body, _ := json.Marshal(map[string]any{"task_id": taskID, "cli": "egress", "tool": "connect",
			"input": map[string]string{"host": host, "port": port}, "cwd": dir, "worktree": dir})
		var tc struct {
			ID       string `json:"id"`
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}
		call := func(method, url string, body []byte) error {
			req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+credential)
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
				return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(b)))
			}
			return json.NewDecoder(resp.Body).Decode(&tc)
		}
		wait := "?wait=" + strconv.Itoa(int(min(timeout, 60*time.Second)/time.Second)) + "s"
		err := call(http.MethodPost, base+"/v1/tool-calls"+wait, body)
		for err == nil && tc.Decision == "pending" {
			err = call(http.MethodGet, base+"/v1/tool-calls/"+url.PathEscape(tc.ID)+wait, nil)
		}
		switch {
		case err != nil && tc.Decision == "pending" && parkFile != "" && ctx.Err() != nil && parent.Err() == nil:
			if perr := toolhook.WritePark(parkFile, toolhook.Park{ToolCallID: tc.ID, At: time.Now().UTC(), Hold: true}); perr != nil {
				return false, "the admins did not answer within tools.ask_timeout, and the run could not be parked: " + perr.Error()
			}
			return false, "the admins did not answer within tools.ask_timeout: the run is parked until they do (tool call " + tc.ID + ")"
		case err != nil:
			return false, "the tool policy could not be asked: " + err.Error()
		case tc.Decision == "allow":
			return true, ""
		}
		return false, "the tool policy answered " + tc.Decision + ": " + tc.Reason
	}
}

// allowed says which host:port a run may reach: its model hosts
// (modelHosts) and Allow.
func (e *Egress) allowed(model []string) func(host, port string) bool {
	hosts := append(append([]string{}, model...), e.Allow...)
	return func(host, port string) bool {
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		for _, h := range hosts {
			h, p, hasPort := strings.Cut(strings.ToLower(h), ":")
			if hasPort && p != port {
				continue
			}
			if h == host || strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) {
				return true
			}
		}
		return false
	}
}

// egressProxy is a run's HTTP proxy: CONNECT tunnels and plain requests
// to the hosts it allows; every other destination is a tool call of kind
// network, which the tool policy decides (by default the admins are
// asked): the connection waits for the answer. An approved destination
// is not asked again in the run.
type egressProxy struct {
	allowed func(host, port string) bool
	// served are the addresses the run reaches on its loopback through
	// an HTTP handler of the worker's: ampflow's API (a gate that passes
	// on only the run's credential) and the model relays. A request to
	// one through the proxy goes to the same handler, a tunnel to one to
	// the socket the handler serves: nothing reaches the address behind.
	served map[string]servedAddr
	// background says a host is one the CLI reaches on its own
	// (BackgroundHosts): refused without an ask.
	background func(host string) bool
	log        *slog.Logger
	// ask decides a destination through the tool policy; nil refuses it.
	ask      func(ctx context.Context, host, port string) (bool, string)
	mu       sync.Mutex
	approved map[string]bool
}

// decide says whether the run may reach host:port, and why not.
func (p *egressProxy) decide(ctx context.Context, host, port string) (bool, string) {
	if p.allowed(host, port) {
		return true, ""
	}
	dest := net.JoinHostPort(host, port)
	p.mu.Lock()
	ok := p.approved[dest]
	p.mu.Unlock()
	if ok {
		return true, ""
	}
	if p.ask == nil {
		return false, "not the runner's model API, nor in sandbox.network.allow"
	}
	if p.background != nil && p.background(host) {
		return false, "the CLI's own background traffic, refused without an ask (sandbox.network.allow lets it through)"
	}
	ok, why := p.ask(ctx, host, port)
	if ok {
		p.mu.Lock()
		p.approved[dest] = true
		p.mu.Unlock()
	}
	return ok, why
}

func (p *egressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, port := r.URL.Hostname(), r.URL.Port()
	if r.Method == http.MethodConnect {
		var err error
		if host, port, err = net.SplitHostPort(r.Host); err != nil {
			http.Error(w, "CONNECT needs host:port", http.StatusBadRequest)
			return
		}
	} else if port == "" {
		port = "80"
	}
	if host == "" {
		http.Error(w, "this is the run's egress proxy: send it absolute URLs or CONNECT", http.StatusBadRequest)
		return
	}
	if s, ok := p.served[hostPort(&url.URL{Host: net.JoinHostPort(host, port)})]; ok {
		if r.Method == http.MethodConnect {
			// A tunnel (Gemini CLI asks for one, for its MCP client and
			// its model API alike) to what serves the address inside.
			p.tunnel(w, "unix", s.socket)
			return
		}
		r.RequestURI = ""
		s.h.ServeHTTP(w, r)
		return
	}
	if ok, why := p.decide(r.Context(), host, port); !ok {
		p.log.Warn("sandboxed run refused a destination", "host", host, "port", port, "reason", why)
		http.Error(w, fmt.Sprintf("ampflow's egress proxy refused %s:%s: %s", host, port, why), http.StatusForbidden)
		return
	}
	p.log.Debug("sandboxed run reached a destination", "host", host, "port", port)
	if r.Method == http.MethodConnect {
		p.tunnel(w, "tcp", net.JoinHostPort(host, port))
		return
	}
	r.RequestURI = ""
	removeHopHeaders(r.Header)
	runner.FullDuplex(w)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// serveCaught takes the connections the run's bridge caught, each
// preceded by the address its program asked for, and lets through those
// the proxy would (runner.SandboxNet.Catch).
func (p *egressProxy) serveCaught(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReaderSize(c, 512)
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			host, port, err := net.SplitHostPort(strings.TrimSpace(string(line)))
			if err != nil {
				return
			}
			ok, why := p.decide(context.Background(), host, port)
			if !ok {
				p.log.Warn("sandboxed run refused a destination", "host", host, "port", port, "reason", why, "caught", true)
				return
			}
			t, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 10*time.Second)
			if err != nil {
				return
			}
			defer t.Close()
			runner.Splice(&bufferedConn{Conn: c, r: br}, t)
		}()
	}
}

// servedAddr is an address a run reaches inside: the handler that serves
// it, and the unix socket that handler listens on.
type servedAddr struct {
	h      http.Handler
	socket string
}

func (p *egressProxy) tunnel(w http.ResponseWriter, network, target string) {
	t, err := net.DialTimeout(network, target, 10*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer t.Close()
	c, ok := connected(w)
	if !ok {
		return
	}
	defer c.Close()
	runner.Splice(c, t)
}

// connected takes a CONNECT's connection from the server and answers it
// 200: what the client sends next, the bytes already buffered first, is
// the tunnel's.
func connected(w http.ResponseWriter) (net.Conn, bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no tunnel", http.StatusInternalServerError)
		return nil, false
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		return nil, false
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		c.Close()
		return nil, false
	}
	return &bufferedConn{Conn: c, r: buf.Reader}, true
}

// bufferedConn reads what the proxy's reader had buffered first.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// CloseWrite ends the writing half where the connection has one, so a
// tunnel's answer still reaches a client that is done sending.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// hopHeaders are the hop-by-hop headers a proxy does not pass on.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
