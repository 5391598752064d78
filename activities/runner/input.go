package runner

import (
	"os"
	"sync"
)

// inputFormat is a format whose CLI reads its user turns from its
// standard input, the prompt first (Claude Code's stream-json input).
type inputFormat interface {
	// turn is one user turn as a line of the CLI's input.
	turn(text string) []byte
	// taken reports whether a line of the CLI's output says it took a
	// user turn (Claude Code's --replay-user-messages echo).
	taken(line []byte) bool
}

// inputBuffer bounds the turns waiting to be written to a CLI's input.
const inputBuffer = 16

// input is the standard input of a run whose CLI takes turns on it. A
// goroutine writes the turns, so a CLI that is slow to read never blocks
// the run's loop; the input is closed once every turn has its result,
// which is how the CLI knows to exit.
type input struct {
	lines  chan []byte
	once   sync.Once
	closed bool
	sent   int // turns written, the prompt included
	taken  int // turns the CLI said it took
}

func newInput(w *os.File) *input {
	in := &input{lines: make(chan []byte, inputBuffer)}
	go func() {
		defer w.Close()
		for line := range in.lines {
			if _, err := w.Write(line); err != nil {
				for range in.lines { // the CLI is gone: drop the rest
				}
				return
			}
		}
	}()
	return in
}

// send queues a turn; false when the input is closed or full.
func (in *input) send(line []byte) bool {
	if in.closed {
		return false
	}
	select {
	case in.lines <- line:
		in.sent++
		return true
	default:
		return false
	}
}

// answer notes a result and closes the input once the CLI has taken
// every turn written: a turn written while one runs is either folded into
// it (Claude Code hands it to the model with the next tool results) or
// starts a turn of its own after this result. A CLI that never said it
// took a turn gets its input closed at its first result. It reports
// whether the input is closed.
func (in *input) answer() bool {
	if in.taken == 0 || in.taken >= in.sent {
		in.close()
	}
	return in.closed
}

func (in *input) close() {
	in.once.Do(func() {
		in.closed = true
		close(in.lines)
	})
}
