package ssot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// maxGroup bounds how many saves one SQLite transaction takes.
const maxGroup = 64

// groupWriter commits SQLite saves together. SQLite has one writer at a
// time and syncs its log on every commit, so saves from many tasks, each
// its own transaction, wait in line for a sync each. The group writer
// takes every save queued while the last commit ran into one
// transaction, each save in a savepoint of its own: a save that fails
// (a conflict, say) is rolled back alone, and every save is answered only
// once the commit that holds it is on disk. PostgreSQL commits saves of
// different tasks side by side and needs none of this.
type groupWriter struct {
	s *DB
	// queue is unbuffered: a save is handed to the writer itself, so
	// none is left queued once the writer has stopped. Saves that arrive
	// while a commit runs wait in their send and make the next group.
	queue chan *groupSave
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

type groupSave struct {
	ctx    context.Context
	taskID string
	rows   []Record
	st     *TaskState
	events []MeshEvent
	// fn, when set, is the save's work in place of saveIn.
	fn   func(ctx context.Context, tx *sql.Tx) (AppendResult, bool, error)
	res  AppendResult
	err  error
	done chan struct{}
}

func newGroupWriter(s *DB) *groupWriter {
	g := &groupWriter{s: s, queue: make(chan *groupSave), stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// errClosed answers a save made after Close.
var errClosed = errors.New("the SSOT store is closed")

func (g *groupWriter) save(ctx context.Context, taskID string, rows []Record, st *TaskState, events []MeshEvent) (AppendResult, error) {
	return g.do(ctx, &groupSave{ctx: ctx, taskID: taskID, rows: rows, st: st, events: events, done: make(chan struct{})})
}

func (g *groupWriter) do(ctx context.Context, req *groupSave) (AppendResult, error) {
	select {
	case g.queue <- req:
	case <-g.stop:
		return AppendResult{}, errClosed
	case <-ctx.Done():
		return AppendResult{}, ctx.Err()
	}
	// Once queued, the save is answered: the writer may hold it in a
	// transaction, so the caller waits for the commit's outcome.
	<-req.done
	return req.res, req.err
}

func (g *groupWriter) run() {
	defer close(g.done)
	for {
		var batch []*groupSave
		select {
		case req := <-g.queue:
			batch = append(batch, req)
		case <-g.stop:
			g.drain()
			return
		}
	more:
		for len(batch) < maxGroup {
			select {
			case req := <-g.queue:
				batch = append(batch, req)
			default:
				break more
			}
		}
		g.commit(batch)
	}
}

// drain answers what was queued when the store closed.
func (g *groupWriter) drain() {
	for {
		select {
		case req := <-g.queue:
			req.err = errClosed
			close(req.done)
		default:
			return
		}
	}
}

func (g *groupWriter) commit(batch []*groupSave) {
	defer func() {
		for _, req := range batch {
			close(req.done)
		}
	}()
	fail := func(err error) {
		for _, req := range batch {
			if req.err == nil {
				req.err = err
			}
		}
	}
	// The transaction outlives any one caller: a caller that gives up
	// must not roll back the saves of the others.
	ctx := context.Background()
	tx, err := g.s.db.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
		return
	}
	defer tx.Rollback()
	changed := false
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.err = err
			continue
		}
		if _, err := g.s.txExec(ctx, tx, "SAVEPOINT save"); err != nil {
			fail(err)
			return
		}
		var (
			res AppendResult
			ch  bool
		)
		if req.fn != nil {
			res, ch, err = req.fn(ctx, tx)
		} else {
			res, ch, err = g.s.saveIn(ctx, tx, req.taskID, req.rows, req.st, req.events)
		}
		if err != nil {
			req.err = err
			if _, err := g.s.txExec(ctx, tx, "ROLLBACK TO save"); err != nil {
				fail(fmt.Errorf("rolling back a failed save: %w", err))
				return
			}
		} else {
			req.res = res
			changed = changed || ch
		}
		if _, err := g.s.txExec(ctx, tx, "RELEASE save"); err != nil {
			fail(err)
			return
		}
	}
	if !changed {
		return
	}
	if err := tx.Commit(); err != nil {
		for _, req := range batch {
			req.res, req.err = AppendResult{}, err
		}
	}
}

// close stops the writer once the transaction under way is answered.
func (g *groupWriter) close() {
	g.once.Do(func() { close(g.stop) })
	<-g.done
}
