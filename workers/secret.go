package workers

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// keptSecret reads the secret (what names it in errors) kept in file,
// making it (32 random bytes, hex, mode 0600) when the file does not
// exist.
func keptSecret(file, what string) (string, error) {
	b, err := os.ReadFile(file)
	if err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			return s, nil
		}
		return "", fmt.Errorf("%s is empty", file)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading %s: %w", file, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("making a %s: %w", what, err)
	}
	s := hex.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("keeping the %s: %w", what, err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process made it first: use theirs.
		return keptSecret(file, what)
	}
	if err != nil {
		return "", fmt.Errorf("keeping the %s: %w", what, err)
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("keeping the %s in %s: %w", what, file, err)
	}
	return s, f.Close()
}
