//go:build !unix

package delivery

// rootOnly: Gemini CLI checks ACLs on Windows; ampflow leaves that to it.
func rootOnly(string) error { return nil }
