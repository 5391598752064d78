package amcp

import (
	"net/http"
	"testing"
)

// BenchmarkDecideExecute is one agent's round trip over HTTP on a SQLite
// store: POST /v1/decide (resolve, sign, store) then POST /v1/execute
// (read, verify, redeem in one statement) of a contract needing no gate.
func BenchmarkDecideExecute(b *testing.B) {
	h := newHarness(b, 1<<30)
	b.ReportAllocs()
	for b.Loop() {
		d := h.decide(b, keyA, pushIntent)
		if r := h.do(b, "POST", "/v1/execute", keyA, execBody(d.ContractID, "")); r.status != http.StatusOK {
			b.Fatalf("execute: %d %s", r.status, r.body)
		}
	}
}
