package delivery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config/pricing"
)

// TestRunRelay: a sandboxed run reaches its model APIs through the
// relays with no key of its own. The key is in no variable, file or
// process the run can read, and the model APIs get the real one: a
// loopback one relayed at its own address, an https one at a relay the
// run's variable is pointed to. The relays count the tokens the APIs
// report, and stop the run once they pass its cap.
func TestRunRelay(t *testing.T) {
	if err := runner.CheckSandbox(context.Background(), ""); err != nil {
		t.Fatalf("the sandbox tests need bubblewrap: %v", err)
	}
	const anthropicKey, openaiKey = "sk-ant-real-key-0f3a9c", "sk-openai-real-key-77b1e2"
	model := fakemodel.New(fakemodel.Turn{Text: "hello", InputTokens: 4000, OutputTokens: 1000})
	defer model.Close()
	var tlsAuth string
	calls := 0
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tlsAuth, calls = r.Header.Get("Authorization"), calls+1
		w.Header().Set("Content-Type", "application/json")
		// The second call passes the cap: the first's answer is in its
		// file before the run is stopped.
		fmt.Fprintf(w, `{"object":"response","model":"gpt-5.4","usage":{"input_tokens":%d,"output_tokens":0}}`, 2000*(calls-1))
	}))
	defer tls.Close()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := &Delivery{Pricing: pricing.New(nil, pricing.Price{}),
		Egress: &Egress{Bridge: []string{bin, "sandbox-bridge"}, RelayTransport: tls.Client().Transport}}

	script := `
env > ./env.txt
cat /proc/*/environ 2>/dev/null | tr '\0' '\n' >> ./env.txt
grep -rs "` + anthropicKey + `" "$HOME" /tmp >> ./env.txt
curl -sf --max-time 10 -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' \
  -d '{"model":"claude-sonnet-4-5","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"}]}' \
  "$ANTHROPIC_BASE_URL/v1/messages" > ./anthropic.txt
curl -sf --max-time 10 -H "Authorization: Bearer $OPENAI_API_KEY" -d '{}' "$OPENAI_BASE_URL/responses" > ./openai.txt
curl -sf --max-time 10 -H "Authorization: Bearer $OPENAI_API_KEY" -d '{}' "$OPENAI_BASE_URL/responses" > /dev/null
echo '{"type":"system","subtype":"init","session_id":"s"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}'
exec sleep 30
`
	spec := runner.Spec{Runner: runner.Claude, Command: []string{"/bin/bash", "-c", script, "fakecli"}, Dir: t.TempDir(), Prompt: "go",
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + model.URL(), "ANTHROPIC_API_KEY=" + anthropicKey,
			"OPENAI_BASE_URL=" + tls.URL + "/v1", "OPENAI_API_KEY=" + openaiKey},
		FirstEventTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second, ExitGrace: 20 * time.Second,
		Sandbox: &runner.Sandbox{}}
	spec.Secrets = envSecrets(spec.Env)
	n, err := d.network(taskRun{workDir: t.TempDir(), taskID: "T-2026-001", role: amp.RoleExecutor}, "", &spec)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.meter == nil {
		t.Fatal("the run has no model relay")
	}
	// Priced by the default table: 4000 in and 1000 out of Sonnet is
	// $0.027, 2000 in of GPT-5.4 $0.005; the cap stops the run after the
	// third answer.
	n.meter.SetCap(0.03)
	o, err := runner.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(spec.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if env := read("env.txt"); strings.Contains(env, anthropicKey) || strings.Contains(env, openaiKey) {
		t.Errorf("a key reached the run:\n%s", env)
	} else if !strings.Contains(env, "ANTHROPIC_API_KEY=ampflow-relay-") {
		t.Errorf("the run has no placeholder for its key:\n%s", env)
	}
	if !strings.Contains(read("anthropic.txt"), "hello") {
		t.Errorf("the loopback model API did not answer through the relay: %q", read("anthropic.txt"))
	}
	if got := model.Requests(); len(got) != 1 || got[0].Header.Get("X-Api-Key") != anthropicKey {
		t.Errorf("the loopback model API got %d requests, key %q", len(got), got[0].Header.Get("X-Api-Key"))
	}
	if !strings.Contains(read("openai.txt"), "gpt-5.4") || tlsAuth != "Bearer "+openaiKey {
		t.Errorf("the https model API answered %q with key %q", read("openai.txt"), tlsAuth)
	}
	if u := n.meter.Usage(); u.InputTokens != 6000 || u.OutputTokens != 1000 {
		t.Errorf("metered %+v, want 6000 in, 1000 out", u)
	}
	if o.Reason != runner.ReasonMaxCost {
		t.Errorf("the run ended for %q, not at the cap the relays keep", o.Reason)
	}
}

// TestModelAPIs: the model APIs a run's relays are for, from its
// variables, its runner's default and, for an ACP agent, its keys.
func TestModelAPIs(t *testing.T) {
	apis := func(s runner.Spec) []string {
		var out []string
		s.Sandbox = &runner.Sandbox{}
		for _, a := range modelAPIs(&s) {
			out = append(out, a.env+"="+a.url.String())
		}
		return out
	}
	for _, c := range []struct {
		name string
		spec runner.Spec
		want []string
	}{
		{"ClaudeDefault", runner.Spec{Runner: runner.Claude, Env: []string{"ANTHROPIC_API_KEY=k"}}, []string{"ANTHROPIC_BASE_URL=https://api.anthropic.com"}},
		{"ClaudeNamed", runner.Spec{Runner: runner.Claude, Env: []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:9"}}, []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:9"}},
		{"GeminiNone", runner.Spec{Runner: runner.Gemini, Env: []string{"GEMINI_API_KEY=k"}}, nil},
		{"ACPByKey", runner.Spec{Runner: runner.ACP, Env: []string{"OPENAI_API_KEY=k", "ANTHROPIC_API_KEY=k"}},
			[]string{"ANTHROPIC_BASE_URL=https://api.anthropic.com", "OPENAI_BASE_URL=https://api.openai.com/v1"}},
		{"ACPNoKey", runner.Spec{Runner: runner.ACP, Env: []string{"HOME=/h"}}, nil},
		{"AnyBaseURL", runner.Spec{Runner: runner.OpenCode, Env: []string{"MY_GATEWAY_BASE_URL=https://gw.example/v1", "NOT_A_URL_BASE_URL=x"}},
			[]string{"MY_GATEWAY_BASE_URL=https://gw.example/v1"}},
	} {
		if got := apis(c.spec); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
