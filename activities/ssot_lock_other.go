//go:build !unix

package activities

import "os"

// lockFile does nothing where flock is missing: a reader that keeps
// task.json open across two writes of its task may see a mix.
func lockFile(*os.File, bool) error { return nil }
