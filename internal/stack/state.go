package stack

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/prometheus/procfs"
)

// state is what stack.json holds: everything a later process needs to find
// and control the servers, and to restart one exactly as it was.
type state struct {
	MasterName        string   `json:"master_name"`
	Quorum            int      `json:"quorum"`
	DownAfterMS       int64    `json:"down_after_ms"`
	FailoverTimeoutMS int64    `json:"failover_timeout_ms"`
	Database          string   `json:"database"`
	MySQLSocket       string   `json:"mysql_socket"`
	MySQLBufferPool   string   `json:"mysql_buffer_pool,omitempty"`
	MySQLLogFile      string   `json:"mysql_log_file,omitempty"`
	AppBinary         string   `json:"app_binary,omitempty"`
	AppEnv            []string `json:"app_env,omitempty"`
	APIKeyFile        string   `json:"api_key_file,omitempty"`
	CodeKeyFile       string   `json:"code_key_file,omitempty"`
	// Galera is Config.Galera: the MariaDB processes are the nodes of a
	// Galera cluster (galera.go).
	Galera bool        `json:"galera,omitempty"`
	Procs  []procState `json:"procs"`
}

type procState struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Port   int    `json:"port"`
	NodeID int    `json:"node_id,omitempty"`
	// Peer holds a Galera node's ports for its peers; zero for every
	// other process.
	Peer GaleraPorts `json:"peer,omitzero"`
}

const stateFile = "stack.json"

// maxSocketPath keeps the unix socket path within sun_path (108 bytes with
// the terminating NUL) with room to spare.
const maxSocketPath = 100

// newState turns a defaulted Config into a state, picking free ports.
func newState(cfg Config) (state, error) {
	st := state{
		MasterName:        cfg.MasterName,
		Quorum:            cfg.Quorum,
		DownAfterMS:       cfg.DownAfter.Milliseconds(),
		FailoverTimeoutMS: cfg.FailoverTimeout.Milliseconds(),
		Database:          cfg.Database,
		MySQLSocket:       socketPath(cfg.Dir),
		MySQLBufferPool:   cfg.MySQLBufferPool,
		MySQLLogFile:      cfg.MySQLLogFile,
		AppBinary:         cfg.AppBinary,
		AppEnv:            cfg.AppEnv,
		APIKeyFile:        cfg.APIKeyFile,
		CodeKeyFile:       cfg.CodeKeyFile,
	}
	switch {
	case cfg.Galera:
		st.Galera = true
		for i, peer := range cfg.GaleraPorts {
			port := 0
			if cfg.MySQLPort != 0 {
				port = cfg.MySQLPort + i
			}
			st.Procs = append(st.Procs, procState{Name: galeraName(i), Kind: KindMySQL, Port: port, Peer: peer})
		}
	case !cfg.WithoutMySQL:
		st.Procs = []procState{{Name: "mysql", Kind: KindMySQL, Port: cfg.MySQLPort}}
	}
	for i, port := range cfg.RedisPorts {
		st.Procs = append(st.Procs, procState{Name: fmt.Sprintf("redis-%d", i+1), Kind: KindRedis, Port: port})
	}
	for i, port := range cfg.SentinelPorts {
		st.Procs = append(st.Procs, procState{Name: fmt.Sprintf("sentinel-%d", i+1), Kind: KindSentinel, Port: port})
	}
	for _, a := range cfg.Apps {
		st.Procs = append(st.Procs, procState{Name: a.Name, Kind: KindApp, Port: a.Port, NodeID: a.NodeID})
	}
	if len(cfg.Apps) > 0 {
		st.Procs = append(st.Procs, procState{Name: "nginx", Kind: KindNginx, Port: cfg.NginxPort})
	}
	// Every port of the stack, a Galera node's peer ports too, is picked
	// in one call, so that no two are the same.
	var want []*int
	for i := range st.Procs {
		ps := &st.Procs[i]
		want = append(want, &ps.Port)
		if st.Galera && ps.Kind == KindMySQL {
			want = append(want, &ps.Peer.Group, &ps.Peer.IST, &ps.Peer.SST)
		}
	}
	ports := make([]int, len(want))
	for i, w := range want {
		ports[i] = *w
	}
	ports, err := pickPorts(ports)
	for i := range ports {
		*want[i] = ports[i]
	}
	return st, err
}

