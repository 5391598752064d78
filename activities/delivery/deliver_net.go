package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
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
}

// asker decides a run's destination as a tool call of its task (CLI
// egress, tool connect): POST /v1/tool-calls with the run's credential,
// waiting for an ask's answer up to AskTimeout. Every destination asked
// is a tool_call record in the task's chain.
func (e *Egress) asker(apiURL, taskID, credential, dir string) func(ctx context.Context, host, port string) (bool, string) {
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
	return func(ctx context.Context, host, port string) (bool, string) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
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
		case err != nil:
			return false, "the tool policy could not be asked: " + err.Error()
		case tc.Decision == "allow":
			return true, ""
		}
		return false, "the tool policy answered " + tc.Decision + ": " + tc.Reason
	}
}

// ModelHosts are the hosts each runner's CLI reaches its vendor's model
// API at, which its runs may reach without sandbox.network.allow naming
// them.
var ModelHosts = map[string][]string{
	runner.Claude:   {"api.anthropic.com"},
	runner.Codex:    {"api.openai.com", "chatgpt.com"},
	runner.Gemini:   {"generativelanguage.googleapis.com", "oauth2.googleapis.com"},
	runner.OpenCode: {"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai"},
}

// quietEnv turns off what the CLIs reach beside their model API:
// Claude Code's telemetry and update checks, OpenCode's updates. (Codex's
// update check is off on its command line, Gemini CLI's usage statistics
// in the settings ampflow gives it.)
var quietEnv = []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}

func hasEnv(env []string, name string) bool {
	_, ok := lookupEnv(env, name)
	return ok
}

// BackgroundHosts are, by runner, hosts its CLI reaches on its own,
// beside the model API and whatever the agent does (Codex syncs its
// plugins from github.com and api.github.com at start; Gemini CLI logs usage to
// play.googleapis.com): refused without asking anyone, so an admin is
// not asked for what no agent chose. sandbox.network.allow lets a run
// reach one after all.
var BackgroundHosts = map[string][]string{
	runner.Codex:  {"github.com", "*.github.com", "ab.chatgpt.com"},
	runner.Gemini: {"play.googleapis.com"},
}

// proxyPort is where a sandboxed run's proxy listens inside, unless one
// of its loopback endpoints takes it.
const proxyPort = 3128

// runNetwork is one sandboxed run's network, outside the sandbox: the
// unix sockets its bridge passes connections to, and what serves them.
type runNetwork struct {
	dir     string
	servers []*http.Server
	lns     []net.Listener
}

// loopbackURL finds the loopback endpoints a run's configuration names:
// a model API served on this machine (ANTHROPIC_BASE_URL=http://127.0.0.1:…).
var loopbackURL = regexp.MustCompile(`https?://(127\.0\.0\.1|localhost|\[::1\]):([0-9]{1,5})`)

