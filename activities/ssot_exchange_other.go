//go:build !linux

package activities

import "errors"

// exchangeFiles reports that only Linux swaps two files in one rename.
func exchangeFiles(string, string) error { return errors.ErrUnsupported }
