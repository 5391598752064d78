//go:build unix

package delivery

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// rootOnly reports why Gemini CLI would not read path as a system
// settings file: it, or a directory above it, is not root's or can be
// written by group or others.
func rootOnly(path string) error {
	for p := path; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
			return fmt.Errorf("%s is not owned by root", p)
		}
		if st.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s can be written by group or others", p)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}
