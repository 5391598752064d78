package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/ampflow/ampflow/activities"
)

// store opens the SSOT at ssot.dir for reading. The CLI reads it directly,
// so it must run on the machine that keeps it.
func (a *App) store() (*activities.Store, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	dir := cfg.SSOT.Dir
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("the SSOT directory %s (ssot.dir) does not exist on this machine: "+
			"run this where the ampflow worker runs, or point ssot.dir or --config at it", dir)
	case err != nil:
		return nil, fmt.Errorf("opening the SSOT directory %s: %w", dir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("the SSOT path %s (ssot.dir) is not a directory", dir)
	}
	// No git options: the CLI never commits; the worker does.
	return activities.NewStore(dir, activities.StoreOptions{Now: a.Now})
}

// logRefused appends refused CLI input to the SSOT error log when the
// SSOT is on this machine. Failing to log must not hide the refusal, so
// problems are only reported as a note.
func (a *App) logRefused(err error) {
	var ie *inputError
	if !errors.As(err, &ie) {
		return
	}
	cfg, cerr := a.Config()
	if cerr != nil {
		return
	}
	if _, serr := os.Stat(cfg.SSOT.Dir); serr != nil {
		return
	}
	s, serr := a.store()
	if serr != nil {
		return
	}
	entry := activities.ErrorEntry{Time: a.Now(), Source: "cli", Reason: ie.Error(), Raw: string(ie.raw)}
	lerr := s.AppendError(entry)
	if lerr == nil {
		lerr = s.FlushErrors() // the process ends soon: write it now
	}
	if lerr != nil {
		fmt.Fprintf(a.Stderr, "ampflow: note: could not log the refusal in the SSOT: %v\n", lerr)
	}
}
