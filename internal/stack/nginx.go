package stack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
)

// NginxLayout is what the nginx.conf of a stack must use: the ports the
// stack settled on (some may have been picked free) and the paths in its
// state directory. Config.NginxConf turns it into the file.
type NginxLayout struct {
	// Listen is nginx's "127.0.0.1:port".
	Listen string
	// Apps are the apps' "127.0.0.1:port" addresses, in Config.Apps order.
	Apps []string
	// PIDFile is where nginx must write its pid (not the stack's pid file,
	// which the stack writes itself).
	PIDFile string
	// LogDir is the stack's log directory, for error_log and access_log.
	LogDir string
	// TempDir is a directory for nginx's temporary files.
	TempDir string
	// User is the user nginx's workers must run as. It is set when the
	// stack runs as root: workers would otherwise switch to "nobody", who
	// may not reach TempDir inside a private state directory.
	User string
}

func nginxKind() kind {
	return kind{
		name:      KindNginx,
		program:   "nginx",
		configure: configureNginx,
		args:      nginxArgs,
		ready:     nginxReady,
	}
}

func nginxConf(p *Proc) string    { return filepath.Join(p.dir(), "nginx.conf") }
func nginxTempDir(p *Proc) string { return filepath.Join(p.dir(), "tmp") }

// nginxLayout is the layout for the stack's nginx.
func (s *Stack) nginxLayout() NginxLayout {
	p := s.Nginx()
	l := NginxLayout{
		Listen:  p.Addr(),
		PIDFile: filepath.Join(p.dir(), "nginx.pid"),
		LogDir:  filepath.Join(s.dir, "logs"),
		TempDir: nginxTempDir(p),
	}
	for _, a := range s.byKind[KindApp] {
		l.Apps = append(l.Apps, a.Addr())
	}
	if os.Geteuid() == 0 {
		if u, err := user.Current(); err == nil {
			l.User = u.Username
		}
	}
	return l
}

// configureNginx renders nginx.conf on a fresh Start, through the caller's
// Config.NginxConf. A Restart, perhaps from a process that attached and has
// no renderer, reuses the file.
func configureNginx(_ context.Context, p *Proc, fresh bool) error {
	if err := os.MkdirAll(nginxTempDir(p), 0o755); err != nil {
		return err
	}
	path := nginxConf(p)
	if !fresh {
		_, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%s is missing; start the stack afresh", path)
		}
		return err
	}
	if p.s.nginxConf == nil {
		return fmt.Errorf("%w: NginxConf is required to start nginx", ErrConfig)
	}
	b, err := p.s.nginxConf(p.s.nginxLayout())
	if err != nil {
		return fmt.Errorf("render nginx.conf: %w", err)
	}
	return WriteFileAtomic(path, b, 0o644)
}

// nginxArgs run nginx in the foreground, so that the stack's pid and log
// files follow it, with its prefix, config and start-up error log in the
// state directory: nothing is read from /etc/nginx or written to
// /var/log/nginx. Errors before the config's error_log is open go to
// stderr, which is the stack's log file.
func nginxArgs(p *Proc) []string {
	return []string{"-p", p.dir() + string(filepath.Separator), "-c", nginxConf(p), "-e", "stderr", "-g", "daemon off;"}
}

// nginxReady is nginx's readiness: its port answers HTTP. Any status
// counts (a 502 too): the apps' readiness is their own.
func nginxReady(ctx context.Context, p *Proc) error {
	_, err := httpStatus(ctx, "http://"+p.Addr()+"/healthz")
	return err
}
