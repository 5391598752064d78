package child

// Tail keeps the last max bytes written to it.
type Tail struct {
	// Max is how many bytes it keeps.
	Max int
	buf []byte
	cut bool
}

// Write implements io.Writer.
func (t *Tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

// String is what it kept, after "…" when more came before.
func (t *Tail) String() string {
	if t.cut {
		return "…" + string(t.buf)
	}
	return string(t.buf)
}
