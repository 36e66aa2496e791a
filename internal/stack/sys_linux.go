package stack

import (
	"fmt"
	"os"
	"syscall"
)

// mountTmpfs mounts a tmpfs of size bytes on dir (root only).
func mountTmpfs(dir string, size int64) error {
	return syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size))
}

// availBytes is the space an unprivileged writer has left on dir's volume.
func availBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// fallocate allocates n bytes of f from off.
func fallocate(f *os.File, off, n int64) error {
	return syscall.Fallocate(int(f.Fd()), 0, off, n)
}

// KillWithParent has the kernel SIGKILL the child when this process dies.
func KillWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
