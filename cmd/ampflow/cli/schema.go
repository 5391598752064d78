package cli

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/aof"
	"github.com/ampflow/ampflow/integrations/repomesh"
	"github.com/ampflow/ampflow/integrations/runshift"
)

// schemaNames are every name ampflow schema knows: AMP/1.0's message
// types and ack, AOF/1's (aof.…), the signal, the mesh's (mesh.…).
func schemaNames() []string {
	names := slices.Clone(amp.SchemaNames())
	names = append(names, aof.SchemaNames()...)
	names = append(names, runshift.SchemaName)
	return append(names, repomesh.SchemaNames()...)
}

// jsonSchema is the JSON Schema of name.
func jsonSchema(name string) ([]byte, error) {
	switch {
	case strings.HasPrefix(name, aof.SchemaPrefix):
		return aof.JSONSchema(name)
	case strings.HasPrefix(name, repomesh.SchemaPrefix):
		return repomesh.JSONSchema(name)
	case name == runshift.SchemaName:
		return runshift.JSONSchema()
	}
	return amp.Schema(name)
}

func (a *App) schemaCommand() *cobra.Command {
	names := schemaNames()
	return &cobra.Command{
		Use:   "schema NAME",
		Short: "Print the JSON Schema of a message of AMP, AOF/1, the gate's signal or the mesh",
		Long: "Schema prints the JSON Schema (draft 2020-12) of NAME, as GET /v1/openapi.json\n" +
			"has it, for agents that validate on their side:\n" +
			"  AMP/1.0:      " + strings.Join(amp.SchemaNames(), ", ") + "\n" +
			"  AOF/1:        " + strings.Join(aof.SchemaNames(), ", ") + "\n" +
			"  gate signal:  " + runshift.SchemaName + " (runshift's AMP v1.0 payload, POST /v1/signals)\n" +
			"  mesh events:  mesh.envelope, or mesh. and an event type (" + strings.Join(repomesh.SchemaNames()[1:4], ", ") + ", …)\n" +
			"The schema is JSON whatever --output says. ampflow validate --kind checks a\n" +
			"message against the same rules as the server.",
		Example:   "  ampflow schema task_dispatch > task_dispatch.schema.json\n  ampflow schema aof.status.update\n  ampflow schema signal\n  ampflow schema mesh.task.claimed",
		ValidArgs: names,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return UsageError(fmt.Errorf("schema takes 1 argument (NAME, one of %s), got %d", strings.Join(names, ", "), len(args)))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if !slices.Contains(names, args[0]) {
				return UsageError(fmt.Errorf("unknown schema %q; valid names: %s", args[0], strings.Join(names, ", ")))
			}
			b, err := jsonSchema(args[0])
			if err != nil {
				return fmt.Errorf("building the schema %s: %w", args[0], err)
			}
			if !bytes.HasSuffix(b, []byte("\n")) {
				b = append(b, '\n')
			}
			_, err = a.Stdout.Write(b)
			return err
		},
	}
}
