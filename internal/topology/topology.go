// Package topology is the whole local stack of docs/design.md, described
// once: MariaDB, three Redis nodes with three sentinels, and two apps
// behind nginx rendered from the shared template. `stack up` (cmd/stack)
// runs it on the documented ports; the end-to-end tests (e2e) and the
// CLI's own test start it on free ports in a temporary directory; nothing
// else differs, so what the tests break is what a user runs.
package topology

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"shortener/internal/stack"
	"shortener/nginx"
)

// APIKeyFile is the local API key's file name in the state directory;
// CodeKeyFile the code permutation's secret, made once and kept, since
// changing it would change how codes are made (the app refuses the
// built-in one).
const (
	APIKeyFile  = "api-key"
	CodeKeyFile = "code-key"
)

// Config is the whole local stack in dir, its apps running bin: on the
// ports of docs/design.md if local, which every tool and document that
// talks to the local stack assumes, else on free ports. killWithParent is
// for tests, whose servers must die with them.
func Config(dir, bin string, local, killWithParent bool, log *slog.Logger) stack.Config {
	cfg := stack.Config{
		Dir:            dir,
		AppBinary:      bin,
		APIKeyFile:     filepath.Join(dir, APIKeyFile),
		CodeKeyFile:    filepath.Join(dir, CodeKeyFile),
		NginxConf:      renderNginx,
		KillWithParent: killWithParent,
		Log:            log,
		AppEnv: []string{
			// nginx runs on 127.0.0.1: its X-Real-IP names the client.
			"SHORTENER_TRUSTED_PROXIES=127.0.0.1",
			// A soft memory limit, as a container's limit gives one, so
			// the apps collect garbage as deployed (GOGC 400 under a
			// limit: cmd/shortener/memory.go). 112 MiB holds the default
			// L1 (24 MiB) and the rest with room, and keeps an app's RSS
			// under make bench's 150 MiB bound.
			"GOMEMLIMIT=112MiB",
		},
	}
	var appPorts [2]int
	if local {
		cfg.MySQLPort, cfg.NginxPort, appPorts = 3307, 8080, [2]int{8081, 8082}
		cfg.RedisPorts, cfg.SentinelPorts = [3]int{6380, 6381, 6382}, [3]int{26380, 26381, 26382}
		// What make up runs, and make bench and make chaos load: a
		// buffer pool that holds the million links and a day's clicks
		// of the bench, as a deployment's would; tests keep the small
		// default.
		cfg.MySQLBufferPool, cfg.MySQLLogFile = "1G", "256M"
	}
	// Two instances behind nginx. Their node IDs must differ, or their
	// codes collide.
	for i, name := range []string{"app1", "app2"} {
		cfg.Apps = append(cfg.Apps, stack.App{Name: name, NodeID: i + 1, Port: appPorts[i]})
	}
	return cfg
}

// Start writes the API and code keys of cfg if there are none yet and
// starts the stack, which makes its Redis and Sentinel passwords the same
// way (stack.EnsureSecret).
func Start(ctx context.Context, cfg stack.Config) (*stack.Stack, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("start stack: %w", err)
	}
	for _, f := range []string{cfg.APIKeyFile, cfg.CodeKeyFile} {
		if err := stack.EnsureSecret(f); err != nil {
			return nil, fmt.Errorf("start stack: %w", err)
		}
	}
	return stack.Start(ctx, cfg)
}

// renderNginx is the stack's nginx.conf: the shared template, filled in
// with the stack's ports and paths.
func renderNginx(l stack.NginxLayout) ([]byte, error) {
	var b bytes.Buffer
	err := nginx.Render(&b, nginx.Config{
		Listen:  l.Listen,
		Apps:    l.Apps,
		PIDFile: l.PIDFile,
		LogDir:  l.LogDir,
		TempDir: l.TempDir,
		User:    l.User,
		// Per client address, in front of the apps' own limit
		// (SHORTENER_CREATE_RATE / _BURST, 100/s and 200 by default).
		CreateRate:  100,
		CreateBurst: 200,
		// Redirects and previews per client address, as deploy/ has them;
		// 127.0.0.1 is exempt: the chaos runs' and make bench's load
		// generators send thousands a second from it. Other loopback
		// addresses are clients like any (the abuse suite uses them).
		RedirectRate: 300, RedirectBurst: 1000,
		PageRate: 5, PageBurst: 20,
		LimitExempt: []string{"127.0.0.1"},
	})
	return b.Bytes(), err
}
