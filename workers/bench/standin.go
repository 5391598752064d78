package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// StandInCommand, as the first argument of the ampflow binary (or of the
// bench's test binary), makes it the stand-in agent CLI of the runners
// benchmark instead: StandIn.
const StandInCommand = "__bench-claude"

// standInFile is what the stand-in writes in the worktree: the change its
// task's result reports.
const standInFile = "standin.txt"

// StandIn plays Claude Code's print mode with stream-json input and
// output, at a set pace, without a model: it takes the prompt turn from
// stdin and echoes it, prints system/init, an assistant message every
// pace for runTime, writes standin.txt in its directory, prints a final
// message with the executor's report and a result, and exits when its
// input closes. args are its own, before Claude Code's flags, which it
// ignores: the directory for its timing file, the worker's pid file
// directory, the pace and the run time.
//
// Its timing file, <dir>/<task id> (AMP_TASK_ID), holds two Unix times in
// nanoseconds: when the worker wrote the run's pid file, right after the
// process started, and when the stand-in's main began.
func StandIn(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	began := time.Now()
	if len(args) > 0 && args[0] == "--version" || len(args) > 4 && args[4] == "--version" {
		fmt.Fprintln(stdout, "2.1.0 (ampflow bench stand-in)")
		return 0
	}
	if len(args) < 4 {
		fmt.Fprintf(stderr, "%s: want the timing directory, the pid directory, the pace and the run time\n", StandInCommand)
		return 2
	}
	outDir, pidDir := args[0], args[1]
	pace, err := time.ParseDuration(args[2])
	if err != nil || pace <= 0 {
		fmt.Fprintf(stderr, "%s: invalid pace %q\n", StandInCommand, args[2])
		return 2
	}
	runTime, err := time.ParseDuration(args[3])
	if err != nil || runTime < 0 {
		fmt.Fprintf(stderr, "%s: invalid run time %q\n", StandInCommand, args[3])
		return 2
	}
	taskID := os.Getenv("AMP_TASK_ID")
	if taskID == "" {
		fmt.Fprintf(stderr, "%s: no AMP_TASK_ID in the environment\n", StandInCommand)
		return 2
	}
	spawned, err := pidFileTime(filepath.Join(pidDir, strconv.Itoa(os.Getpid())+".json"))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", StandInCommand, err)
		return 1
	}
	timing := fmt.Sprintf("%d %d\n", spawned.UnixNano(), began.UnixNano())
	if err := os.WriteFile(filepath.Join(outDir, taskID), []byte(timing), 0o644); err != nil {
		fmt.Fprintf(stderr, "%s: writing the timing file: %v\n", StandInCommand, err)
		return 1
	}

	in := bufio.NewReader(stdin)
	turn, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(stderr, "%s: reading the prompt turn: %v\n", StandInCommand, err)
		return 1
	}
	w := bufio.NewWriter(stdout)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(b)
		w.WriteByte('\n')
		w.Flush()
	}
	session := "bench-" + taskID
	w.Write(turn) // --replay-user-messages: the turn is taken
	emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "cwd": ".", "tools": []string{"Bash"}})
	text := func(s string) map[string]any {
		return map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{
			"role": "assistant", "content": []map[string]any{{"type": "text", "text": s}},
			"usage": map[string]int{"input_tokens": 10, "output_tokens": 5}}}
	}
	tick := time.NewTicker(pace)
	for i, end := 1, began.Add(runTime); time.Now().Before(end); i++ {
		<-tick.C
		emit(text(fmt.Sprintf("Working, step %d.", i)))
	}
	tick.Stop()
	if err := os.WriteFile(standInFile, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		fmt.Fprintf(stderr, "%s: writing %s: %v\n", StandInCommand, standInFile, err)
		return 1
	}
	report := `Wrote standin.txt. {"criteria_met": [true], "notes": ["three lines"], "summary": "added standin.txt"}`
	emit(text(report))
	emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": session, "result": report,
		"total_cost_usd": 0.001, "num_turns": 1, "usage": map[string]int{"input_tokens": 100, "output_tokens": 20}})
	// The worker closes the input once the turn has its result.
	_, _ = io.Copy(io.Discard, in)
	return 0
}

// pidFileTime waits for the pid file the worker writes once the process
// has started, and returns the time it was written.
func pidFileTime(path string) (time.Time, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.Stat(path)
		if err == nil && st.Size() > 0 {
			return st.ModTime(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("no pid file %s after 10s: %v", path, err)
		}
		time.Sleep(time.Millisecond)
	}
}
