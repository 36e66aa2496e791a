package stack

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/prometheus/procfs"
)

// An app's clicks directory (SHORTENER_CLICKS_DIR: <dir>/<app>/clicks)
// holds its click journal and its trending spool, the only state an app
// keeps on local disk. The controls here break that disk the ways a real
// one breaks, for chaos runs: a small volume that fills up (MountClicks,
// FillClicks), an older copy put back (SnapshotClicks, RestoreClicks).
//
// The files move with the directory: MountClicks carries them onto the
// tmpfs and UnmountClicks carries them back, so the app keeps its journal
// ID and spool, and nothing is left hidden under the mount to be found
// again later (a segment found twice would be shipped twice). Both need
// the app stopped, because a running app holds the directory open: a
// mount would hide the files it writes. They need root (mount(2)).
// Close unmounts a tmpfs an interrupted run left behind.

// Names beside the clicks directory, on the same file system, that hold
// its files while they move, and its snapshot; and the filler's name
// inside it.
const (
	mountingSuffix   = ".mounting"
	unmountingSuffix = ".unmounting"
	snapshotSuffix   = ".snapshot"
	fillerName       = "stack-filler"
)

// ErrNotMounted reports a control that needs the app's clicks directory
// on a tmpfs of MountClicks, which it is not: FillClicks refuses to fill
// a real disk.
var ErrNotMounted = errors.New("stack: clicks directory not on a tmpfs")

// ClicksDir returns the app's clicks directory, or "" for a process that
// is not an app.
func (p *Proc) ClicksDir() string {
	if p.Kind != KindApp {
		return ""
	}
	return filepath.Join(p.dir(), "clicks")
}

