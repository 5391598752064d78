package activities

import (
	"os"
	"path/filepath"
)

// fsync makes a file's or a directory's content durable. Every sync of
// the SSOT goes through it so tests can count them.
var fsync = (*os.File).Sync

// writeAtomic replaces path with data: a temporary file in the same
// directory, fsynced, then renamed over it. syncParent also fsyncs the
// directory so the rename itself is durable.
func writeAtomic(path string, data []byte, syncParent bool) error {
	if err := writeFile(path, data, true); err != nil {
		return err
	}
	if syncParent {
		return syncDir(filepath.Dir(path))
	}
	return nil
}

// writeFile replaces path with data through a temporary file and a
// rename, syncing the data first when durable.
func writeFile(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && durable {
		err = fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// appendSync appends data to path (created when missing) in one write and
// fsyncs it; callers sync the directory of a new file. A failed append is cut off again, so that a retry neither follows a
// torn line nor finds lines that were never synced.
func appendSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil {
		_, err = f.Write(data)
		if err == nil {
			err = fsync(f)
		}
		if err != nil {
			f.Truncate(st.Size())
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fsync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