// network gives spec, a sandboxed run of role on taskID presenting
// credential, a network of its own (runner.SandboxNet): ampflow's API,
// which takes only the run's credential; the loopback endpoints its
// configuration names; and the egress proxy for the rest. Close the
// network when the run ends.
func (d *Delivery) network(a taskRun, credential string, spec *runner.Spec) (*runNetwork, error) {
	if d.Egress == nil || len(d.Egress.Bridge) == 0 {
		return nil, nil
	}
	dir, err := socketDir(a.workDir)
	if err != nil {
		return nil, err
	}
	n := &runNetwork{dir: dir}
	sn := &runner.SandboxNet{Bridge: d.Egress.Bridge}
	add := func(addr string, serve func(net.Listener)) error {
		sock := filepath.Join(dir, strconv.Itoa(len(sn.Ports)))
		ln, err := net.Listen("unix", sock)
		if err != nil {
			return fmt.Errorf("the run's network: %w", err)
		}
		n.lns = append(n.lns, ln)
		sn.Ports = append(sn.Ports, runner.Port{Addr: addr, Socket: sock})
		go serve(ln)
		return nil
	}
	taken := map[string]bool{}
	apiAddr := ""
	var apiGate http.Handler
	if api, err := url.Parse(d.APIURL); err == nil && isLoopback(api.Hostname()) && credential != "" {
		addr := hostPort(api)
		taken[addr], apiAddr = true, addr
		apiGate = credentialGate(credential, api)
		srv := &http.Server{Handler: apiGate, ReadHeaderTimeout: 30 * time.Second}
		n.servers = append(n.servers, srv)
		if err := add(addr, func(ln net.Listener) { _ = srv.Serve(ln) }); err != nil {
			n.Close()
			return nil, err
		}
	}
	for _, v := range append(append(append(append([]string{}, spec.Env...), spec.Args...), spec.Settings), givenFiles(spec)...) {
		for _, m := range loopbackURL.FindAllStringSubmatch(v, -1) {
			addrs := []string{net.JoinHostPort(strings.Trim(m[1], "[]"), m[2])}
			if m[1] == "localhost" {
				addrs = []string{net.JoinHostPort("127.0.0.1", m[2]), net.JoinHostPort("::1", m[2])}
			}
			for _, addr := range addrs {
				if taken[addr] {
					continue
				}
				taken[addr] = true
				target := addr
				if m[1] == "localhost" {
					target = net.JoinHostPort("localhost", m[2])
				}
				if err := add(addr, func(ln net.Listener) { runner.Forward(ln, "tcp", target) }); err != nil {
					n.Close()
					return nil, err
				}
			}
		}
	}
	for _, h := range d.Egress.Allow {
		host, port, err := net.SplitHostPort(h)
		if err != nil || !isLoopback(host) || taken[h] {
			continue
		}
		addr := net.JoinHostPort(host, port)
		taken[addr] = true
		if err := add(addr, func(ln net.Listener) { runner.Forward(ln, "tcp", addr) }); err != nil {
			n.Close()
			return nil, err
		}
	}
	port := proxyPort
	for taken[net.JoinHostPort("127.0.0.1", strconv.Itoa(port))] {
		port++
	}
	allowed := d.Egress.allowed(spec.Runner)
	background := (&Egress{Allow: BackgroundHosts[spec.Runner]}).allowed("")
	p := &egressProxy{background: func(host string) bool { return background(host, "") }, allowed: func(host, port string) bool {
		// What the run reaches on its own loopback, it reaches through
		// the proxy too; the API only at its own port, which checks the
		// run's credential.
		addr := hostPort(&url.URL{Host: net.JoinHostPort(host, port)})
		return addr != apiAddr && taken[addr] || allowed(host, port)
	}, apiAddr: apiAddr, api: apiGate, log: d.logger().With("task", a.taskID, "role", a.role),
		ask: d.Egress.asker(d.APIURL, a.taskID, credential, spec.Dir), approved: map[string]bool{}}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	n.servers = append(n.servers, srv)
	if err := add(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), func(ln net.Listener) { _ = srv.Serve(ln) }); err != nil {
		n.Close()
		return nil, err
	}
	proxy := "http://127.0.0.1:" + strconv.Itoa(port)
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		spec.Env = setEnv(spec.Env, name+"="+proxy)
	}
	// The CLIs' traffic beside the model API (telemetry, update checks)
	// is off, so it asks nobody; the role's env may turn it back on.
	for _, kv := range quietEnv {
		if name, _, _ := strings.Cut(kv, "="); !hasEnv(spec.Env, name) {
			spec.Env = append(spec.Env, kv)
		}
	}
	// Nothing bypasses the proxy, loopback included: a connection to an
	// unlisted port of the machine's is asked like any other host.
	for _, name := range []string{"NO_PROXY", "no_proxy"} {
		spec.Env = setEnv(spec.Env, name+"=")
	}
	spec.Sandbox.Net = sn
	return n, nil
}

