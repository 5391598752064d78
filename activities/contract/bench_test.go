package contract

import (
	"encoding/json"
	"testing"
	"time"
)

var benchReq = Request{
	Intent:     "merge the pull request 42 of acme/web once checks pass",
	Parameters: map[string]any{"owner": "acme", "repo": "web", "pull_number": 42, "merge_method": "squash"},
}

// BenchmarkResolve resolves one intent over the default catalog (ten
// primitives): keyword scoring, the risk score and the level.
func BenchmarkResolve(b *testing.B) {
	c := Default()
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Resolve(benchReq); res.Decision != DecisionExecute {
			b.Fatal(res.Decision)
		}
	}
}

// BenchmarkIssueAndSign issues a contract (id, blueprint) and signs it.
func BenchmarkIssueAndSign(b *testing.B) {
	c := Default()
	res := c.Resolve(benchReq)
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		k, err := Issue(res, benchReq.Parameters, "agent:deployer", "s1", now, DefaultTTL)
		if err != nil {
			b.Fatal(err)
		}
		if k.Sign(secret) == "" {
			b.Fatal("no signature")
		}
	}
}

// BenchmarkVerify is what execute does to a stored contract: decode its
// body, check its signature and recompute its digest.
func BenchmarkVerify(b *testing.B) {
	c := Default()
	secret := []byte("0123456789abcdef0123456789abcdef")
	k, _ := Issue(c.Resolve(benchReq), benchReq.Parameters, "agent:deployer", "s1", time.Now(), DefaultTTL)
	body, sig := k.Canonical(), k.Sign(secret)
	b.ReportAllocs()
	for b.Loop() {
		var back Contract
		if err := json.Unmarshal(body, &back); err != nil {
			b.Fatal(err)
		}
		if !back.Verify(secret, sig) || back.Digest() == "" {
			b.Fatal("does not verify")
		}
	}
}

// BenchmarkLoadCatalog parses and validates the default catalog, as a
// worker does at start.
func BenchmarkLoadCatalog(b *testing.B) {
	data := DefaultCatalogYAML()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, "default"); err != nil {
			b.Fatal(err)
		}
	}
}