// socketPath puts MariaDB's socket in the state directory when the path
// fits in a sockaddr_un, and otherwise under /tmp with a name derived from
// the directory, so that the same directory always gets the same socket.
func socketPath(dir string) string {
	p := filepath.Join(dir, "mysql.sock")
	if len(p) <= maxSocketPath {
		return p
	}
	h := fnv.New64a()
	h.Write([]byte(dir))
	name := fmt.Sprintf("stack-%x.sock", h.Sum64())
	if p := filepath.Join(os.TempDir(), name); len(p) <= maxSocketPath {
		return p
	}
	return filepath.Join("/tmp", name)
}

// pickPorts returns want with every 0 replaced by a distinct free loopback
// port; a port configured twice is an error. Ports come from below the kernel's ephemeral range: a port picked
// from inside it could be handed to an outgoing connection (a replica's link
// to its master, say) before the server meant to listen on it has started.
func pickPorts(want []int) ([]int, error) {
	lo, hi := 15000, ephemeralLow()
	taken := map[int]bool{}
	for _, p := range want {
		if taken[p] {
			return nil, fmt.Errorf("%w: port %d is configured twice", ErrConfig, p)
		}
		taken[p] = p != 0
	}
	out := make([]int, len(want))
	for i, p := range want {
		if p != 0 {
			out[i] = p
			continue
		}
		for try := 0; ; try++ {
			if try == 1000 {
				return nil, fmt.Errorf("pick port: no free port in %d..%d", lo, hi-1)
			}
			c := lo + rand.IntN(hi-lo)
			if taken[c] || !reservePort(c) || !portFree(c) {
				continue
			}
			taken[c] = true
			out[i] = c
			break
		}
	}
	return out, nil
}

// portLocks are this process's port reservations (reservePort), held
// until it exits. Nothing reads them: keeping the files here keeps their
// finalizers from closing them, which would drop the locks.
var portLocks struct {
	mu    sync.Mutex
	files []*os.File
}

// portLockDir holds a lock file per port picked by a process on this
// machine.
var portLockDir = filepath.Join(os.TempDir(), "shortener-stack-ports")

// reservePort takes port for this process until it exits, against every
// other process picking ports here (go test runs packages side by side,
// each starting stacks): a free port is only free until its server binds
// it, and another stack picking the same one meanwhile failed a CI run
// (TestChaosCheck's nginx found its port held by another test's Redis).
// The lock is an flock, which the kernel drops when the process exits.
// Without the lock directory it reserves nothing and says yes.
func reservePort(port int) bool {
	if err := os.MkdirAll(portLockDir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(portLockDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	portLocks.mu.Lock()
	portLocks.files = append(portLocks.files, f)
	portLocks.mu.Unlock()
	return true
}

// ephemeralLow returns the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if r, err := fs.SysctlInts("net.ipv4.ip_local_port_range"); err == nil && len(r) == 2 && r[0] > 16000 {
			return r[0]
		}
	}
	return 32768
}

// portFree reports whether a listener could bind 127.0.0.1:port now.
func portFree(port int) bool { return portFreeOn("127.0.0.1", port) }

// portFreeOn reports whether a listener could bind host:port now.
func portFreeOn(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// writeState writes stack.json atomically, so a concurrent Attach never reads
// half a file.
func writeState(dir string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, stateFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("%w: %s not found", ErrNoStack, stateFile)
	}
	if err != nil {
		return st, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("read state: %w: %v", ErrNoStack, err)
	}
	return st, nil
}

// WriteFileAtomic replaces path with data (mode perm) through a temporary
// file and rename: no reader sees half a file. EnsureSecret writes keys
// with it.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), perm)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// RepoRoot returns the directory of the shortener module's go.mod at or
// above the working directory, or the working directory if there is none:
// the tools' defaults (.stack, bin/, docs/chaos) live there.
func RepoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isShortenerModule(string(b)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return wd
		}
		dir = parent
	}
}

func isShortenerModule(gomod string) bool {
	for line := range strings.Lines(gomod) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == "shortener"
		}
	}
	return false
}

// DefaultDir is the state directory the tools use unless told otherwise:
// $SHORTENER_STACK_DIR, else .stack in the repository's root.
func DefaultDir(getenv func(string) string) string {
	return cmp.Or(getenv("SHORTENER_STACK_DIR"), filepath.Join(RepoRoot(), ".stack"))
}