// givenFiles are the contents of the files a run is given to read and
// cannot write (an OPENCODE_CONFIG its role's env names, say), where a
// loopback endpoint may be named; a file the run writes (its CODEX_HOME's
// config.toml) could name any port, and is not read.
func givenFiles(spec *runner.Spec) []string {
	var out []string
	for _, p := range spec.Sandbox.Read {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() > 256<<10 || writable(p, spec) {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

func writable(path string, spec *runner.Spec) bool {
	for _, w := range append([]string{spec.Dir}, spec.Sandbox.Write...) {
		if rel, err := filepath.Rel(w, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// taskRun names a run for its network.
type taskRun struct {
	workDir, taskID string
	role            amp.Role
}

func (d *Delivery) logger() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

// Close stops the run's network and removes its sockets.
func (n *runNetwork) Close() {
	if n == nil {
		return
	}
	for _, s := range n.servers {
		_ = s.Close()
	}
	for _, ln := range n.lns {
		_ = ln.Close()
	}
	_ = os.RemoveAll(n.dir)
}

// socketDir makes a private directory for a run's sockets: in data_dir
// when its path leaves room within a unix socket's 108 bytes, else in the
// temporary directory.
func socketDir(workDir string) (string, error) {
	base := filepath.Join(workDir, "net")
	if len(base) > 80 {
		base = os.TempDir()
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("the run's network: %w", err)
	}
	dir, err := os.MkdirTemp(base, "n")
	if err != nil {
		return "", fmt.Errorf("the run's network: %w", err)
	}
	return dir, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	host := u.Hostname()
	if host == "localhost" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// credentialGate passes to api only requests that present the run's own
// credential: a run reaches no open API's admin by sending none.
func credentialGate(credential string, api *url.URL) http.Handler {
	proxy := httputil.NewSingleHostReverseProxy(api)
	proxy.FlushInterval = -1
	want := "Bearer " + credential
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want && r.URL.Path != "/healthz" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"error":{"code":"forbidden","message":"an agent run reaches ampflow's API only with its own credential (AMPFLOW_API_TOKEN)"}}`+"\n")
			return
		}
		proxy.ServeHTTP(w, r)
	})
}

// allowed says which host:port a run of runnerName may reach.
func (e *Egress) allowed(runnerName string) func(host, port string) bool {
	hosts := append(append([]string{}, ModelHosts[runnerName]...), e.Allow...)
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
	// apiAddr is ampflow's API: a plain request to it through the proxy
	// goes to api, which passes on only the run's credential; a tunnel to
	// it, which the proxy cannot read, is refused.
	apiAddr string
	api     http.Handler
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
	if p.api != nil && hostPort(&url.URL{Host: net.JoinHostPort(host, port)}) == p.apiAddr {
		if r.Method == http.MethodConnect {
			// A tunnel to the API (Gemini CLI's MCP client asks for
			// one): what comes through it is served as HTTP, by the
			// same gate.
			p.serveTunnel(w, p.api)
			return
		}
		r.RequestURI = ""
		p.api.ServeHTTP(w, r)
		return
	}
	if ok, why := p.decide(r.Context(), host, port); !ok {
		p.log.Warn("sandboxed run refused a destination", "host", host, "port", port, "reason", why)
		http.Error(w, fmt.Sprintf("ampflow's egress proxy refused %s:%s: %s", host, port, why), http.StatusForbidden)
		return
	}
	p.log.Debug("sandboxed run reached a destination", "host", host, "port", port)
	if r.Method == http.MethodConnect {
		p.tunnel(w, net.JoinHostPort(host, port))
		return
	}
	r.RequestURI = ""
	removeHopHeaders(r.Header)
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

func (p *egressProxy) tunnel(w http.ResponseWriter, target string) {
	t, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer t.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no tunnel", http.StatusInternalServerError)
		return
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := t.Write(b); err != nil {
			return
		}
	}
	tc, ok := t.(*net.TCPConn)
	uc, ok2 := c.(*net.UnixConn)
	if ok && ok2 {
		runner.Splice(uc, tc)
		return
	}
	go func() { _, _ = io.Copy(t, c) }()
	_, _ = io.Copy(c, t)
}

// serveTunnel answers a CONNECT and serves what comes through the tunnel
// with h, as HTTP: the proxy reads every request, whatever the tunnel.
func (p *egressProxy) serveTunnel(w http.ResponseWriter, h http.Handler) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no tunnel", http.StatusInternalServerError)
		return
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		c.Close()
		return
	}
	ln := &oneConn{conn: &bufferedConn{Conn: c, r: buf.Reader}, done: make(chan struct{})}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			ln.Close()
		}
	}}
	_ = srv.Serve(ln)
}

// oneConn is a listener of one connection: Accept gives it once, then
// waits until Close.
type oneConn struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
	gave bool
	mu   sync.Mutex
}

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.gave {
		l.gave = true
		l.mu.Unlock()
		return l.conn, nil
	}
	l.mu.Unlock()
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return l.conn.LocalAddr() }

// bufferedConn reads what the proxy's reader had buffered first.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// hopHeaders are the hop-by-hop headers a proxy does not pass on.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
