package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/ampflow/ampflow/amp"
)

// ampCorpus reads the amp package's test documents: the valid ones to
// mutate and the invalid ones to send as they are.
func ampCorpus(t *testing.T) (valid, invalid [][]byte) {
	t.Helper()
	root := filepath.Join("..", "..", "amp", "testdata")
	for _, dir := range []string{"valid", "spec", "invalid", "goonly"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := amp.ParseRecord(b); err == nil {
				valid = append(valid, b)
			} else {
				invalid = append(invalid, b)
			}
		}
	}
	if len(valid) == 0 || len(invalid) == 0 {
		t.Fatalf("amp test corpus under %s: %d valid and %d invalid documents", root, len(valid), len(invalid))
	}
	return valid, invalid
}

// mutation turns a document into another, usually broken one.
type mutation struct {
	name string
	f    func(r *rand.Rand, b []byte) []byte
}

var mutations = []mutation{
	{"truncate", func(r *rand.Rand, b []byte) []byte { return b[:r.IntN(len(b))] }},
	{"flip byte", func(r *rand.Rand, b []byte) []byte {
		b = bytes.Clone(b)
		b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
		return b
	}},
	{"wrong type", func(r *rand.Rand, b []byte) []byte {
		return editObject(r, b, func(obj map[string]any, key string) {
			obj[key] = otherKind(r, obj[key])
		})
	}},
	{"unknown field", func(r *rand.Rand, b []byte) []byte {
		return editObject(r, b, func(obj map[string]any, _ string) {
			obj[fmt.Sprintf("unexpected_%d", r.IntN(1000))] = otherKind(r, nil)
		})
	}},
	{"missing field", func(r *rand.Rand, b []byte) []byte {
		return editObject(r, b, func(obj map[string]any, key string) { delete(obj, key) })
	}},
	{"protocol version", func(r *rand.Rand, b []byte) []byte {
		return editTop(b, func(obj map[string]any) {
			versions := []any{"AMP/2.0", "AMP/1.1", "amp/1.0", "", "AMP/1.0 ", 1.0, nil}
			obj["protocol_version"] = versions[r.IntN(len(versions))]
		})
	}},
	{"msg_id", func(r *rand.Rand, b []byte) []byte {
		return editTop(b, func(obj map[string]any) {
			ids := []any{"", "T-2026-001", "task_result-T-26-1-1", "escalation--1", "ack-T-2026-001-x", 7.0}
			obj["msg_id"] = ids[r.IntN(len(ids))]
		})
	}},
	{"duplicate key", func(r *rand.Rand, b []byte) []byte {
		i := bytes.IndexByte(b, '{')
		if i < 0 {
			return append(bytes.Clone(b), '}')
		}
		return append(append(bytes.Clone(b[:i+1]), `"type":"task_result",`...), b[i+1:]...)
	}},
	{"wrapped", func(r *rand.Rand, b []byte) []byte {
		switch r.IntN(4) {
		case 0:
			return append(append([]byte("["), b...), ']')
		case 1:
			return append(bytes.Clone(b), b...)
		case 2:
			return append(bytes.Clone(b), " x"...)
		}
		return append([]byte(`{"record":`), append(bytes.Clone(b), '}')...)
	}},
	{"invalid utf-8", func(r *rand.Rand, b []byte) []byte {
		i := bytes.IndexByte(b, '"')
		if i < 0 {
			i = 0
		}
		return append(append(bytes.Clone(b[:i+1]), 0xff, 0xfe), b[i+1:]...)
	}},
	{"garbage", func(r *rand.Rand, _ []byte) []byte {
		b := make([]byte, r.IntN(120))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}},
}

// editTop re-encodes a document that is a JSON object after edit changed
// it; anything else comes back as it is.
func editTop(b []byte, edit func(map[string]any)) []byte {
	var obj map[string]any
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		return b
	}
	edit(obj)
	out, _ := json.Marshal(obj)
	return out
}

// editObject edits one key, picked at random, of the document or of its
// payload.
func editObject(r *rand.Rand, b []byte, edit func(obj map[string]any, key string)) []byte {
	return editTop(b, func(top map[string]any) {
		obj := top
		if p, ok := top["payload"].(map[string]any); ok && len(p) > 0 && r.IntN(2) == 0 {
			obj = p
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			edit(obj, "msg_id")
			return
		}
		sort.Strings(keys)
		edit(obj, keys[r.IntN(len(keys))])
	})
}

// otherKind returns a JSON value of another kind than v.
func otherKind(r *rand.Rand, v any) any {
	kinds := []any{42.0, "x", true, nil, []any{1.0}, map[string]any{"k": 1.0}}
	for {
		w := kinds[r.IntN(len(kinds))]
		if fmt.Sprintf("%T", w) != fmt.Sprintf("%T", v) {
			return w
		}
	}
}

// malformedBodies returns n documents amp refuses, the same for the same
// seed: first the invalid corpus as it is, then mutations of valid and
// invalid documents. Mutations that still parse are dropped; skipped
// says how many.
func malformedBodies(valid, invalid [][]byte, n int, seed uint64) (bodies [][]byte, skipped int) {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	keep := func(b []byte) {
		if len(bodies) >= n {
			return
		}
		if _, err := amp.ParseRecord(b); err != nil {
			bodies = append(bodies, b)
		} else {
			skipped++
		}
	}
	for _, b := range invalid {
		keep(b)
	}
	all := append(append([][]byte{}, valid...), invalid...)
	for len(bodies) < n {
		// Valid documents three times out of four: their mutations get
		// further into the checks.
		base := all[r.IntN(len(all))]
		if r.IntN(4) > 0 {
			base = valid[r.IntN(len(valid))]
		}
		b := mutations[r.IntN(len(mutations))].f(r, base)
		if r.IntN(8) == 0 {
			b = mutations[r.IntN(len(mutations))].f(r, b)
		}
		keep(b)
	}
	return bodies, skipped
}

// TestFaultCorpusDeterministic checks the generator the flood relies on:
// the same seed gives the same bodies, and amp refuses every one.
func TestFaultCorpusDeterministic(t *testing.T) {
	valid, invalid := ampCorpus(t)
	a, _ := malformedBodies(valid, invalid, 2000, 7)
	b, _ := malformedBodies(valid, invalid, 2000, 7)
	if len(a) != 2000 {
		t.Fatalf("%d bodies, want 2000", len(a))
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("body %d differs between two runs with one seed:\n%q\n%q", i, a[i], b[i])
		}
		if _, err := amp.ParseRecord(a[i]); err == nil {
			t.Fatalf("body %d parses: %s", i, a[i])
		}
	}
}
