package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// format is one CLI's command line and stream format.
type format interface {
	// args are the arguments after Spec.Command.
	args(s Spec) []string
	// newDecoder returns a decoder for one run's stream.
	newDecoder() decoder
}

// decoder turns one line of a stream into events. It keeps the state a
// format needs across lines, such as tool names by call id.
type decoder interface {
	decode(line []byte) []Event
}

func formatOf(runner string) (format, error) {
	switch runner {
	case Claude:
		return claudeFormat{}, nil
	case Codex:
		return codexFormat{}, nil
	case Gemini:
		return geminiFormat{}, nil
	case OpenCode:
		return opencodeFormat{}, nil
	case ACP:
		return acpFormat{}, nil
	}
	return nil, fmt.Errorf("unknown runner %q (want one of %v)", runner, Runners)
}

// maxArg is below Linux's limit on one argument (MAX_ARG_STRLEN, 128 KiB).
const maxArg = 120 << 10

// Command returns the full command line Run would start for s.
func Command(s Spec) ([]string, error) {
	f, err := formatOf(s.Runner)
	if err != nil {
		return nil, err
	}
	if len(s.Prompt) > maxArg || len(s.SystemPrompt) > maxArg {
		return nil, fmt.Errorf("building %s command: prompt or system prompt longer than %d bytes", s.Runner, maxArg)
	}
	argv := slices.Clone(s.Command)
	if len(argv) == 0 && s.Runner == ACP {
		return nil, fmt.Errorf("building %s command: an ACP agent needs its command line (Spec.Command)", s.Runner)
	}
	if len(argv) == 0 {
		argv = []string{s.Runner}
	}
	return append(append(argv, s.Args...), f.args(s)...), nil
}

// Decode decodes a recorded stream of runner's format, one JSON object a
// line, as Run would; it is for tools and tests that replay streams.
func Decode(runner string, stream []byte) ([]Event, error) {
	f, err := formatOf(runner)
	if err != nil {
		return nil, err
	}
	d := f.newDecoder()
	var out []Event
	for len(stream) > 0 {
		line := stream
		if i := bytes.IndexByte(stream, '\n'); i >= 0 {
			line, stream = stream[:i], stream[i+1:]
		} else {
			stream = nil
		}
		out = append(out, d.decode(line)...)
	}
	return out, nil
}

// raw copies a line so an Event may keep it after the reader reuses its
// buffer.
func raw(line []byte) json.RawMessage {
	return json.RawMessage(slices.Clone(line))
}

// fileOf picks the path a tool input names, under the keys the CLIs use.
func fileOf(input json.RawMessage) string {
	var v map[string]any
	if json.Unmarshal(input, &v) != nil {
		return ""
	}
	for _, k := range []string{"file_path", "filePath", "path", "absolute_path", "notebook_path"} {
		if s, ok := v[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// textOf flattens a tool result's content: a string, or a list of blocks
// with text.
func textOf(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) == nil {
		var out string
		for _, b := range blocks {
			out += b.Text
		}
		return out
	}
	return string(content)
}
