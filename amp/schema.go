package amp

import (
	"embed"
	"fmt"
	"slices"
)

//go:embed schemas/*.json
var schemaFS embed.FS

// SchemaAck is the schema name of the ACK record.
const SchemaAck = "ack"

// SchemaNames lists the names Schema accepts: the five message types in
// protocol order, then "ack".
func SchemaNames() []string {
	names := make([]string, 0, len(Types())+1)
	for _, t := range Types() {
		names = append(names, string(t))
	}
	return append(names, SchemaAck)
}

// Schema returns the self-contained JSON Schema (draft 2020-12) of one
// message type or of the ACK record. Rules a schema cannot express are
// listed in its description; Parse and ParseAck enforce them too.
func Schema(name string) ([]byte, error) {
	if !slices.Contains(SchemaNames(), name) {
		return nil, fmt.Errorf("%w %q", ErrUnknownSchema, name)
	}
	return schemaFS.ReadFile("schemas/" + name + ".json")
}
