package stack

import (
	"fmt"
	"strconv"

	"github.com/prometheus/procfs"
)

// portInUse is the error for a port that another program holds: it names
// the port, the process of ours that wanted it and, when /proc tells, the
// program holding it, so that "make up" says what to stop.
func portInUse(name string, port int) error {
	owner := ""
	if pid, comm := portOwner(port); pid != 0 {
		owner = fmt.Sprintf(" (held by pid %d, %s)", pid, comm)
	}
	return fmt.Errorf("%s needs 127.0.0.1:%d: %w%s", name, port, ErrPortInUse, owner)
}

// portOwner returns the pid and command name of a process listening on TCP
// port (on any address), or 0 when it cannot tell: the socket may belong to
// another user's process, whose file descriptors are hidden.
func portOwner(port int) (int, string) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, ""
	}
	// The fd targets of the listeners' sockets, "socket:[inode]".
	sockets := map[string]bool{}
	const listen = 0x0A // TCP_LISTEN in the st column
	for _, table := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, _ := table()
		for _, l := range lines {
			if l.St == listen && l.LocalPort == uint64(port) {
				sockets["socket:["+strconv.FormatUint(l.Inode, 10)+"]"] = true
			}
		}
	}
	if len(sockets) == 0 {
		return 0, ""
	}
	procs, _ := fs.AllProcs()
	for _, p := range procs {
		targets, _ := p.FileDescriptorTargets()
		for _, t := range targets {
			if sockets[t] {
				comm, _ := p.Comm()
				return p.PID, comm
			}
		}
	}
	return 0, ""
}
