package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// TestMain runs the sandbox's bridge when the test binary is started as
// one, as the ampflow executable is in a worker.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-bridge" {
		os.Exit(runner.BridgeMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestRunNetwork: a sandboxed run reaches ampflow's API only with its own
// credential, the loopback endpoint its configuration names, and,
// through the egress proxy, only what sandbox.network.allow names, by a
// plain request or a CONNECT tunnel; nothing else on the machine's
// loopback. Unconfined, the same probes reach everything, so the test
// sees what it checks.
func TestRunNetwork(t *testing.T) {
	if err := runner.CheckSandbox(context.Background(), ""); err != nil {
		t.Fatalf("the sandbox tests need bubblewrap: %v", err)
	}
	serve := func(name string) string {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", name, r.Header.Get("Authorization"))
		}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	api, model, other, allowed := serve("api"), serve("model"), serve("other"), serve("allowed")
	// Two listeners at the machine's own address, off the run's
	// loopback: what bash's /dev/tcp reaches only when the bridge
	// catches it.
	ip := machineIP(t)
	serveAt := func(name string) string {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return ln.Addr().String()
	}
	ipOther, ipAllowed := serveAt("ip-other"), serveAt("ip-allowed")
	const credential = "ampr1.the-runs-own"
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := &Delivery{APIURL: api, Egress: &Egress{Bridge: []string{bin, "sandbox-bridge"},
		Allow: []string{strings.TrimPrefix(allowed, "http://"), ipAllowed}}}
	devTCP := func(addr, want string) string {
		host, port, _ := net.SplitHostPort(addr)
		return "devtcp " + host + " " + port + " " + want
	}

	script := `
probe() { if eval "$2" >/dev/null 2>&1; then echo "$1=yes"; else echo "$1=no"; fi; }
devtcp() { bash -c "exec 3<>/dev/tcp/$1/$2 && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && timeout 10 grep -q $3 <&3"; }
c="curl -sf --max-time 5"
{
probe api_credential "$c -H 'Authorization: Bearer ` + credential + `' ` + api + `/v1/tool-calls"
probe api_bare "$c ` + api + `/v1/tool-calls"
probe model "$c ` + model + `/"
probe other "$c ` + other + `/"
probe allowed_proxied "$c --noproxy '' -x http://127.0.0.1:3128 ` + allowed + `/"
probe other_proxied "$c --noproxy '' -x http://127.0.0.1:3128 ` + other + `/"
probe allowed_tunnel "$c -p --noproxy '' -x http://127.0.0.1:3128 ` + allowed + `/"
probe other_tunnel "$c -p --noproxy '' -x http://127.0.0.1:3128 ` + other + `/"
probe api_tunnel "$c -p --noproxy '' -x http://127.0.0.1:3128 ` + api + `/v1/tool-calls"
probe api_tunnel_credential "$c -p --noproxy '' -x http://127.0.0.1:3128 -H 'Authorization: Bearer ` + credential + `' ` + api + `/v1/tool-calls"
probe api_proxied "$c --noproxy '' -x http://127.0.0.1:3128 ` + api + `/v1/tool-calls"
probe api_proxied_credential "$c --noproxy '' -x http://127.0.0.1:3128 -H 'Authorization: Bearer ` + credential + `' ` + api + `/v1/tool-calls"
probe model_proxied "$c --noproxy '' -x http://127.0.0.1:3128 ` + model + `/"
probe devtcp_ip_other "` + devTCP(ipOther, "ip-other") + `"
probe devtcp_ip_allowed "` + devTCP(ipAllowed, "ip-allowed") + `"
probe devtcp_loopback_other "` + devTCP(strings.TrimPrefix(other, "http://"), "other") + `"
probe nft "nft list ruleset"
probe caps "grep -h '^CapEff' /proc/[0-9]*/status | grep -v 0000000000000000"
} > ./probes.txt
echo '{"type":"system","subtype":"init","session_id":"s"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}'
`
	probes := func(sandboxed bool) map[string]string {
		spec := runner.Spec{Runner: runner.Claude, Command: []string{"/bin/sh", "-c", script, "fakecli"}, Dir: t.TempDir(), Prompt: "go",
			Env:               []string{"PATH=/usr/bin:/bin", "ANTHROPIC_BASE_URL=" + model},
			FirstEventTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second}
		if sandboxed {
			spec.Sandbox = &runner.Sandbox{}
			n, err := d.network(taskRun{workDir: t.TempDir(), taskID: "T-2026-001", role: amp.RoleExecutor}, credential, &spec)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				n.Close()
				if _, err := os.Stat(n.dir); !os.IsNotExist(err) {
					t.Errorf("the run's sockets are left in %s", n.dir)
				}
			}()
		}
		o, err := runner.Run(context.Background(), spec, nil)
		if err != nil || !o.Succeeded() {
			t.Fatalf("run: %+v %v", o, err)
		}
		raw, err := os.ReadFile(filepath.Join(spec.Dir, "probes.txt"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, line := range strings.Fields(string(raw)) {
			k, v, _ := strings.Cut(line, "=")
			got[k] = v
		}
		return got
	}
	if got := probes(false); got["api_bare"] != "yes" || got["other"] != "yes" || got["devtcp_ip_other"] != "yes" {
		t.Fatalf("unconfined probes %v: the probes test nothing", got)
	}
	want := map[string]string{"api_credential": "yes", "api_bare": "no", "model": "yes", "other": "no",
		"allowed_proxied": "yes", "other_proxied": "no", "allowed_tunnel": "yes", "other_tunnel": "no",
		"api_tunnel": "no", "api_tunnel_credential": "yes", "api_proxied": "no", "api_proxied_credential": "yes", "model_proxied": "yes",
		"devtcp_ip_other": "no", "devtcp_ip_allowed": "yes", "devtcp_loopback_other": "no", "nft": "no", "caps": "no"}
	got := probes(true)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestEgressAsks: a destination neither the model API nor
// sandbox.network.allow names is a tool call of the run's task (CLI
// egress, tool connect), sent with the run's credential; the connection
// waits for the answer, an approved destination is not asked again in
// the run, and a denied one is refused with the policy's reason.
func TestEgressAsks(t *testing.T) {
	const credential = "ampr1.the-runs-own"
	var posts []map[string]any
	var auth []string
	decision := "allow"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/tool-calls":
			var in map[string]any
			_ = json.NewDecoder(r.Body).Decode(&in)
			posts = append(posts, in)
			fmt.Fprint(w, `{"id":"T-2026-001-tc1","decision":"pending"}`)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/tool-calls/T-2026-001-tc1":
			fmt.Fprintf(w, `{"id":"T-2026-001-tc1","decision":%q,"reason":"an admin said so"}`, decision)
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	e := &Egress{Allow: []string{"*.npmjs.org"}, AskTimeout: 5 * time.Second}
	p := &egressProxy{allowed: e.allowed(ModelHosts[runner.Claude]), ask: e.asker(api.URL, "T-2026-001", credential, "/w", ""), approved: map[string]bool{},
		log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	for _, dest := range [][2]string{{"api.anthropic.com", "443"}, {"registry.npmjs.org", "443"}} {
		if ok, why := p.decide(ctx, dest[0], dest[1]); !ok {
			t.Errorf("%s refused: %s", dest, why)
		}
	}
	if len(posts) != 0 {
		t.Fatalf("an allowed destination was asked: %v", posts)
	}
	for range 2 {
		if ok, why := p.decide(ctx, "example.test", "443"); !ok {
			t.Fatalf("approved destination refused: %s", why)
		}
	}
	if len(posts) != 1 {
		t.Fatalf("asked %d times, want once: %v", len(posts), posts)
	}
	in, _ := posts[0]["input"].(map[string]any)
	if posts[0]["task_id"] != "T-2026-001" || posts[0]["cli"] != "egress" || posts[0]["tool"] != "connect" || in["host"] != "example.test" || in["port"] != "443" {
		t.Errorf("asked %v", posts[0])
	}
	for _, a := range auth {
		if a != "Bearer "+credential {
			t.Errorf("asked with %q, not the run's credential", a)
		}
	}
	// A host the CLI reaches on its own is refused without an ask.
	p.background = func(host string) bool { return host == "github.com" }
	if ok, _ := p.decide(ctx, "github.com", "443"); ok || len(posts) != 1 {
		t.Errorf("the CLI's background host: allowed %v, asked %d times", ok, len(posts))
	}
	decision = "deny"
	if ok, why := p.decide(ctx, "other.test", "80"); ok || !strings.Contains(why, "an admin said so") {
		t.Errorf("denied destination: %v %q", ok, why)
	}
	// An ask still open at the ask timeout parks the run: its park file
	// names the ask. A connection its client gave up on first parks
	// nothing.
	decision = "pending"
	park := filepath.Join(t.TempDir(), "parks", "claude.json")
	e.AskTimeout = 300 * time.Millisecond
	ask := e.asker(api.URL, "T-2026-001", credential, "/w", park)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if ok, _ := ask(gone, "third.test", "80"); ok {
		t.Error("a connection given up on was allowed")
	}
	if _, err := os.Stat(park); err == nil {
		t.Error("a connection its client gave up on parked the run")
	}
	if ok, why := ask(ctx, "third.test", "80"); ok || !strings.Contains(why, "parked") {
		t.Errorf("an unanswered ask: %v %q", ok, why)
	}
	if b, err := os.ReadFile(park); err != nil || !strings.Contains(string(b), `"tool_call":"T-2026-001-tc1"`) || !strings.Contains(string(b), `"hold":true`) {
		t.Errorf("the park file: %s %v", b, err)
	}
}

// BenchmarkEgressProxy measures what a run's request pays for going
// through its egress proxy: the same GET to a loopback server, direct and
// through the proxy (a plain request, a new connection each time, as a
// CLI's first request to its model API is), p50 and p99 of each.
func BenchmarkEgressProxy(b *testing.B) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	e := &Egress{Allow: []string{strings.TrimPrefix(target.URL, "http://")}}
	proxy := httptest.NewServer(&egressProxy{allowed: e.allowed(ModelHosts[runner.Claude]), approved: map[string]bool{}, log: slog.New(slog.DiscardHandler)})
	defer proxy.Close()
	proxyURL, _ := url.Parse(proxy.URL)
	get := func(c *http.Client) time.Duration {
		start := time.Now()
		resp, err := c.Get(target.URL)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	direct := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	proxied := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: http.ProxyURL(proxyURL)}}
	var d, p []time.Duration
	for b.Loop() {
		d = append(d, get(direct))
		p = append(p, get(proxied))
	}
	pct := func(s []time.Duration, q int) float64 {
		slices.Sort(s)
		return float64(s[(len(s)-1)*q/100].Microseconds()) / 1000
	}
	b.ReportMetric(pct(d, 50), "direct_p50_ms")
	b.ReportMetric(pct(d, 99), "direct_p99_ms")
	b.ReportMetric(pct(p, 50), "proxy_p50_ms")
	b.ReportMetric(pct(p, 99), "proxy_p99_ms")
}

// machineIP is an IPv4 address of the machine's own, off its loopback.
func machineIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("the machine has no IPv4 address off its loopback for the test to listen on")
	return ""
}
