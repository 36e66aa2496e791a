package stack

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for inode := range listenInodes(table, port) {
			inodes[inode] = true
		}
	}
	if len(inodes) == 0 {
		return 0, ""
	}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", e.Name(), "fd")
		fds, _ := os.ReadDir(fdDir)
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
				return pid, strings.TrimSpace(string(comm))
			}
		}
	}
	return 0, ""
}

// listenInodes returns the socket inodes of the listeners on port in a
// /proc/net/tcp-format table.
func listenInodes(table string, port int) map[string]bool {
	out := map[string]bool{}
	f, err := os.Open(table)
	if err != nil {
		return out
	}
	defer f.Close()
	const listen = "0A" // TCP_LISTEN in the st column
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != listen {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(n) == port {
			out[fields[9]] = true
		}
	}
	return out
}
