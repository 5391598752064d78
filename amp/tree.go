package amp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// maxDepth bounds nesting so that hostile input cannot exhaust the stack;
// no AMP document comes close.
const maxDepth = 64

// duplicateKey is recorded while decoding and reported as a field error:
// JSON parsers disagree on which of two equal keys wins, so a document that
// has them means different things to different agents.
type duplicateKey struct{ path string }

// treeDecoder turns bytes into a tree of map[string]any, []any, string,
// json.Number, bool and nil, refusing anything but exactly one JSON value.
type treeDecoder struct {
	dec  *json.Decoder
	in   []byte
	dups []duplicateKey
}

// decodeTree decodes b into a generic tree. Structural problems are a
// *SyntaxError; duplicate keys are returned for the validator to report.
func decodeTree(b []byte) (any, []duplicateKey, error) {
	if !utf8.Valid(b) {
		return nil, nil, &SyntaxError{Offset: int64(invalidUTF8At(b)), Msg: "invalid UTF-8"}
	}
	d := &treeDecoder{dec: json.NewDecoder(bytes.NewReader(b)), in: b}
	d.dec.UseNumber()
	v, err := d.value(RootPath, 0)
	if err != nil {
		return nil, nil, err
	}
	off := d.dec.InputOffset()
	if _, err := d.dec.Token(); err != io.EOF {
		if err != nil {
			return nil, nil, d.syntax(err)
		}
		return nil, nil, &SyntaxError{Offset: off + int64(leadingSpace(b[off:])), Msg: "trailing data after the top-level value"}
	}
	return v, d.dups, nil
}

func (d *treeDecoder) value(path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, &SyntaxError{Offset: d.dec.InputOffset(), Msg: fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
	}
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.syntax(err)
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		for d.dec.More() {
			kt, err := d.dec.Token()
			if err != nil {
				return nil, d.syntax(err)
			}
			k := kt.(string)
			kp := joinKey(path, k)
			v, err := d.value(kp, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := m[k]; dup {
				d.dups = append(d.dups, duplicateKey{path: kp})
			}
			m[k] = v
		}
		if _, err := d.dec.Token(); err != nil {
			return nil, d.syntax(err)
		}
		return m, nil
	case json.Delim('['):
		a := []any{}
		for d.dec.More() {
			v, err := d.value(joinIndex(path, len(a)), depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := d.dec.Token(); err != nil {
			return nil, d.syntax(err)
		}
		return a, nil
	}
	return tok, nil
}

// syntax converts a decoder error into a *SyntaxError whose Offset is the
// index of the offending byte (the input length for a truncated input).
// The streaming decoder reports some offsets relative to the current
// token, so the whole input is rescanned for an absolute one.
func (d *treeDecoder) syntax(err error) error {
	var raw json.RawMessage
	if verr := json.Unmarshal(d.in, &raw); verr != nil {
		if se, ok := errors.AsType[*json.SyntaxError](verr); ok {
			// checkValid's Offset counts the offending byte itself.
			if se.Error() == "unexpected end of JSON input" {
				return &SyntaxError{Offset: int64(len(d.in)), Msg: "unexpected end of input", Err: se}
			}
			return &SyntaxError{Offset: se.Offset - 1, Msg: se.Error(), Err: se}
		}
	}
	return &SyntaxError{Offset: d.dec.InputOffset(), Msg: err.Error(), Err: err}
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

func leadingSpace(b []byte) int {
	return len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
}
