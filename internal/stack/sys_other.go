//go:build !linux

package stack

import (
	"errors"
	"os"
	"syscall"
)

// The stack runs its servers on Linux (iptables partitions, tmpfs faults,
// Pdeathsig); elsewhere the package builds, so that the product's tests
// and tools compile, and these faults report that they are Linux's.

var errLinuxOnly = errors.New("stack: needs Linux")

func mountTmpfs(string, int64) error { return errLinuxOnly }

func availBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

func fallocate(*os.File, int64, int64) error { return syscall.ENOSYS }

// KillWithParent does nothing here: children outlive a killed parent.
func KillWithParent(*syscall.SysProcAttr) {}
