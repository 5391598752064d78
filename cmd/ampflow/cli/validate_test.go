package cli

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	dispatchFile = "testdata/dispatch.json"
	dispatchID   = "task_dispatch-T-2026-044-1740576727001"
	ackFile      = "testdata/ack.json"
	ackID        = "ack-T-2026-044-1740576730000"
	invalidFile  = "testdata/dispatch_invalid.json"
	invalidPaths = "payload.branch payload.acceptance_criteria payload.risk_level"
	malformed    = "testdata/malformed.json"
)

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// malformedOffset is where malformed.json goes wrong: the comma in "{,}".
func malformedOffset(t *testing.T) int64 {
	return int64(strings.Index(readFile(t, malformed), "{,}") + 1)
}

// paths returns the "path" of each "path: problem" line.
func paths(lines string) []string {
	var ps []string
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		p, _, _ := strings.Cut(l, ": ")
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func TestValidateText(t *testing.T) {
	wantPaths := strings.Fields(invalidPaths)
	slices.Sort(wantPaths)
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		check      func(t *testing.T, stdout string)
		wantStderr string
	}{
		{"Message", []string{"validate", dispatchFile}, "", ExitOK, equals("valid task_dispatch " + dispatchID + "\n"), ""},
		{"Ack", []string{"validate", ackFile}, "", ExitOK, equals("valid ack " + ackID + "\n"), ""},
		{"Stdin", []string{"validate", "-"}, readFile(t, dispatchFile), ExitOK, equals("valid task_dispatch " + dispatchID + "\n"), ""},
		{"InvalidFields", []string{"validate", invalidFile}, "", ExitFailed, func(t *testing.T, stdout string) {
			if got := paths(stdout); !slices.Equal(got, wantPaths) {
				t.Errorf("failing paths = %q, want %q\n%s", got, wantPaths, stdout)
			}
		}, ""},
		{"Malformed", []string{"validate", malformed}, "", ExitFailed, func(t *testing.T, stdout string) {
			want := "malformed JSON at byte offset " + strconv.FormatInt(malformedOffset(t), 10) + ": "
			if !strings.HasPrefix(stdout, want) || strings.Count(stdout, "\n") != 1 {
				t.Errorf("stdout = %q, want one line starting %q", stdout, want)
			}
		}, ""},
		{"EmptyStdin", []string{"validate", "-"}, "", ExitFailed, func(t *testing.T, stdout string) {
			if !strings.HasPrefix(stdout, "malformed JSON at byte offset 0") {
				t.Errorf("stdout = %q", stdout)
			}
		}, ""},
		{"MissingFile", []string{"validate", "testdata/nope.json"}, "", ExitUsage, equals(""),
			"ampflow: reading input: open testdata/nope.json: no such file or directory\n"},
		{"NoArgs", []string{"validate"}, "", ExitUsage, equals(""), "ampflow: validate takes 1 argument (FILE, or - for stdin), got 0\nUsage:"},
		{"TwoArgs", []string{"validate", dispatchFile, ackFile}, "", ExitUsage, equals(""), "ampflow: validate takes 1 argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.stdin, nil, nil, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tt.wantCode, r.stderr)
			}
			tt.check(t, r.stdout)
			if !strings.HasPrefix(r.stderr, tt.wantStderr) || (tt.wantStderr == "" && r.stderr != "") {
				t.Errorf("stderr = %q, want prefix %q", r.stderr, tt.wantStderr)
			}
		})
	}
}

