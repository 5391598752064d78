//go:build !unix

package activities

import "os/exec"

// killGroup leaves the default (kill the process only) where process
// groups do not exist.
func killGroup(*exec.Cmd) {}
