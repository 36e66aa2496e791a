package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// appGrace is how long an app may take to exit after SIGTERM. It drains
// first: it stops accepting, answers with "Connection: close" and waits up
// to its drain timeout (5 s) for nginx to drop idle upstream connections,
// then gives in-flight requests their shutdown timeout. Killing it sooner
// would turn a rolling restart into a crash.
const appGrace = 20 * time.Second

// httpProbeTimeout bounds one readiness request.
const httpProbeTimeout = time.Second

// probeClient makes readiness requests. It keeps no connection open: an
// idle keep-alive connection to an app would hold up the app's drain on
// SIGTERM, which waits for its connections to close.
var probeClient = &http.Client{
	Timeout:   httpProbeTimeout,
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

func appKind() kind {
	return kind{
		name:      KindApp,
		path:      func(p *Proc) string { return p.s.st.AppBinary },
		grace:     appGrace,
		env:       appEnv,
		configure: func(context.Context, *Proc, bool) error { return nil },
		// The address is also in the environment; on the command line it
		// lets a pid file be checked against /proc/<pid>/cmdline.
		args:  func(p *Proc) []string { return []string{"-addr=" + p.Addr()} },
		ready: appReady,
	}
}

// appEnv is an app's whole environment: its SHORTENER_* settings (with
// Galera, SHORTENER_MYSQL_NODES, every node's SQL address), the
// data tier's passwords (read from the state directory with the Stack),
// the API and code keys read from their files at each start (so that no
// secret lands in stack.json), then Config.AppEnv, which may override any
// of them. Nothing is inherited
// from the starting process, so an app restarted from another shell runs
// exactly as it first did.
func appEnv(p *Proc) ([]string, error) {
	st := p.s.st
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"SHORTENER_ADDR=" + p.Addr(),
		"SHORTENER_NODE_ID=" + strconv.Itoa(p.NodeID),
		"SHORTENER_INSTANCE=" + p.Name,
		"SHORTENER_BASE_URL=" + p.s.BaseURL(),
		"SHORTENER_MYSQL_DSN=" + p.s.MySQLDSN(),
		"SHORTENER_REDIS_MASTER=" + st.MasterName,
		"SHORTENER_REDIS_SENTINELS=" + strings.Join(p.s.SentinelAddrs(), ","),
		"SHORTENER_CLICKS_DIR=" + p.ClicksDir(),
		"SHORTENER_REDIS_PASSWORD=" + p.s.redisPassword,
		"SHORTENER_SENTINEL_PASSWORD=" + p.s.sentinelPassword,
	}
	if p.s.Galera() {
		// Every node, in order: the app writes through the first that
		// is healthy.
		env = append(env, "SHORTENER_MYSQL_NODES="+strings.Join(p.s.MySQLAddrs(), ","))
	}
	for _, secret := range []struct{ file, env string }{
		{st.APIKeyFile, "SHORTENER_API_KEY"}, {st.CodeKeyFile, "SHORTENER_CODE_KEY"},
	} {
		if secret.file == "" {
			continue
		}
		b, err := os.ReadFile(secret.file)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", secret.env, err)
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return nil, fmt.Errorf("read %s: %s is empty", secret.env, secret.file)
		}
		env = append(env, secret.env+"="+key)
	}
	return append(env, st.AppEnv...), nil
}

// appReady is an app's readiness: GET /readyz answers 200, which the app
// does once its database answers and its schema is migrated.
func appReady(ctx context.Context, p *Proc) error {
	code, err := httpStatus(ctx, "http://"+p.Addr()+"/readyz")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s GET /readyz: %d", p.Name, code)
	}
	return nil
}

// httpStatus makes one GET and returns the status code.
func httpStatus(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
