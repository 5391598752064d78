package runner_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// TestRelay relays each vendor's dialect to the fake model: the request
// reaches it with the real key where the CLI sent a placeholder, the
// response reaches the CLI whole, and the meter counts the tokens the
// response reported.
func TestRelay(t *testing.T) {
	const secret, placeholder = "sk-real-secret-key-value", "ampflow-relay-0123456789"
	cases := []struct {
		name, path, body string
		header           http.Header
		keyAt            func(fakemodel.Request) string
	}{
		{"Anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"}]}`,
			http.Header{"X-Api-Key": {placeholder}}, func(r fakemodel.Request) string { return r.Header.Get("X-Api-Key") }},
		{"Responses", "/v1/responses", `{"model":"gpt-5.5","stream":true,"tools":[{"type":"function","name":"shell"}],"input":[]}`,
			http.Header{"Authorization": {"Bearer " + placeholder}}, func(r fakemodel.Request) string { return r.Header.Get("Authorization") }},
		{"Gemini", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=" + placeholder,
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`,
			http.Header{"X-Goog-Api-Key": {placeholder}}, func(r fakemodel.Request) string { return r.Header.Get("X-Goog-Api-Key") + " " + r.Path }},
		{"ChatCompletions", "/v1/chat/completions", `{"model":"gpt-5.4","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"bash"}}],"messages":[]}`,
			http.Header{"Authorization": {"Bearer " + placeholder}}, func(r fakemodel.Request) string { return r.Header.Get("Authorization") }},
		{"AnthropicJSON", "/v1/messages", `{"model":"claude-sonnet-4-5","tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"}]}`,
			http.Header{"X-Api-Key": {placeholder}}, func(r fakemodel.Request) string { return r.Header.Get("X-Api-Key") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := fakemodel.New(fakemodel.Turn{Text: "done", InputTokens: 1000, OutputTokens: 200})
			defer model.Close()
			up, _ := url.Parse(model.URL())
			var priced string
			meter := runner.NewMeter("fallback", func(m string, in, out int64) float64 { priced = m; return float64(in+out) / 1e3 })
			relay := httptest.NewServer(runner.NewRelay(up, map[string]string{placeholder: secret}, meter, nil, nil))
			defer relay.Close()

			req, _ := http.NewRequest(http.MethodPost, relay.URL+c.path, strings.NewReader(c.body))
			req.Header = c.header.Clone()
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), "done") {
				t.Fatalf("relayed answer %d %s", resp.StatusCode, body)
			}
			reqs := model.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests reached the model", len(reqs))
			}
			if got := c.keyAt(reqs[0]); !strings.Contains(got, secret) || strings.Contains(got, placeholder) {
				t.Errorf("the model got key %q, want the real one", got)
			}
			u := meter.Usage()
			if u.InputTokens != 1000 || u.OutputTokens != 200 || u.CostUSD != 1.2 || !u.CostReported {
				t.Errorf("metered %+v, want 1000 in, 200 out, $1.20", u)
			}
			if priced == "fallback" || priced == "" {
				t.Errorf("priced as %q, not by the model the response names", priced)
			}
		})
	}
}

// TestRelayCap: once the metered cost passes the cap, the meter says stop
// and the relay refuses the next request without reaching the model.
func TestRelayCap(t *testing.T) {
	model := fakemodel.New(fakemodel.Turn{Text: "one", InputTokens: 1000, OutputTokens: 1000}, fakemodel.Turn{Text: "two"})
	defer model.Close()
	up, _ := url.Parse(model.URL())
	meter := runner.NewMeter("m", func(_ string, in, out int64) float64 { return float64(in+out) / 1e3 })
	meter.SetCap(1.5)
	relay := httptest.NewServer(runner.NewRelay(up, nil, meter, nil, nil))
	defer relay.Close()
	post := func() (int, string) {
		resp, err := http.Post(relay.URL+"/v1/messages", "application/json",
			strings.NewReader(`{"model":"claude-sonnet-4-5","stream":true,"tools":[{"name":"Bash"}],"messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := post(); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	select {
	case r := <-meter.Stop():
		if r != runner.ReasonMaxCost {
			t.Errorf("stop for %q", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the meter did not stop the run past its cap")
	}
	code, body := post()
	if code != http.StatusBadRequest || !strings.Contains(body, "max_cost_usd $1.50") {
		t.Errorf("past the cap: %d %s", code, body)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d requests reached the model, want 1", n)
	}
}

// BenchmarkModelRelay measures what a CLI's model request pays for going
// through its relay: the same streamed Messages request to the fake
// model API, direct and through the relay (key swapped, answer metered),
// p50 and p99 of each.
func BenchmarkModelRelay(b *testing.B) {
	turns := make([]fakemodel.Turn, 0, 4096)
	for range cap(turns) {
		turns = append(turns, fakemodel.Turn{Text: "a reply of a few words", InputTokens: 1000, OutputTokens: 100})
	}
	model := fakemodel.New(turns...)
	defer model.Close()
	up, _ := url.Parse(model.URL())
	meter := runner.NewMeter("m", func(_ string, in, out int64) float64 { return float64(in+out) / 1e6 })
	relay := httptest.NewServer(runner.NewRelay(up, map[string]string{"ampflow-relay-x": "sk-real"}, meter, nil, nil))
	defer relay.Close()
	const body = `{"model":"claude-sonnet-4-5","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"}]}`
	post := func(base string) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Api-Key", "ampflow-relay-x")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
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
	var d, r []time.Duration
	for b.Loop() {
		if len(d) >= cap(turns)/2-1 {
			b.Fatal("the benchmark ran past the fake's turns: lower -benchtime")
		}
		d = append(d, post(model.URL()))
		r = append(r, post(relay.URL))
	}
	pct := func(s []time.Duration, q int) float64 {
		slices.Sort(s)
		return float64(s[(len(s)-1)*q/100].Microseconds()) / 1000
	}
	b.ReportMetric(pct(d, 50), "direct_p50_ms")
	b.ReportMetric(pct(d, 99), "direct_p99_ms")
	b.ReportMetric(pct(r, 50), "relay_p50_ms")
	b.ReportMetric(pct(r, 99), "relay_p99_ms")
}
