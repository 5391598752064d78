package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// Command groups of the root help.
const (
	groupCoordinator = "coordinator"
	groupAgent       = "agent"
	groupAdmin       = "admin"
)

// tasks returns the way in to the task workflows, creating it once.
func (a *App) tasks() (workflows.Tasks, error) {
	if a.conn != nil {
		return a.conn, nil
	}
	t, err := a.Tasks()
	if err != nil {
		return nil, err
	}
	a.conn = t
	return t, nil
}

// closeTasks closes the way in to the task workflows, if it holds a
// connection.
func (a *App) closeTasks() {
	if c, ok := a.conn.(interface{ Close() }); ok {
		c.Close()
	}
	a.conn = nil
}

// refused turns a task client's error into exit 1 with its message on one
// line; invalid input lists its fields as "path: problem".
func refused(err error) error {
	var te *task.Error
	if errors.As(err, &te) && te.Code == task.CodeInvalid && len(te.Fields) > 0 && !mentionsFields(te) {
		parts := make([]string, len(te.Fields))
		for i, f := range te.Fields {
			parts[i] = f.Path + ": " + f.Problem
		}
		return Exit(ExitFailed, fmt.Errorf("%s: %s", te.Message, strings.Join(parts, "; ")))
	}
	return Exit(ExitFailed, err)
}

func mentionsFields(te *task.Error) bool {
	for _, f := range te.Fields {
		if !strings.Contains(te.Message, f.Path) {
			return false
		}
	}
	return true
}

// isTerminal reports whether w is a character device, such as a terminal.
// golang.org/x/term is not a direct dependency, and this is all we need.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
