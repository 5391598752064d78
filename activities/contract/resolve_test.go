package contract

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	c := Default()
	tests := []struct {
		name     string
		req      Request
		decision Decision
		want     string // the primitive, the candidates, the missing names or the reason
	}{
		{"ForcePush", Request{Intent: "Force-push main to origin", Parameters: map[string]any{"remote": "origin", "branch": "main"}}, DecisionExecute, "git.force_push"},
		{"GitPush", Request{Intent: "git push the fix", Parameters: map[string]any{"remote": "origin", "branch": "fix"}}, DecisionExecute, "git.push"},
		{"DeleteTree", Request{Intent: "rm -rf the build directory", Parameters: map[string]any{"path": "build"}}, DecisionExecute, "fs.delete_recursive"},
		{"Missing", Request{Intent: "merge pull request 42", Parameters: map[string]any{"owner": "acme"}}, DecisionInsufficient, "repo,pull_number"},
		{"EmptyValueMissing", Request{Intent: "send message on slack", Parameters: map[string]any{"channel": "#ops", "text": ""}}, DecisionInsufficient, "text"},
		{"Ambiguous", Request{Intent: "deploy the migration"}, DecisionClarify, "deploy.production,db.migrate"},
		{"NoMatch", Request{Intent: "order a pizza"}, DecisionNoMatch, "no primitive of the catalog matches the intent"},
		{"Blank", Request{Intent: " ?! "}, DecisionNoMatch, "the intent holds no words"},
		{"Provider", Request{Intent: "deploy the migration", Provider: "db", Parameters: map[string]any{"database": "main", "environment": "staging"}}, DecisionExecute, "db.migrate"},
		{"ProviderNoMatch", Request{Intent: "git push", Provider: "npm"}, DecisionNoMatch, `no primitive of provider "npm" matches the intent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := c.Resolve(tt.req)
			var got string
			switch res.Decision {
			case DecisionExecute:
				got = res.Primitive.Name
			case DecisionInsufficient:
				got = strings.Join(res.Missing, ",")
			case DecisionClarify:
				got = strings.Join(res.Candidates, ",")
				if !strings.HasPrefix(res.Question, "Do you mean ") || strings.Count(res.Question, "?") != 1 {
					t.Errorf("question %q; want one question", res.Question)
				}
			case DecisionNoMatch:
				got = res.Reason
			}
			if res.Decision != tt.decision || got != tt.want {
				t.Errorf("%s %q; want %s %q", res.Decision, got, tt.decision, tt.want)
			}
		})
	}
}

// Identical requests resolve identically and issue contracts equal but
// for their ids and times.
func TestResolveDeterministic(t *testing.T) {
	req := Request{Intent: "delete the directory tmp/cache recursively", Parameters: map[string]any{"path": "tmp/cache", "n": 3.0}}
	var first Contract
	for i := range 50 {
		c := Default() // a fresh parse each time: nothing hangs on map order
		res := c.Resolve(req)
		k, err := Issue(res, req.Parameters, "agent:a", "s1", time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(k.ID, "cnt_") || len(k.ID) != len("cnt_")+36 {
			t.Fatalf("contract id %q; want cnt_ and a UUID", k.ID)
		}
		if i == 0 {
			first = k
			continue
		}
		if k.ID == first.ID {
			t.Fatal("two contracts share an id")
		}
		k.ID, k.IssuedAt, k.ExpiresAt = first.ID, first.IssuedAt, first.ExpiresAt
		a, _ := json.Marshal(first)
		b, _ := json.Marshal(k)
		if string(a) != string(b) {
			t.Fatalf("run %d differs:\n%s\n%s", i, a, b)
		}
	}
	if first.Risk.MinimumHandling != HandlingHumanRequired || first.PrimitiveRiskScore != 165 {
		t.Errorf("contract %+v", first)
	}
}

func TestSignAndTamper(t *testing.T) {
	secret := []byte("s3cret")
	c := Default()
	req := Request{Intent: "merge the pull request", Parameters: map[string]any{"owner": "acme", "repo": "web", "pull_number": 7}}
	k, err := Issue(c.Resolve(req), req.Parameters, "agent:a", "", time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if k.Blueprint.Endpoint != "https://api.github.com/repos/acme/web/pulls/7/merge" || k.Blueprint.Method != "PUT" {
		t.Errorf("blueprint %+v", k.Blueprint)
	}
	sig := k.Sign(secret)
	// Read back from its stored JSON, it still verifies.
	var back Contract
	if err := json.Unmarshal(k.Canonical(), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Verify(secret, sig) || !reflect.DeepEqual(back, k) {
		t.Fatalf("the stored contract does not verify:\n%+v\n%+v", back, k)
	}
	if k.Verify([]byte("other"), sig) {
		t.Error("verified under another secret")
	}
	tampers := map[string]func(*Contract){
		"parameters": func(c *Contract) { c.Parameters["repo"] = "payroll" },
		"handling":   func(c *Contract) { c.Risk.MinimumHandling = HandlingAllow },
		"score":      func(c *Contract) { c.PrimitiveRiskScore = 0 },
		"expiry":     func(c *Contract) { c.ExpiresAt = c.ExpiresAt.Add(time.Hour) },
		"owner":      func(c *Contract) { c.Owner = "agent:b" },
		"blueprint":  func(c *Contract) { c.Blueprint.Endpoint = "https://evil.example" },
		"primitive":  func(c *Contract) { c.Primitive = "git.push" },
	}
	for name, tamper := range tampers {
		var x Contract
		json.Unmarshal(k.Canonical(), &x)
		tamper(&x)
		if x.Verify(secret, sig) {
			t.Errorf("a contract with its %s changed verifies", name)
		}
	}
	tok := ApprovalToken(secret, k.ID, k.Digest())
	if !CheckApprovalToken(secret, k.ID, k.Digest(), tok) || CheckApprovalToken(secret, k.ID, strings.Repeat("0", 64), tok) ||
		CheckApprovalToken(secret, "cnt_other", k.Digest(), tok) || !strings.HasPrefix(tok, "apr_") {
		t.Error("the approval token is not bound to the contract's id and digest")
	}
	if !slices.Equal(k.Risk.Reasoning, []string{"irreversibleWrite", "productionImpact"}) {
		t.Errorf("reasoning %q", k.Risk.Reasoning)
	}
}
