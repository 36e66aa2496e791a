package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// server is an http.Server with a drain that never closes a connection
// under a proxy's feet.
//
// http.Server.Shutdown closes idle keep-alive connections at once. A proxy
// (nginx) may be writing a request on one of them at that moment; for a
// POST it cannot know whether the app saw it, so it may not retry, and the
// client gets a 502. Instead, on drain the server stops accepting (a
// refused connect is always safe to retry elsewhere), answers every request
// on open connections with "Connection: close", and waits until the proxy
// has closed its idle connections itself (its upstream keepalive timeout is
// shorter than the drain) before it shuts down.
type server struct {
	srv      *http.Server
	ln       net.Listener
	log      *slog.Logger
	conns    atomic.Int64
	draining atomic.Bool
	done     chan error
}

func newServer(ln net.Listener, h http.Handler, idle time.Duration, log *slog.Logger) *server {
	s := &server{ln: ln, log: log, done: make(chan error, 1)}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.draining.Load() {
				w.Header().Set("Connection", "close")
			}
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				s.conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				s.conns.Add(-1)
			}
		},
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s
}

// failed reports Serve ending on its own, before any drain.
func (s *server) failed() <-chan error { return s.done }

// drain stops accepting, lets open connections finish for up to wait, then
// shuts down within ctx.
func (s *server) drain(ctx context.Context, wait time.Duration) error {
	s.draining.Store(true)
	if err := s.ln.Close(); err != nil {
		return fmt.Errorf("close listener: %w", err)
	}
	if err := <-s.done; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	deadline := time.Now().Add(wait)
	for s.conns.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond) // polls the connection count
	}
	s.log.Info("drained", "open_connections", s.conns.Load())
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
