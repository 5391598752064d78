package runner

// opencodeFormat is OpenCode's run command (to be filled in).
type opencodeFormat struct{}

func (opencodeFormat) args(s Spec) []string {
	a := []string{"run", "--format", "json"}
	if s.Model != "" {
		a = append(a, "--model", s.Model)
	}
	if s.SessionID != "" {
		a = append(a, "--session", s.SessionID)
	}
	return append(a, "--", s.Prompt)
}

func (opencodeFormat) newDecoder() decoder { return &opencodeDecoder{} }

type opencodeDecoder struct{}

func (d *opencodeDecoder) decode(line []byte) []Event { return nil }
