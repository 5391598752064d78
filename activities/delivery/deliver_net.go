package delivery

import (
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
	"time"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// quietEnv turns off what the CLIs reach beside their model API:
// Claude Code's telemetry and update checks, OpenCode's updates. (Codex's
// update check is off on its command line, Gemini CLI's usage statistics
// in the settings ampflow gives it.)
var quietEnv = []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}

func hasEnv(env []string, name string) bool {
	_, ok := lookupEnv(env, name)
	return ok
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
	// meter counts what the run's model relays pass; nil: the run has
	// none.
	meter *runner.Meter
}

// loopbackTarget is a loopback endpoint a run's configuration names:
// addr inside the sandbox, target outside.
type loopbackTarget struct{ addr, target string }

// loopbackTargets lists the loopback endpoints named in spec's env, its
// arguments, its settings and the files it is given to read.
func loopbackTargets(spec *runner.Spec) []loopbackTarget {
	var out []loopbackTarget
	for _, v := range append(append(append(append([]string{}, spec.Env...), spec.Args...), spec.Settings), givenFiles(spec)...) {
		for _, m := range loopbackURL.FindAllStringSubmatch(v, -1) {
			if m[1] != "localhost" {
				addr := net.JoinHostPort(strings.Trim(m[1], "[]"), m[2])
				out = append(out, loopbackTarget{addr, addr})
				continue
			}
			target := net.JoinHostPort("localhost", m[2])
			out = append(out, loopbackTarget{net.JoinHostPort("127.0.0.1", m[2]), target}, loopbackTarget{net.JoinHostPort("::1", m[2]), target})
		}
	}
	return out
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
	named := map[string]bool{}
	for _, l := range loopbackTargets(spec) {
		named[l.addr] = true
	}
	served := map[string]servedAddr{}
	if apiGate != nil {
		served[apiAddr] = servedAddr{apiGate, sn.Ports[len(sn.Ports)-1].Socket}
	}
	serve := func(addr string, h http.Handler) error {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
		n.servers = append(n.servers, srv)
		if err := add(addr, func(ln net.Listener) { _ = srv.Serve(ln) }); err != nil {
			return err
		}
		served[addr] = servedAddr{h, sn.Ports[len(sn.Ports)-1].Socket}
		return nil
	}
	meter, err := d.modelRelays(spec, taken, named, serve)
	if err != nil {
		n.Close()
		return nil, err
	}
	n.meter = meter
	for _, l := range loopbackTargets(spec) {
		if taken[l.addr] {
			continue
		}
		taken[l.addr] = true
		target := l.target
		if err := add(l.addr, func(ln net.Listener) { runner.Forward(ln, "tcp", target) }); err != nil {
			n.Close()
			return nil, err
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
	taken[net.JoinHostPort("127.0.0.1", strconv.Itoa(port))] = true
	catch := port + 1
	for taken[net.JoinHostPort("127.0.0.1", strconv.Itoa(catch))] {
		catch++
	}
	taken[net.JoinHostPort("127.0.0.1", strconv.Itoa(catch))] = true
	// From here on, taken is read by the proxy's goroutines: no more
	// writes.
	allowed := d.Egress.allowed(modelHosts(spec))
	background := (&Egress{Allow: BackgroundHosts[spec.Runner]}).allowed(nil)
	p := &egressProxy{background: func(host string) bool { return background(host, "") }, allowed: func(host, port string) bool {
		// What the run reaches on its own loopback, it reaches through
		// the proxy too; the API only at its own port, which checks the
		// run's credential.
		addr := hostPort(&url.URL{Host: net.JoinHostPort(host, port)})
		return addr != apiAddr && taken[addr] || allowed(host, port)
	}, served: served, log: d.logger().With("task", a.taskID, "role", a.role),
		ask: d.Egress.asker(d.APIURL, a.taskID, credential, spec.Dir, spec.ParkFile), approved: map[string]bool{}}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	n.servers = append(n.servers, srv)
	if err := add(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), func(ln net.Listener) { _ = srv.Serve(ln) }); err != nil {
		n.Close()
		return nil, err
	}
	// What ignores the proxy is caught, and decided the same way.
	catchSock := filepath.Join(dir, "catch")
	ln, err := net.Listen("unix", catchSock)
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("the run's network: %w", err)
	}
	n.lns = append(n.lns, ln)
	sn.Catch = &runner.Port{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(catch)), Socket: catchSock}
	go p.serveCaught(ln)
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
	// The run's loopback is its own: what it serves itself (OpenCode's
	// server, a test's) and what the bridge serves there (the API, the
	// relays, the forwards) are reached directly. Everything else goes
	// through the proxy; what ignores it is caught.
	for _, name := range []string{"NO_PROXY", "no_proxy"} {
		spec.Env = setEnv(spec.Env, name+"=127.0.0.1,localhost,::1")
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
		runner.FullDuplex(w)
		proxy.ServeHTTP(w, r)
	})
}
