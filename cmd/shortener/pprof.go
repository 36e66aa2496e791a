package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// checkPprofAddr accepts an empty address (profiling off, the default) or
// one on loopback: profiles show the code, the configuration's shape and
// the heap, and a profile costs CPU, so they are never served to the
// network, nor on the app's own address (nginx forwards every path there).
func checkPprofAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("pprof address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("pprof address %q: want a loopback address, e.g. 127.0.0.1:6060", addr)
	}
	return nil
}

// servePprof serves net/http/pprof on addr, a listener of its own, until
// ctx ends, and returns once it has stopped. A failure is logged, not
// fatal: profiling is a diagnostic.
func servePprof(ctx context.Context, addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Info("pprof listening", "addr", addr)
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	var err error
	select {
	case <-ctx.Done():
		srv.Close()
		err = <-served
	case err = <-served:
	}
	if !errors.Is(err, http.ErrServerClosed) {
		log.Warn("pprof stopped", "err", err)
	}
}
