package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
)

// validateResult is the JSON output of validate.
type validateResult struct {
	Valid  bool           `json:"valid"`
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

func (a *App) validateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|-",
		Short: "Check an AMP/1.0 message or ACK record",
		Long: "Validate reads one AMP/1.0 message or ACK record from FILE, or from stdin\n" +
			"for -, and checks it strictly against the protocol. It prints\n" +
			"\"valid <type> <msg_id>\" (type ack for an ACK record) and exits 0, or prints\n" +
			"each failing field as \"path: problem\" and exits 1.",
		Example: "  ampflow validate dispatch.json\n  agent-cli emit | ampflow validate -o json -",
		Args:    exactArgs(1, "FILE, or - for stdin"),
		RunE: func(_ *cobra.Command, args []string) error {
			b, err := a.readInput(args[0])
			if err != nil {
				return Exit(ExitUsage, err)
			}
			res := check(b)
			if err := a.printValidation(res); err != nil {
				return err
			}
			if !res.Valid {
				return Exit(ExitFailed, nil)
			}
			return nil
		},
	}
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
		fmt.Fprintf(&b, "valid %s %s\n", res.Type, res.MsgID)
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
