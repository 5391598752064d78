package cli

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
)

func (a *App) schemaCommand() *cobra.Command {
	names := strings.Join(amp.SchemaNames(), ", ")
	return &cobra.Command{
		Use:   "schema TYPE",
		Short: "Print the JSON Schema of a message type or of the ACK record",
		Long: "Schema prints the embedded JSON Schema (draft 2020-12) of TYPE, one of:\n" +
			names + ".\nThe schema is JSON whatever --output says.",
		Example:   "  ampflow schema task_dispatch > task_dispatch.schema.json",
		ValidArgs: amp.SchemaNames(),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return UsageError(fmt.Errorf("schema takes 1 argument (TYPE, one of %s), got %d", names, len(args)))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			b, err := amp.Schema(args[0])
			if err != nil {
				return UsageError(fmt.Errorf("unknown type %q; valid types: %s", args[0], names))
			}
			if !bytes.HasSuffix(b, []byte("\n")) {
				b = append(b, '\n')
			}
			_, err = a.Stdout.Write(b)
			return err
		},
	}
}
