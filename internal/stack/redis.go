package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

func redisKind() kind {
	return kind{
		name:      KindRedis,
		program:   "redis-server",
		configure: configureRedis,
		args:      func(p *Proc) []string { return []string{redisConf(p)} },
		ready:     pingReady,
	}
}

func sentinelKind() kind {
	return kind{
		name:      KindSentinel,
		program:   "redis-sentinel",
		env:       sentinelEnv,
		configure: configureSentinel,
		args:      func(p *Proc) []string { return []string{sentinelConf(p)} },
		ready:     sentinelReady,
	}
}

func redisConf(p *Proc) string    { return filepath.Join(p.dir(), "redis.conf") }
func sentinelConf(p *Proc) string { return filepath.Join(p.dir(), "sentinel.conf") }

// password returns what a Redis node or sentinel requires of its clients.
func (p *Proc) password() string {
	if p.Kind == KindSentinel {
		return p.s.sentinelPassword
	}
	return p.s.redisPassword
}

// privateDir readies the directory of a Redis node or sentinel for a config
// file that holds passwords: the directory is the owner's alone, since
// the servers rewrite their files with mode 0644 (CONFIG REWRITE, and a
// sentinel at every change of master). It fails without the passwords,
// which Start makes: a node must never start without them.
func privateDir(p *Proc) error {
	if p.s.redisPassword == "" || p.s.sentinelPassword == "" {
		return fmt.Errorf("no passwords in %s and %s of %s; stop this stack and start it again (make down && make up) to make them",
			RedisPasswordFile, SentinelPasswordFile, p.s.dir)
	}
	return os.Chmod(p.dir(), 0o700)
}

// sentinelEnv is a sentinel's environment: this process's, with the
// sentinels' password as REDISCLI_AUTH for the redis-cli of its
// notification script (SentinelScript), as deploy/'s image gives it.
func sentinelEnv(p *Proc) ([]string, error) {
	env := slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "REDISCLI_AUTH=") })
	return append(env, "REDISCLI_AUTH="+p.s.sentinelPassword), nil
}

// configureRedis writes the node's config afresh on every start; only the
// replicaof line varies. On a fresh Start the first node is the master. On
// Restart the node follows whichever node the sentinels name as master — a
// node that came back as a master beside the real one would be a second
// master until the sentinels noticed — and when no sentinel answers, it
// keeps the replicaof line that it or a sentinel last wrote to its config.
func configureRedis(ctx context.Context, p *Proc, fresh bool) error {
	if err := privateDir(p); err != nil {
		return err
	}
	masterPort := p.s.byKind[KindRedis][0].Port
	if !fresh {
		if m, err := p.s.Master(ctx); err == nil {
			masterPort = m.Port
		} else if port, ok := confReplicaOf(redisConf(p)); ok {
			masterPort = port
		} else {
			masterPort = p.Port
			p.s.log.Warn("no sentinel names a master and the config names none; restarting as master", "proc", p.Name, "err", err)
		}
	}
	// A replica's full sync writes dump.rdb even with "save" off, and a
	// node loads it when it starts. Loaded after an outage, it would bring
	// back links deleted since the sync: a cache node must start empty.
	if err := os.Remove(filepath.Join(p.dir(), "dump.rdb")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale dump.rdb: %w", err)
	}
	node := RedisNode{Bind: "127.0.0.1", Port: p.Port, Dir: p.dir(), Password: p.s.redisPassword}
	if masterPort != p.Port {
		node.ReplicaOf = fmt.Sprintf("127.0.0.1 %d", masterPort)
	}
	conf := "# Written by package stack on every start. Sentinels may rewrite it\n" +
		"# (replicaof) while the node runs; the next start replaces it again.\n" + RedisConf(node)
	return WriteFileAtomic(redisConf(p), []byte(conf), 0o600)
}

// confReplicaOf returns the master port of the last replicaof (or, from
// older rewrites, slaveof) line in a redis config file.
func confReplicaOf(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	port, ok := 0, false
	for line := range strings.Lines(string(b)) {
		w := strings.Fields(line)
		if len(w) == 3 && (strings.EqualFold(w[0], "replicaof") || strings.EqualFold(w[0], "slaveof")) {
			if n, err := strconv.Atoi(w[2]); err == nil {
				port, ok = n, true
			}
		}
	}
	return port, ok
}

