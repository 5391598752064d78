package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/aof"
	"github.com/ampflow/ampflow/integrations/repomesh"
	"github.com/ampflow/ampflow/integrations/runshift"
)

// validateResult is the JSON output of validate.
type validateResult struct {
	Valid bool `json:"valid"`
	// Kind is the kind checked when not AMP: aof, signal or mesh.
	Kind   string         `json:"kind,omitempty"`
	Type   string         `json:"type,omitempty"`
	MsgID  string         `json:"msg_id,omitempty"`
	Errors []invalidField `json:"errors,omitempty"`
}

// invalidField is one reason a record is invalid. Offset is set for
// malformed JSON only.
type invalidField struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
	Offset  *int64 `json:"offset,omitempty"`
}

// The kinds of message ampflow validate checks.
const (
	kindAMP    = "amp"
	kindAOF    = "aof"
	kindSignal = "signal"
	kindMesh   = "mesh"
)

var validateKinds = []string{kindAMP, kindAOF, kindSignal, kindMesh}

func (a *App) validateCommand() *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "validate [--kind amp|aof|signal|mesh] FILE|-",
		Short: "Check a message of AMP/1.0, AOF/1, the gate's signal or the mesh",
		Long: "Validate reads one message from FILE, or from stdin for -, and checks it\n" +
			"strictly, by the rules the server applies to it. --kind says which:\n" +
			"  amp     an AMP/1.0 message or ACK record (the default)\n" +
			"  aof     an AOF/1 envelope, or a received message {\"content\": \"AOF/1 {…}\"}\n" +
			"  signal  runshift's AMP signal, as POST /v1/signals takes it (what only the\n" +
			"          server knows is not checked: the agent's key and projects, the\n" +
			"          webhook host, the task, the budgets)\n" +
			"  mesh    a mesh event envelope, as POST /v1/events takes it (who may send it\n" +
			"          is not checked)\n" +
			"It prints \"valid <kind> <type> <id>\" (for AMP, \"valid <type> <msg_id>\", type\n" +
			"ack for an ACK record) and exits 0, or prints each failing field as\n" +
			"\"path: problem\" and exits 1. ampflow schema prints each JSON Schema.",
		Example: "  ampflow validate dispatch.json\n  agent-cli emit | ampflow validate -o json -\n" +
			"  ampflow validate --kind aof status.json\n  ampflow validate --kind signal signal.json\n  ampflow validate --kind mesh event.json",
		Args: exactArgs(1, "FILE, or - for stdin"),
		RunE: func(_ *cobra.Command, args []string) error {
			if !slices.Contains(validateKinds, kind) {
				return UsageError(fmt.Errorf("--kind: %q is not a kind; choose %s", kind, strings.Join(validateKinds, ", ")))
			}
			b, err := a.readInput(args[0])
			if err != nil {
				return Exit(ExitUsage, err)
			}
			res := checkKind(kind, b)
			if err := a.printValidation(res); err != nil {
				return err
			}
			if !res.Valid {
				return Exit(ExitFailed, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", kindAMP, "what the message is: `KIND` amp, aof, signal or mesh")
	return cmd
}

// checkKind checks b as a message of kind.
func checkKind(kind string, b []byte) validateResult {
	if kind == kindAMP {
		return check(b)
	}
	if !json.Valid(b) {
		// The offset of the fault, as for AMP.
		var v any
		err := json.Unmarshal(b, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off := se.Offset
			return validateResult{Errors: []invalidField{{Path: amp.RootPath, Problem: fmt.Sprintf("malformed JSON at byte offset %d: %s", off, se.Error()), Offset: &off}}}
		}
		return validateResult{Errors: []invalidField{{Path: amp.RootPath, Problem: "malformed JSON"}}}
	}
	var (
		typ, id string
		errs    []amp.FieldError
	)
	switch kind {
	case kindAOF:
		m, fs := aof.Validate(b)
		typ, id, errs = m.Type, m.TaskID, fs
	case kindSignal:
		s, fs := runshift.ValidateSignal(b)
		typ, id, errs = s.Status, s.RunID, fs
	case kindMesh:
		env, fs := repomesh.ValidateEvent(b)
		typ, id, errs = env.Type, env.ID, fs
	}
	if len(errs) > 0 {
		fields := make([]invalidField, len(errs))
		for i, f := range errs {
			fields[i] = invalidField{Path: f.Path, Problem: f.Problem}
		}
		return validateResult{Errors: fields}
	}
	return validateResult{Valid: true, Kind: kind, Type: typ, MsgID: id}
}

func (a *App) readInput(name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(a.Stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		// The *PathError already names the file.
		return nil, fmt.Errorf("reading input: %w", err)
	}
	return b, nil
}

// check parses b as a message or an ACK record.
func check(b []byte) validateResult {
	rec, err := amp.ParseRecord(b)
	if err == nil {
		res := validateResult{Valid: true, MsgID: rec.ID(), Type: amp.AckPrefix}
		if rec.Message != nil {
			res.Type = string(rec.Message.Type)
		}
		return res
	}
	var (
		ve *amp.ValidationError
		se *amp.SyntaxError
	)
	switch {
	case errors.As(err, &ve):
		fields := make([]invalidField, len(ve.Fields))
		for i, f := range ve.Fields {
			fields[i] = invalidField{Path: f.Path, Problem: f.Problem}
		}
		return validateResult{Errors: fields}
	case errors.As(err, &se):
		off := se.Offset
		return validateResult{Errors: []invalidField{{
			Path:    amp.RootPath,
			Problem: fmt.Sprintf("malformed JSON at byte offset %d: %s", se.Offset, se.Msg),
			Offset:  &off,
		}}}
	}
	return validateResult{Errors: []invalidField{{Path: amp.RootPath, Problem: strings.TrimPrefix(err.Error(), "amp: ")}}}
}

func (a *App) printValidation(res validateResult) error {
	if a.JSON() {
		return a.PrintJSON(res)
	}
	var b strings.Builder
	if res.Valid {
		fmt.Fprintln(&b, strings.Join(slices.DeleteFunc([]string{"valid", res.Kind, res.Type, res.MsgID}, func(s string) bool { return s == "" }), " "))
	}
	for _, f := range res.Errors {
		if f.Offset != nil {
			// A syntax error has no path worth showing.
			fmt.Fprintln(&b, f.Problem)
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", f.Path, f.Problem)
	}
	_, err := io.WriteString(a.Stdout, b.String())
	return err
}
