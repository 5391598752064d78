package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/integrations/fleet"
)

// hostWatch samples what the runner hosts run while a test goes on,
// twice over: from /proc, which processes work in each host's checkouts,
// and from GET /v1/fleet, what the hosts say they run. A run is a process
// in a checkout (<data_dir>/worktrees/<task>[-review]) whose parent is
// not in it, with the run's environment: the bubblewrap (or the CLI) the
// worker started. The worker's own git in a checkout has the worker's
// HOME and is none.
type hostWatch struct {
	// dataDirs are the hosts' data_dirs, by host.
	dataDirs map[string]string
	// api reads the fleet view; nil reads none.
	api func() *apiClient

	mu sync.Mutex
	// peak is the most runs seen at once on each host, from /proc.
	peak map[string]int
	// fleetPeak is the most runs a host said it ran at once.
	fleetPeak map[string]int
	// killed are the hosts the test killed: the fleet view lists them
	// alive with their last runs until fleet.AliveWithin has passed, and
	// /proc alone tells what they run.
	killed map[string]bool
	// twice says each time a task was seen running on two hosts at once.
	twice []string
	// over lists the runs of the first sample past fleetSlots on a host.
	over    string
	samples int
	stop    chan struct{}
	done    chan struct{}
}

func newHostWatch(dataDirs map[string]string, api func() *apiClient) *hostWatch {
	w := &hostWatch{dataDirs: dataDirs, api: api, peak: map[string]int{}, fleetPeak: map[string]int{}, killed: map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

// kill notes that the test killed host.
func (w *hostWatch) kill(host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.killed[host] = true
}

// end stops the sampling; the results stay.
func (w *hostWatch) end() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *hostWatch) loop() {
	defer close(w.done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		w.sampleProcs()
		if n%5 == 0 && w.api != nil {
			w.sampleFleet()
		}
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

var worktreeTaskRE = regexp.MustCompile(`^(T-\d{4}-\d+)(?:-review)?$`)

// sampleProcs counts the runs of each host in /proc.
func (w *hostWatch) sampleProcs() {
	entries, _ := os.ReadDir("/proc")
	type proc struct {
		ppid      int
		cwd, comm string
	}
	workerHome := "HOME=" + os.Getenv("HOME")
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || !strings.Contains(cwd, string(filepath.Separator)+"worktrees"+string(filepath.Separator)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		procs[pid] = proc{ppid: ppid, cwd: cwd, comm: string(stat[strings.IndexByte(string(stat), '(')+1 : strings.LastIndexByte(string(stat), ')')])}
	}
	runs := map[string]int{}
	var listed []string
	hostsOf := map[string][]string{}
	for pid, p := range procs {
		if parent, ok := procs[p.ppid]; ok && parent.cwd == p.cwd {
			continue // a process the run started
		}
		if env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ")); err != nil || p.comm == "git" ||
			slices.Contains(strings.Split(string(env), "\x00"), workerHome) {
			continue // gone, or the worker's own
		}
		for host, dir := range w.dataDirs {
			rel, err := filepath.Rel(filepath.Join(dir, "worktrees"), p.cwd)
			if err != nil || strings.Contains(rel, string(filepath.Separator)) {
				continue
			}
			if m := worktreeTaskRE.FindStringSubmatch(rel); m != nil {
				runs[host]++
				listed = append(listed, fmt.Sprintf("%s: pid %d %s in %s", host, pid, p.comm, p.cwd))
				if !slices.Contains(hostsOf[m[1]], host) {
					hostsOf[m[1]] = append(hostsOf[m[1]], host)
				}
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	for host, n := range runs {
		w.peak[host] = max(w.peak[host], n)
		if n > fleetSlots && w.over == "" {
			slices.Sort(listed)
			w.over = strings.Join(listed, "\n")
		}
	}
	for id, hosts := range hostsOf {
		if len(hosts) > 1 {
			w.twice = append(w.twice, fmt.Sprintf("%s runs on %v at once (processes)", id, hosts))
		}
	}
}

// sampleFleet reads what the hosts alive say they run.
func (w *hostWatch) sampleFleet() {
	api := w.api()
	if api == nil {
		return
	}
	code, body, err := api.raw(http.MethodGet, "/v1/fleet", nil)
	var f fleet.Response
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &f) != nil {
		return
	}
	hostsOf := map[string][]string{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range f.Hosts {
		if !h.Alive || w.killed[h.Host] {
			continue
		}
		w.fleetPeak[h.Host] = max(w.fleetPeak[h.Host], len(h.Running), h.InUse)
		for _, r := range h.Running {
			hostsOf[r.TaskID] = append(hostsOf[r.TaskID], h.Host)
		}
	}
	for id, hosts := range hostsOf {
		if len(hosts) > 1 {
			w.twice = append(w.twice, fmt.Sprintf("%s runs on %v at once (fleet)", id, hosts))
		}
	}
}

// result is the peaks by host, from /proc and from the fleet, and what
// ran on two hosts at once.
func (w *hostWatch) result() (peak, fleetPeak map[string]int, twice []string, samples int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.peak), maps.Clone(w.fleetPeak), slices.Clone(w.twice), w.samples
}

// overSlots lists the runs of the first sample in which a host ran more
// than fleetSlots; empty when none did.
func (w *hostWatch) overSlots() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.over
}
