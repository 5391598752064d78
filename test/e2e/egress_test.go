package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// TestEgressAsked: the real Codex, sandboxed, runs a script whose
// programs reach four listeners at the machine's own address: node's
// fetch and bash's /dev/tcp, which ignore the proxy variables, and
// python's urllib, which follows them. Each destination is asked of the
// admins and reached only once they allow it (the second connection to
// one allowed for the task is not asked); the one they deny is never
// reached.
func TestEgressAsked(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed")
	}
	ip := machineIPv4(t)
	var hits [4]atomic.Int32
	addrs := make([]string, 4)
	for i := range addrs {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits[i].Add(1)
			fmt.Fprintf(w, "listener-%d", i)
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		addrs[i] = ln.Addr().String()
	}
	devTCP := func(addr, file string) string {
		host, port, _ := net.SplitHostPort(addr)
		return `bash -c 'exec 3<>/dev/tcp/` + host + `/` + port + ` && printf "GET / HTTP/1.0\r\n\r\n" >&3 && cat <&3' > ` + file + `; `
	}
	script := node + ` -e "fetch('http://` + addrs[0] + `/').then(r => r.text()).then(t => require('fs').writeFileSync('node.txt', t))"; ` +
		devTCP(addrs[1], "devtcp.txt") + devTCP(addrs[1], "devtcp-again.txt") +
		`python3 -c "import urllib.request; open('python.txt', 'w').write(urllib.request.urlopen('http://` + addrs[2] + `/').read().decode())"; ` +
		devTCP(addrs[3], "denied.txt") +
		"git add -A && git -c user.name=codex -c user.email=codex@example.com commit -qm reached"
	s := startRunnerDev(t, runnerOpts{executor: runner{"codex", []fakemodel.Turn{
		{Text: "Reaching out.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": script}}},
		{Text: `Done. {"criteria_met": [true], "notes": ["reached"], "summary": "reached"}`},
	}}})
	const id = "T-2026-893"
	s.api.startTask(id, lowRiskPlan(s.repo))
	asked := map[string]int{}
	answered := map[string]bool{}
	st := s.api.waitFor(id, "the executor's result", 4*time.Minute, func(st task.State) bool {
		if p := st.Pending; p != nil && p.Kind == task.KindToolCall && !answered[p.ID] {
			answered[p.ID] = true
			for i, a := range addrs {
				_, port, _ := net.SplitHostPort(a)
				if !strings.Contains(p.Prompt, port) {
					continue
				}
				asked[a]++
				if hits[i].Load() != 0 {
					t.Errorf("%s was reached before the admins answered", a)
				}
				switch i {
				case 1:
					s.api.decide(*p, task.OptAllowTool)
				case 3:
					body := httpapi.DecideRequest{Option: task.OptDeny, Digest: p.Digest, Note: "not that host"}
					if code, resp := s.api.call("POST", "/v1/decisions/"+p.ID, body, nil); code != http.StatusOK {
						t.Fatalf("denying %s: %d %s", p.ID, code, resp)
					}
				default:
					s.api.decide(*p, task.OptAllowOnce)
				}
				return false
			}
			t.Errorf("an ask for no listener: %s", p.Prompt)
		}
		return st.Underlying() == task.StatusInReview || st.Status.Terminal() || st.Underlying() == task.StatusAwaitingAdmin
	})
	for i, a := range addrs {
		if asked[a] != 1 {
			t.Errorf("%s was asked %d times, want once", a, asked[a])
		}
		want := int32(1)
		switch i {
		case 1:
			want = 2
		case 3:
			want = 0
		}
		if got := hits[i].Load(); got != want {
			t.Errorf("%s was reached %d times, want %d", a, got, want)
		}
	}
	for file, want := range map[string]string{"node.txt": "listener-0", "devtcp.txt": "listener-1", "devtcp-again.txt": "listener-1", "python.txt": "listener-2"} {
		if got := git(t, s.repo, "show", "feature/e2e:"+file); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want %q (status %s, %s)", file, got, want, st.Status, st.LastError)
		}
	}
	if got := git(t, s.repo, "show", "feature/e2e:denied.txt"); strings.Contains(got, "listener-3") {
		t.Errorf("the denied destination answered: %q", got)
	}
	for _, c := range s.api.toolCalls(id) {
		if c.CLI == "egress" && (c.Kind != "network" || c.Tool != "connect") {
			t.Errorf("a destination's record: %+v", c)
		}
	}
}

// machineIPv4 is an IPv4 address of the machine's own, off its
// loopback: a run's loopback is its own, the machine's is not on it.
func machineIPv4(t *testing.T) string {
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
