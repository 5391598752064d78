package amp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Canonical returns a JSON value in canonical form: object keys sorted, no
// insignificant white space, numbers as written, no HTML escaping. Two
// values that differ only in key order or spacing have one canonical
// form, so they hash alike: the SSOT's chain and the decisions' digests
// hash this form.
func Canonical(body []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not JSON: data after the value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding canonical JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
