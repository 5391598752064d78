package gate

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCallbackSecretDocumented: the secret is what docs/gate.md's openssl
// line prints.
func TestCallbackSecretDocumented(t *testing.T) {
	// printf '%s' resume-tailor | openssl dgst -sha256 -hmac m
	const want = "a33c0ac89c535f58582d28b1d4f5e741c9cabf55f94de8c7e99c0d4873e982af"
	got := CallbackSecret("m", "resume-tailor")
	if len(got) != 64 || got == CallbackSecret("m", "spender") || got == CallbackSecret("n", "resume-tailor") {
		t.Fatalf("CallbackSecret = %q: not one per agent and master", got)
	}
	if got != want {
		t.Errorf("CallbackSecret = %q, want %q", got, want)
	}
}

// TestCallbackForgery runs docs/gate.md's verifier (verify_signature of
// clients/python, which examples/gate_agent.py uses) as agent B: B takes the callback ampflow signs for it, and refuses one
// agent A signs with its own secret, one signed for another run or URL,
// one signed with the master secret, and an old one.
func TestCallbackForgery(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is needed to run clients/python")
	}
	const master, a, b, run, url = "master-s3cret", "agent-a", "agent-b", "run_b_1", "http://127.0.0.1:8799/amp/callback"
	body := []byte(`{"gate_id":"gate_1","status":"approved","run_id":"run_b_1","agent_id":"agent-b"}`)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	bSecret, aSecret := CallbackSecret(master, b), CallbackSecret(master, a)
	cases := []struct {
		name, ts, sig string
		ok            bool
	}{
		{"Genuine", now, CallbackSignature(bSecret, now, b, run, url, body), true},
		{"ForgedByA", now, CallbackSignature(aSecret, now, b, run, url, body), false},
		{"MeantForA", now, CallbackSignature(aSecret, now, a, run, url, body), false},
		{"OtherRun", now, CallbackSignature(bSecret, now, b, "run_b_2", url, body), false},
		{"OtherURL", now, CallbackSignature(bSecret, now, b, run, "http://127.0.0.1:8800/amp/callback", body), false},
		{"MasterSecret", now, CallbackSignature(master, now, b, run, url, body), false},
		{"Old", old, CallbackSignature(bSecret, old, b, run, url, body), false},
	}
	var script strings.Builder
	script.WriteString("import sys\nsys.path.insert(0, sys.argv[1])\nfrom ampflow import verify_signature\n")
	for _, c := range cases {
		script.WriteString("print(verify_signature(" + strconv.Quote(bSecret) + ", " + strconv.Quote(c.ts) + ", " + strconv.Quote(c.sig) + ", " +
			strconv.Quote(string(body)) + ".encode(), " + strconv.Quote(b) + ", " + strconv.Quote(run) + ", " + strconv.Quote(url) + "))\n")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", script.String(), root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	got := strings.Fields(string(out))
	if len(got) != len(cases) {
		t.Fatalf("python printed %q", out)
	}
	for i, c := range cases {
		if got[i] != map[bool]string{true: "True", false: "False"}[c.ok] {
			t.Errorf("%s: the verifier said %s, want ok %v", c.name, got[i], c.ok)
		}
	}
}