// configureSentinel writes a sentinel's config on a fresh Start. On Restart
// it keeps the file but for its auth lines, which it writes afresh
// (withSentinelAuth says why): the sentinel rewrites the file with its
// ID, the current master and config epoch, and the replicas and
// sentinels it knows, all of which it needs to rejoin the others.
func configureSentinel(_ context.Context, p *Proc, fresh bool) error {
	if err := privateDir(p); err != nil {
		return err
	}
	path := sentinelConf(p)
	script := filepath.Join(p.dir(), "notify.sh")
	if err := os.WriteFile(script, []byte(SentinelScript(p.Port)), 0o755); err != nil {
		return err
	}
	st := p.s.st
	node := SentinelNode{
		Bind: "127.0.0.1", Port: p.Port, Dir: p.dir(),
		MasterName: st.MasterName, MasterHost: "127.0.0.1", MasterPort: p.s.byKind[KindRedis][0].Port,
		Quorum: st.Quorum, DownAfter: time.Duration(st.DownAfterMS) * time.Millisecond,
		FailoverTimeout: time.Duration(st.FailoverTimeoutMS) * time.Millisecond,
		Script:          script,
		Password:        p.s.sentinelPassword, RedisPassword: p.s.redisPassword,
	}
	if !fresh {
		kept, err := os.ReadFile(path)
		if err == nil {
			return WriteFileAtomic(path, []byte(withSentinelAuth(string(kept), node)), 0o600)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	conf := "# Written by package stack at start; the sentinel rewrites it, and\n" +
		"# each later start replaces its auth lines.\n" + SentinelConf(node)
	return WriteFileAtomic(path, []byte(conf), 0o600)
}

// pingReady is a Redis node's readiness: it answers PING (a node still
// loading its data answers -LOADING instead).
func pingReady(ctx context.Context, p *Proc) error {
	return ask(ctx, p, redis.NewClient, func(ctx context.Context, c *redis.Client) error {
		return c.Ping(ctx).Err()
	})
}

// sentinelReady is a sentinel's readiness: it answers SENTINEL MASTER for
// the master name. Whether it has found the replicas and other sentinels
// is Start's concern (waitSentinels), since after a restart it may never:
// the master could be down.
func sentinelReady(ctx context.Context, p *Proc) error {
	return ask(ctx, p, redis.NewSentinelClient, func(ctx context.Context, c *redis.SentinelClient) error {
		return c.Master(ctx, p.s.st.MasterName).Err()
	})
}

// Replication is what a Redis node reports about its role (INFO replication).
type Replication struct {
	// Role is "master" or "slave".
	Role string
	// MasterPort is the port of a replica's master; 0 for a master.
	MasterPort int
	// LinkUp reports a replica's master_link_status:up.
	LinkUp bool
	// ConnectedReplicas is a master's count of connected replicas.
	ConnectedReplicas int
}

// Replication asks the Redis node p for its replication role; p must be of
// KindRedis.
func (p *Proc) Replication(ctx context.Context) (Replication, error) {
	if p.Kind != KindRedis {
		return Replication{}, fmt.Errorf("replication of %s: kind %s, want %s", p.Name, p.Kind, KindRedis)
	}
	var info *redis.InfoCmd
	err := ask(ctx, p, redis.NewClient, func(ctx context.Context, c *redis.Client) error {
		info = c.InfoMap(ctx, "replication")
		return info.Err()
	})
	if err != nil {
		return Replication{}, fmt.Errorf("replication of %s: %w", p.Name, err)
	}
	f := func(key string) string { return info.Item("Replication", key) }
	r := Replication{Role: f("role"), LinkUp: f("master_link_status") == "up"}
	r.MasterPort, _ = strconv.Atoi(f("master_port"))
	r.ConnectedReplicas, _ = strconv.Atoi(f("connected_slaves"))
	if r.Role == "" {
		return r, fmt.Errorf("replication of %s: no role in INFO reply", p.Name)
	}
	return r, nil
}

// Get reads key from the Redis node p, the way a test looks into one
// node's cache; ok is false when the key does not exist.
func (p *Proc) Get(ctx context.Context, key string) (value string, ok bool, err error) {
	if p.Kind != KindRedis {
		return "", false, fmt.Errorf("get %s from %s: kind %s, want %s", key, p.Name, p.Kind, KindRedis)
	}
	err = ask(ctx, p, redis.NewClient, func(ctx context.Context, c *redis.Client) (err error) {
		value, err = c.Get(ctx, key).Result()
		return err
	})
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("get %s from %s: %w", key, p.Name, err)
	}
	return value, true, nil
}

// redisCallTimeout bounds one question to a Redis node or sentinel,
// whatever ctx allows, so that a frozen server fails one poll instead of
// stalling it.
const redisCallTimeout = time.Second

// ask puts a question to the Redis node or sentinel p on a fresh
// connection, authenticated with p's password: f gets a go-redis client
// (newClient is redis.NewClient or redis.NewSentinelClient) holding that
// one connection, and a ctx bounded by redisCallTimeout, which the client
// keeps to on every read and write.
//
// ask dials the connection itself and hands it to go-redis, because the
// dials that fail here, to servers killed or black-holed on purpose, would
// otherwise fail inside go-redis's pool: it retries a failed dial, probes
// the server again in the background, and reports each failure through
// go-redis's logger, which is one per process and belongs to main
// (cache.RouteLibraryLogs); the CLI and the chaos runs, polling dead
// servers, would drown in its lines. With one connection in the pool and
// no retries, go-redis never asks for a second; RESP2 keeps its handshake
// to one HELLO, which carries the password.
func ask[C io.Closer](ctx context.Context, p *Proc, newClient func(*redis.Options) C, f func(context.Context, C) error) error {
	ctx, cancel := context.WithTimeout(ctx, redisCallTimeout) // or ctx's deadline, if sooner
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.Addr())
	if err != nil {
		return err
	}
	c := newClient(&redis.Options{
		Addr:                  p.Addr(),
		Password:              p.password(),
		Dialer:                func(context.Context, string, string) (net.Conn, error) { return conn, nil },
		Protocol:              2,
		DisableIdentity:       true,
		MaxRetries:            -1,
		PoolSize:              1,
		ContextTimeoutEnabled: true,
	})
	defer c.Close()
	return f(ctx, c)
}

