package delivery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	const credential = "ampr1.the-runs-own"
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := &Delivery{APIURL: api, Egress: &Egress{Bridge: []string{bin, "sandbox-bridge"},
		Allow: []string{strings.TrimPrefix(allowed, "http://")}}}

	script := `
probe() { if eval "$2" >/dev/null 2>&1; then echo "$1=yes"; else echo "$1=no"; fi; }
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
	if got := probes(false); got["api_bare"] != "yes" || got["other"] != "yes" {
		t.Fatalf("unconfined probes %v: the probes test nothing", got)
	}
	want := map[string]string{"api_credential": "yes", "api_bare": "no", "model": "yes", "other": "no",
		"allowed_proxied": "yes", "other_proxied": "no", "allowed_tunnel": "yes", "other_tunnel": "no"}
	got := probes(true)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
