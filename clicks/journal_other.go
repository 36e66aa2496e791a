//go:build !linux

package clicks

import (
	"os"
	"syscall"
)

// populate does nothing here: the writer takes the first-write page
// faults itself.
func populate([]byte) error { return nil }

// fallocate is Linux's; allocate writes zeros instead.
func fallocate(*os.File, int64) error { return syscall.ENOSYS }