// MountClicks mounts a tmpfs of size bytes at the stopped app's clicks
// directory and moves the directory's files onto it.
func (p *Proc) MountClicks(size int64) error {
	return p.control("mount clicks of", "", func() error {
		if err := p.stoppedApp(); err != nil {
			return err
		}
		dir := p.ClicksDir()
		if on, err := tmpfsAt(dir); err != nil || on {
			return cmp.Or(err, fmt.Errorf("%s is mounted already", dir))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		aside := dir + mountingSuffix
		if _, err := os.Lstat(aside); err == nil {
			return fmt.Errorf("%s exists: an interrupted mount left the directory's files there", aside)
		}
		if err := os.Rename(dir, aside); err != nil {
			return err
		}
		back := func(err error) error { return errors.Join(err, os.Remove(dir), os.Rename(aside, dir)) }
		if err := os.Mkdir(dir, 0o755); err != nil {
			return errors.Join(err, os.Rename(aside, dir))
		}
		if err := mountTmpfs(dir, size); err != nil {
			return back(fmt.Errorf("mount tmpfs at %s: %w", dir, err))
		}
		if err := copyTree(aside, dir); err != nil {
			return back(errors.Join(fmt.Errorf("move files onto the tmpfs: %w", err), syscall.Unmount(dir, 0)))
		}
		p.s.log.Info("clicks directory on a tmpfs", "proc", p.Name, "dir", dir, "bytes", size)
		return os.RemoveAll(aside)
	})
}

// UnmountClicks moves the stopped app's files off the tmpfs at its
// clicks directory (all but FillClicks' filler) and unmounts it.
func (p *Proc) UnmountClicks() error {
	return p.control("unmount clicks of", "", func() error {
		if err := p.stoppedApp(); err != nil {
			return err
		}
		return p.unmountClicks()
	})
}

// unmountClicks is UnmountClicks without the lock and the checks.
func (p *Proc) unmountClicks() error {
	dir := p.ClicksDir()
	if on, err := tmpfsAt(dir); err != nil || !on {
		return cmp.Or(err, fmt.Errorf("%s: %w", dir, ErrNotMounted))
	}
	aside := dir + unmountingSuffix
	if _, err := os.Lstat(aside); err == nil {
		return fmt.Errorf("%s exists: an interrupted unmount left the directory's files there", aside)
	}
	if err := os.Mkdir(aside, 0o755); err != nil {
		return err
	}
	if err := copyTree(dir, aside, fillerName); err != nil {
		return errors.Join(fmt.Errorf("move files off the tmpfs: %w", err), os.RemoveAll(aside))
	}
	if err := syscall.Unmount(dir, 0); err != nil {
		return errors.Join(fmt.Errorf("unmount %s: %w", dir, err), os.RemoveAll(aside))
	}
	if err := os.Remove(dir); err != nil { // the empty mount point
		return err
	}
	p.s.log.Info("clicks directory back on disk", "proc", p.Name, "dir", dir)
	return os.Rename(aside, dir)
}

// ClicksMounted reports whether the app's clicks directory is on a tmpfs
// (MountClicks).
func (p *Proc) ClicksMounted() (bool, error) {
	if p.Kind != KindApp {
		return false, nil
	}
	on, err := tmpfsAt(p.ClicksDir())
	if err != nil {
		return false, fmt.Errorf("clicks of %s: %w", p.Name, err)
	}
	return on, nil
}

// FillClicks fills the tmpfs at the app's clicks directory, running or
// not, with a file that takes all its free space, and returns the bytes
// it took: the journal can then begin no new segment. It refuses a
// directory that is not on a tmpfs (ErrNotMounted). FreeClicks removes
// the file.
func (p *Proc) FillClicks() (int64, error) {
	var n int64
	err := p.control("fill clicks of", "", func() (err error) {
		if on, err := p.ClicksMounted(); err != nil || !on {
			return cmp.Or(err, ErrNotMounted)
		}
		n, err = fill(filepath.Join(p.ClicksDir(), fillerName))
		return err
	})
	return n, err
}

// FreeClicks removes FillClicks' file, if any.
func (p *Proc) FreeClicks() error {
	return p.control("free clicks of", "", func() error {
		if p.Kind != KindApp {
			return fmt.Errorf("kind %s, want %s", p.Kind, KindApp)
		}
		if err := os.Remove(filepath.Join(p.ClicksDir(), fillerName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// SnapshotClicks copies the app's clicks directory, running or not, as
// cp -a would, to a snapshot beside it, replacing an earlier one: a
// backup taken while the app writes, which RestoreClicks puts back.
func (p *Proc) SnapshotClicks() error {
	return p.control("snapshot clicks of", "", func() error {
		if p.Kind != KindApp {
			return fmt.Errorf("kind %s, want %s", p.Kind, KindApp)
		}
		dir := p.ClicksDir()
		snap := dir + snapshotSuffix
		if err := os.RemoveAll(snap); err != nil {
			return err
		}
		if err := os.Mkdir(snap, 0o755); err != nil {
			return err
		}
		if err := copyTree(dir, snap, fillerName); err != nil {
			return errors.Join(err, os.RemoveAll(snap))
		}
		return nil
	})
}

// RestoreClicks replaces the stopped app's clicks directory with its
// snapshot (SnapshotClicks), which it uses up: the app's journal and
// spool are as they were when the snapshot was taken.
func (p *Proc) RestoreClicks() error {
	return p.control("restore clicks of", "", func() error {
		if err := p.stoppedApp(); err != nil {
			return err
		}
		dir := p.ClicksDir()
		snap := dir + snapshotSuffix
		if _, err := os.Stat(snap); err != nil {
			return fmt.Errorf("no snapshot: %w", err)
		}
		if on, err := tmpfsAt(dir); err != nil || on {
			return cmp.Or(err, fmt.Errorf("%s is a mount point: unmount it first", dir))
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		return os.Rename(snap, dir)
	})
}

// stoppedApp returns nil when p is an app that is not running.
func (p *Proc) stoppedApp() error {
	if p.Kind != KindApp {
		return fmt.Errorf("kind %s, want %s", p.Kind, KindApp)
	}
	if pid := p.Pid(); pid != 0 {
		return fmt.Errorf("pid %d: %w: stop it first, it holds the directory open", pid, ErrRunning)
	}
	return nil
}

// tmpfsAt reports whether a tmpfs is mounted at dir.
func tmpfsAt(dir string) (bool, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	mounts, err := procfs.GetMounts()
	if err != nil {
		return false, fmt.Errorf("read mounts: %w", err)
	}
	for _, m := range mounts {
		if m.MountPoint == dir && m.FSType == "tmpfs" {
			return true, nil
		}
	}
	return false, nil
}

// fill creates path and makes it take every free byte of its file
// system: one fallocate for the bulk, then writes until ENOSPC for what
// the file system's accounting leaves. It returns the file's size.
func fill(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	avail, err := availBytes(filepath.Dir(path))
	if err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	// A write may take some of the space meanwhile (the app journals
	// beside it): then fallocate fails as a whole and the writes fill.
	if avail > 0 {
		if err := fallocate(f, fi.Size(), avail); err != nil && !errors.Is(err, syscall.ENOSPC) {
			return 0, fmt.Errorf("fallocate %s: %w", path, err)
		}
	}
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); errors.Is(err, syscall.ENOSPC) {
			break
		} else if err != nil {
			return 0, err
		}
	}
	if fi, err = f.Stat(); err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// copyTree copies the files and directories under from into the
// directory to, as cp -a would: modes and modification times kept, holes
// of sparse files (journal segments are mostly holes) kept as holes.
// Entries named in skip are left out; anything but a regular file or a
// directory is an error. A file that goes between the listing and its
// copy (a temporary file renamed into place) is left out, as cp -a
// leaves it out with a warning: the copy of a live directory is what
// such a backup holds.
func copyTree(from, to string, skip ...string) error {
	return filepath.WalkDir(from, copyEntry(from, to, skip))
}

// copyEntry is copyTree's step for each entry under from.
func copyEntry(from, to string, skip []string) fs.WalkDirFunc {
	return func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path != from {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil || rel == "." {
			return err
		}
		for _, s := range skip {
			if d.Name() == s {
				return nil
			}
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(dst, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			if err := copySparse(path, dst, fi.Mode().Perm()); errors.Is(err, errVanished) {
				return nil
			} else if err != nil {
				return err
			}
			return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
		default:
			return fmt.Errorf("copy %s: not a regular file or directory (%s)", path, fi.Mode().Type())
		}
	}
}

// errVanished is copySparse's answer for a file gone before it was opened.
var errVanished = errors.New("file gone before its copy")

// copySparse copies the regular file from to the new file to, skipping
// every all-zero page, so that a hole stays a hole.
func copySparse(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if errors.Is(err, fs.ErrNotExist) {
		return errVanished
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	const page = 4096
	buf, zero := make([]byte, 64<<10), make([]byte, page)
	var off int64
	for {
		n, rerr := io.ReadFull(in, buf)
		for i := 0; i < n; i += page {
			chunk := buf[i:min(i+page, n)]
			if !bytes.Equal(chunk, zero[:len(chunk)]) {
				if _, err := out.WriteAt(chunk, off+int64(i)); err != nil {
					return errors.Join(err, out.Close())
				}
			}
		}
		off += int64(n)
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return errors.Join(rerr, out.Close())
		}
	}
	return errors.Join(out.Truncate(off), out.Close())
}
