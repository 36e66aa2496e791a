package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"shortener/handler"
	"shortener/store"
)

// keys runs "shortener keys create|revoke|list": API keys for management
// calls. A key is shown once, at creation; only its hash is stored.
func keys(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shortener keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// A small pool of its own, the DSN read and validated as the server's.
	cfg := store.Config{MaxOpen: 2, QueryTimeout: 5 * time.Second, DialTimeout: 2 * time.Second}
	e := newEnvFlags(fs, getenv, []setting{{"mysql-dsn", (*dsn)(&cfg.DSN), "", "MySQL DSN (required)"}})
	var admin bool
	fs.BoolVar(&admin, "admin", false, "create: an admin key, which manages every link")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: shortener keys [-mysql-dsn DSN] [-admin] create NAME | revoke NAME | list")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	e.check("keys", &cfg, cfg.Validate(), nil)
	if err := e.err(); err != nil {
		return err
	}
	cmd, rest := fs.Arg(0), fs.Args()
	if len(rest) > 0 {
		rest = rest[1:]
	}
	if (cmd == "create" || cmd == "revoke") && len(rest) != 1 || cmd == "list" && len(rest) != 0 {
		fs.Usage()
		return errors.New("keys: wrong arguments")
	}
	st, err := store.Open(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx, 30*time.Second); err != nil {
		return err
	}
	switch cmd {
	case "create":
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		key := "sk_" + base64.RawURLEncoding.EncodeToString(b[:])
		if err := st.CreateAPIKey(ctx, rest[0], handler.HashKey(key), admin, time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", key)
		fmt.Fprintf(stderr, "API key %q created; it is shown only now. Send it as X-Api-Key.\n", rest[0])
	case "revoke":
		if err := st.RevokeAPIKey(ctx, rest[0], time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "API key %q revoked; instances stop accepting it within 5 s.\n", rest[0])
	case "list":
		ks, err := st.APIKeys(ctx)
		if err != nil {
			return err
		}
		for _, k := range ks {
			state := "active"
			if !k.RevokedAt.IsZero() {
				state = "revoked " + k.RevokedAt.Format(time.RFC3339)
			}
			if k.Admin {
				state += ", admin"
			}
			fmt.Fprintf(stdout, "%s\tcreated %s\t%s\n", k.Name, k.CreatedAt.Format(time.RFC3339), state)
		}
	default:
		fs.Usage()
		return fmt.Errorf("keys: unknown command %q", cmd)
	}
	return nil
}
