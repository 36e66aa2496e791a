package clicks

import (
	"os"
	"syscall"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14), which the syscall
// package does not name.
const madvPopulateWrite = 23

// populate faults mem's pages in, writable, without changing a byte.
func populate(mem []byte) error { return syscall.Madvise(mem, madvPopulateWrite) }

// fallocate allocates f's first size bytes.
func fallocate(f *os.File, size int64) error { return syscall.Fallocate(int(f.Fd()), 0, 0, size) }
