package config

import (
	"bufio"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Runner configures this worker's place in a fleet of runner hosts:
// its name, and how many agent CLIs it runs at once.
type Runner struct {
	// Slots bounds the agent CLI runs this worker has going at once; a
	// run past it waits in the worker's queue, by task priority, then
	// age. 0 means DefaultSlots.
	Slots int `mapstructure:"slots"`
	// Host names this worker in `ampflow fleet`; "" means the machine's
	// hostname.
	Host string `mapstructure:"host"`
	// HostTimeout is how long a task's run waits for its host to take it
	// from the host's queue; past it the host counts as gone and the task
	// re-homes to another host.
	HostTimeout time.Duration `mapstructure:"host_timeout"`
}

// DefaultHostTimeout is runner.host_timeout's default.
const DefaultHostTimeout = 2 * time.Minute

// MaxSlots bounds runner.slots.
const MaxSlots = 256

// slotMemory is the memory a slot is counted to need: an agent CLI
// (Claude Code, Codex, a node process and its tools) with room to work.
const slotMemory = 1 << 30

func init() {
	defaults["runner.slots"] = 0
	defaults["runner.host"] = ""
	defaults["runner.host_timeout"] = DefaultHostTimeout
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func (c Config) validateRunner(ps *problems) {
	if s := c.Runner.Slots; s < 0 || s > MaxSlots {
		ps.add("runner.slots", "must be 0 (from the machine's cores and memory) to %d, not %d", MaxSlots, s)
	}
	if h := c.Runner.Host; h != "" && !hostName.MatchString(h) {
		ps.add("runner.host", "must be 1 to 63 letters, digits, '.', '_' or '-', not %q", h)
	}
	if t := c.Runner.HostTimeout; t < 0 || (t > 0 && t < 5*time.Second) {
		ps.add("runner.host_timeout", "must be at least 5s (0: %s), not %s", DefaultHostTimeout, t)
	}
}

// SlotCount is runner.slots, or DefaultSlots when it is 0.
func (r Runner) SlotCount() int {
	if r.Slots > 0 {
		return r.Slots
	}
	return DefaultSlots(runtime.NumCPU(), memTotal())
}

// HostName is runner.host, or the machine's hostname.
func (r Runner) HostName() string {
	if r.Host != "" {
		return r.Host
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// DefaultSlots is the slots of a machine with cores CPUs and mem bytes
// of memory (0: unknown): two runs a core, at most one per GiB.
func DefaultSlots(cores int, mem int64) int {
	n := 2 * max(cores, 1)
	if mem > 0 {
		n = min(n, int(mem/slotMemory))
	}
	return max(n, 1)
}

// memTotal reads the machine's memory from /proc/meminfo; 0 when it
// cannot.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
