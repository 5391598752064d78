package activities

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/gitsafe"
)

// A batch is a long-lived git cat-file --batch-command in one repository.
// The git checks read refs and commits through it instead of starting a
// git each time: starting one is most of what a small git command costs
// (the dynamic loader, exec and exit were four fifths of git's CPU in a
// benchmark run). Each request re-reads the refs it names and finds
// objects written since the batch started, as a new git would.
//
// A batch that fails in any way is closed and the request runs as a git
// process of its own, so a batch is never the only way to an answer.
type batch struct {
	mu   sync.Mutex  // one request at a time
	dir  os.FileInfo // the repository directory it runs in
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	used time.Time
	dead bool
}

// batches holds one batch per git executable and repository, at most
// batchMost of them; one idle for batchIdle is closed.
var batches = batchPool{m: map[string]*batch{}}

const (
	batchMost    = 16
	batchIdle    = 30 * time.Second
	batchTimeout = 10 * time.Second // one request, read to its end
)

type batchPool struct {
	mu     sync.Mutex
	m      map[string]*batch
	reaper bool
}

// get returns the batch of bin in repo, starting it when there is none
// or when repo is another directory than the one it runs in (removed and
// made again: git would go on reading the removed one).
func (p *batchPool) get(bin, repo string) (*batch, error) {
	key := bin + "\x00" + repo
	dir, err := os.Stat(repo)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.m[key]; b != nil && !b.dead && os.SameFile(b.dir, dir) {
		return b, nil
	} else if b != nil {
		delete(p.m, key)
		go b.close()
	}
	if len(p.m) >= batchMost {
		p.evictLocked()
	}
	cmd := exec.Command(bin, gitsafe.Args(nil, "cat-file", "--batch-command")...)
	cmd.Dir = repo
	cmd.Env = gitEnv(false, "GIT_CEILING_DIRECTORIES="+filepath.Dir(repo))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &batch{dir: dir, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), used: time.Now()}
	p.m[key] = b
	if !p.reaper {
		p.reaper = true
		go p.reap()
	}
	return b, nil
}

// evictLocked closes the least recently used batch.
func (p *batchPool) evictLocked() {
	var oldest string
	for k, b := range p.m {
		if oldest == "" || b.used.Before(p.m[oldest].used) {
			oldest = k
		}
	}
	if b := p.m[oldest]; b != nil {
		delete(p.m, oldest)
		go b.close()
	}
}

// reap closes the batches idle for batchIdle, until none is left.
func (p *batchPool) reap() {
	for {
		time.Sleep(batchIdle / 2)
		p.mu.Lock()
		for k, b := range p.m {
			if b.mu.TryLock() {
				if b.dead || time.Since(b.used) > batchIdle {
					delete(p.m, k)
					b.closeLocked()
				}
				b.mu.Unlock()
			}
		}
		if len(p.m) == 0 {
			p.reaper = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

func (b *batch) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closeLocked()
}

// closeLocked ends the process: cat-file exits at the end of its input.
func (b *batch) closeLocked() {
	if b.cmd == nil {
		return
	}
	b.dead = true
	b.in.Close()
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		b.cmd.Process.Kill()
		<-done
	}
	b.cmd = nil
}

// do sends commands (each a line) and lets read take the answers; a
// failure or a request longer than batchTimeout (or than ctx) closes the
// batch.
func (b *batch) do(ctx context.Context, commands []string, read func(*bufio.Reader) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead {
		return errBatchClosed
	}
	ctx, cancel := context.WithTimeout(ctx, batchTimeout)
	defer cancel()
	// A request that does not end kills the process, which ends the read.
	proc := b.cmd.Process
	stop := context.AfterFunc(ctx, func() { proc.Kill() })
	err := func() error {
		if _, err := io.WriteString(b.in, strings.Join(commands, "\n")+"\n"); err != nil {
			return err
		}
		return read(b.out)
	}()
	if !stop() || err != nil {
		b.closeLocked()
		if err == nil || ctx.Err() != nil {
			return fmt.Errorf("git cat-file: %w", context.Cause(ctx))
		}
		return err
	}
	b.used = time.Now()
	return nil
}

var errBatchClosed = errors.New("git cat-file batch closed")

// batchInfo answers "info <name>" for each name through repo's batch:
// "<hash> <type> <size>", or "<name> missing" (or "ambiguous").
func (g *Git) batchInfo(ctx context.Context, repo string, names []string) ([]string, error) {
	b, err := batches.get(g.bin(), repo)
	if err != nil {
		return nil, err
	}
	commands := make([]string, len(names))
	for i, n := range names {
		commands[i] = "info " + n
	}
	lines := make([]string, 0, len(names))
	err = b.do(ctx, commands, func(r *bufio.Reader) error {
		for range names {
			line, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			lines = append(lines, strings.TrimSuffix(line, "\n"))
		}
		return nil
	})
	return lines, err
}

// batchParents returns the parents of commit, read through repo's batch.
func (g *Git) batchParents(ctx context.Context, repo, commit string) ([]string, error) {
	b, err := batches.get(g.bin(), repo)
	if err != nil {
		return nil, err
	}
	var parents []string
	err = b.do(ctx, []string{"contents " + commit}, func(r *bufio.Reader) error {
		head, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(head)
		if len(f) != 3 || f[1] != "commit" {
			if len(f) == 2 && (f[1] == "missing" || f[1] == "ambiguous") {
				return nil
			}
			// Another type's contents would follow; the batch is closed
			// rather than read on.
			return fmt.Errorf("git cat-file: %s is not a commit: %s", commit, strings.TrimSpace(head))
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("git cat-file: %q: %w", strings.TrimSpace(head), err)
		}
		body := make([]byte, size+1) // the contents, then a newline
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		for line := range strings.Lines(string(body[:size])) {
			if line == "\n" {
				break // the end of the headers
			}
			if p, ok := strings.CutPrefix(line, "parent "); ok {
				parents = append(parents, strings.TrimSpace(p))
			}
		}
		return nil
	})
	return parents, err
}

// descends reports whether ancestor is reachable from commit within the
// first most commits of its history, walked through repo's batch. false
// proves nothing: the answer is beyond the walk, or the batch failed.
func (g *Git) descends(ctx context.Context, repo, ancestor, commit string, most int) bool {
	ancestor = strings.ToLower(ancestor)
	seen := map[string]bool{commit: true}
	queue := []string{commit}
	for len(queue) > 0 && len(seen) <= most {
		c := queue[0]
		queue = queue[1:]
		parents, err := g.batchParents(ctx, repo, c)
		if err != nil {
			return false
		}
		for _, p := range parents {
			if p == ancestor {
				return true
			}
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false
}