// ConfigGet reads the setting param ("maxmemory") of the Redis node p
// with CONFIG GET, the way a chaos run notes what it is about to change.
func (p *Proc) ConfigGet(ctx context.Context, param string) (string, error) {
	if p.Kind != KindRedis {
		return "", fmt.Errorf("config get %s of %s: kind %s, want %s", param, p.Name, p.Kind, KindRedis)
	}
	var got map[string]string
	err := ask(ctx, p, redis.NewClient, func(ctx context.Context, c *redis.Client) (err error) {
		got, err = c.ConfigGet(ctx, param).Result()
		return err
	})
	if err != nil {
		return "", fmt.Errorf("config get %s of %s: %w", param, p.Name, err)
	}
	v, ok := got[param]
	if !ok {
		return "", fmt.Errorf("config get %s of %s: no such setting (got %v)", param, p.Name, got)
	}
	return v, nil
}

// ConfigSet changes the setting param of the running Redis node p with
// CONFIG SET; nothing is written to its config file, and the next start
// (Restart) writes the stack's settings afresh.
func (p *Proc) ConfigSet(ctx context.Context, param, value string) error {
	if p.Kind != KindRedis {
		return fmt.Errorf("config set %s of %s: kind %s, want %s", param, p.Name, p.Kind, KindRedis)
	}
	err := ask(ctx, p, redis.NewClient, func(ctx context.Context, c *redis.Client) error {
		return c.ConfigSet(ctx, param, value).Err()
	})
	if err != nil {
		return fmt.Errorf("config set %s %s of %s: %w", param, value, p.Name, err)
	}
	return nil
}

// UsedMemory returns the bytes the Redis node p reports in use
// (used_memory of INFO memory): a maxmemory at or below it makes the node
// refuse writes under the noeviction policy.
func (p *Proc) UsedMemory(ctx context.Context) (int64, error) {
	if p.Kind != KindRedis {
		return 0, fmt.Errorf("used memory of %s: kind %s, want %s", p.Name, p.Kind, KindRedis)
	}
	var info *redis.InfoCmd
	err := ask(ctx, p, redis.NewClient, func(ctx context.Context, c *redis.Client) error {
		info = c.InfoMap(ctx, "memory")
		return info.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("used memory of %s: %w", p.Name, err)
	}
	n, err := strconv.ParseInt(info.Item("Memory", "used_memory"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("used memory of %s: %w", p.Name, err)
	}
	return n, nil
}

// PubSubClients returns the ports of the clients subscribed to a channel
// on p, each its end of its connection (CLIENT LIST TYPE pubsub).
func (p *Proc) PubSubClients(ctx context.Context) ([]int, error) {
	var list string
	err := ask(ctx, p, redis.NewClient, func(ctx context.Context, c *redis.Client) (err error) {
		list, err = c.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pubsub clients of %s: %w", p.Name, err)
	}
	var ports []int
	for line := range strings.Lines(list) {
		for field := range strings.FieldsSeq(line) {
			addr, ok := strings.CutPrefix(field, "addr=")
			if !ok {
				continue
			}
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, fmt.Errorf("pubsub clients of %s: %q: %w", p.Name, addr, err)
			}
			n, err := strconv.Atoi(port)
			if err != nil {
				return nil, fmt.Errorf("pubsub clients of %s: %q: %w", p.Name, addr, err)
			}
			ports = append(ports, n)
		}
	}
	return ports, nil
}

// Unsent returns how many bytes the server has sent on its connection to
// the client port that the client has not acknowledged (the socket's
// send queue, from /proc/net/tcp): more than zero for long means they do
// not arrive. ok is false when there is no such connection.
func (p *Proc) Unsent(client int) (n int, ok bool, err error) {
	f, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, false, err
	}
	local, remote := fmt.Sprintf(":%04X", p.Port), fmt.Sprintf(":%04X", client)
	for line := range strings.Lines(string(f)) {
		fields := strings.Fields(line)
		// sl local_address rem_address st tx_queue:rx_queue …
		if len(fields) < 5 || !strings.HasSuffix(fields[1], local) || !strings.HasSuffix(fields[2], remote) {
			continue
		}
		tx, _, _ := strings.Cut(fields[4], ":")
		v, err := strconv.ParseInt(tx, 16, 64)
		if err != nil {
			return 0, false, fmt.Errorf("/proc/net/tcp: %q: %w", fields[4], err)
		}
		return int(v), true, nil
	}
	return 0, false, nil
}