func equals(want string) func(*testing.T, string) {
	return func(t *testing.T, got string) {
		t.Helper()
		if got != want {
			t.Errorf("stdout = %q, want %q", got, want)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	decode := func(t *testing.T, r result) validateResult {
		t.Helper()
		var v validateResult
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("stdout %q is not the JSON result: %v", r.stdout, err)
		}
		return v
	}
	t.Run("Valid", func(t *testing.T) {
		r := run(t, "", nil, nil, "-o", "json", "validate", ackFile)
		want := validateResult{Valid: true, Type: "ack", MsgID: ackID}
		if got := decode(t, r); r.code != ExitOK || !reflect.DeepEqual(got, want) {
			t.Errorf("exit %d, result %+v; want 0, %+v", r.code, got, want)
		}
		if !strings.Contains(r.stdout, `"valid":true`) {
			t.Errorf("stdout = %q", r.stdout)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		r := run(t, readFile(t, invalidFile), nil, nil, "validate", "--output=json", "-")
		got := decode(t, r)
		var ps []string
		for _, e := range got.Errors {
			if e.Problem == "" {
				t.Errorf("%s has no problem", e.Path)
			}
			ps = append(ps, e.Path)
		}
		slices.Sort(ps)
		want := strings.Fields(invalidPaths)
		slices.Sort(want)
		if r.code != ExitFailed || got.Valid || !slices.Equal(ps, want) {
			t.Errorf("exit %d, result %+v; want 1 and paths %q", r.code, got, want)
		}
		if !strings.Contains(r.stdout, `"valid":false,"errors":[{"path":`) {
			t.Errorf("stdout = %q", r.stdout)
		}
	})
	t.Run("Malformed", func(t *testing.T) {
		r := run(t, "", nil, nil, "validate", "-o", "json", malformed)
		got := decode(t, r)
		if r.code != ExitFailed || len(got.Errors) != 1 || got.Errors[0].Offset == nil || *got.Errors[0].Offset != malformedOffset(t) {
			t.Errorf("exit %d, result %+v; want 1 and offset %d", r.code, got, malformedOffset(t))
		}
	})
}

// TestValidateKinds: --kind checks AOF/1 messages, signals and mesh
// events by the server's rules, naming each field at fault.
func TestValidateKinds(t *testing.T) {
	aofOK := `{"protocol":"aof","version":1,"type":"status.update","taskId":"TASK-2026-02-09-057","fromAgent":"swe-backend","toAgent":"dispatcher",` +
		`"sentAt":"2026-02-09T21:20:00.000Z","payload":{"taskId":"TASK-2026-02-09-057","agentId":"swe-backend","progress":"half"}}`
	signalOK := `{"amp_version":"1.0","agent_id":"resume-tailor","run_id":"run_01","status":"completed","summary":"did it","model":"gpt-4o",` +
		`"input_tokens":10,"output_tokens":5,"cost_usd":0.001,"gate_required":false,"started_at":"2026-03-06T22:10:38Z","completed_at":"2026-03-06T22:10:46Z"}`
	meshOK := `{"type":"task.claimed","severity":"info","payload":{"task_id":"T-2026-001","agent_id":"bob","lease_ttl":300}}`
	for _, tc := range []struct {
		name, kind, in string
		code           int
		want           string
	}{
		{"AOFValid", "aof", aofOK, ExitOK, "valid aof status.update TASK-2026-02-09-057\n"},
		{"AOFReceived", "aof", `{"content":` + strconv.Quote("AOF/1 "+aofOK) + `}`, ExitOK, "valid aof status.update TASK-2026-02-09-057\n"},
		{"AOFBadPayload", "aof", strings.Replace(aofOK, `"progress":"half"`, `"status":"later"`, 1), ExitFailed, `payload.status: "later" is not a task status`},
		{"AOFUnknownType", "aof", strings.Replace(aofOK, `"status.update"`, `"status.upgrade"`, 1), ExitFailed, "type: \"status.upgrade\" is not an AOF/1 message type"},
		{"SignalValid", "signal", signalOK, ExitOK, "valid signal completed run_01\n"},
		{"SignalUnknownField", "signal", strings.Replace(signalOK, `"model"`, `"modle":"x","model"`, 1), ExitFailed, "modle: is not a field of the signal"},
		{"SignalBadStatus", "signal", strings.Replace(signalOK, `"completed"`, `"done"`, 1), ExitFailed, "status:"},
		{"MeshValid", "mesh", meshOK, ExitOK, "valid mesh task.claimed\n"},
		{"MeshMissingField", "mesh", strings.Replace(meshOK, `,"lease_ttl":300`, "", 1), ExitFailed, "payload.lease_ttl: is required (integer)"},
		{"Malformed", "mesh", `{"type":`, ExitFailed, "malformed JSON at byte offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.in, nil, nil, "validate", "--kind", tc.kind, "-")
			if r.code != tc.code || !strings.Contains(r.stdout, tc.want) {
				t.Errorf("exit %d, stdout %q; want %d and %q", r.code, r.stdout, tc.code, tc.want)
			}
		})
	}
	r := run(t, "{}", nil, nil, "validate", "--kind", "rfc", "-")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "amp, aof, signal, mesh") {
		t.Errorf("--kind rfc: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, aofOK, nil, nil, "-o", "json", "validate", "--kind", "aof", "-")
	var res validateResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || !res.Valid || res.Kind != "aof" || res.Type != "status.update" {
		t.Errorf("-o json: %q (%v)", r.stdout, err)
	}
}
