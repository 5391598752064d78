package runner

// geminiFormat is Gemini CLI's headless mode (to be filled in).
type geminiFormat struct{}

func (geminiFormat) args(s Spec) []string {
	a := []string{"--output-format", "stream-json", "--approval-mode", "yolo"}
	if s.Model != "" {
		a = append(a, "--model", s.Model)
	}
	if s.SessionID != "" {
		a = append(a, "--resume", s.SessionID)
	}
	return append(a, "-p", s.Prompt)
}

func (geminiFormat) newDecoder() decoder { return &geminiDecoder{} }

type geminiDecoder struct{}

func (d *geminiDecoder) decode(line []byte) []Event { return nil }
