package nginx

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	dir := t.TempDir()
	c := Config{
		Listen: "127.0.0.1:18080", Apps: []string{"127.0.0.1:18081", "127.0.0.1:18082"},
		PIDFile: filepath.Join(dir, "nginx.pid"), LogDir: dir, TempDir: dir,
		CreateRate: 100, CreateBurst: 200,
	}
	var b strings.Builder
	if err := Render(&b, c); err != nil {
		t.Fatal(err)
	}
	conf := b.String()
	for _, want := range []string{
		"server 127.0.0.1:18081 max_fails=1", "server 127.0.0.1:18082 max_fails=1",
		"listen 127.0.0.1:18080", "limit_req_status 429", "rate=100r/s", "burst=200 nodelay", "keepalive_timeout 4s",
		"proxy_next_upstream error timeout http_502 http_504;",
		// Issue 16: hygiene, and the operational endpoints kept off the
		// public server; keyed creates are left to the apps' per-key limit.
		"worker_processes auto;", "client_header_timeout 10s;", "client_body_timeout 10s;", "limit_conn peraddr 1024;",
		"location = /metrics { return 404; }", "location = /readyz  { return 404; }", `"POST:"  $binary_remote_addr;`,
		// My links searches like the API: not the redirects' 400 ms.
		"location = /links {\n            proxy_pass http://shortener;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("rendered config lacks %q", want)
		}
	}
	if err := Render(&b, Config{}); err == nil {
		t.Error("Render of an empty Config succeeded, want an error")
	}
	noRate := c
	noRate.CreateRate = 0
	if err := Render(&b, noRate); err == nil || !strings.Contains(err.Error(), "create rate (0)") {
		t.Errorf("Render without a create rate: got %v, want an error naming it", err)
	}
	noBurst := c
	noBurst.CreateBurst = 0 // nginx -t refuses burst=0
	if err := Render(&b, noBurst); err == nil || !strings.Contains(err.Error(), "burst (0)") {
		t.Errorf("Render with burst 0: got %v, want an error naming it", err)
	}
	if strings.Contains(conf, "\nuser ") {
		t.Error("rendered config sets a user, want nginx's default when Config.User is empty")
	}
	// Run as root, the local stack keeps nginx's workers as root too.
	if os.Geteuid() == 0 {
		c.User = "root"
		b.Reset()
		if err := Render(&b, c); err != nil {
			t.Fatal(err)
		}
		conf = b.String()
		if !strings.Contains(conf, "\nuser root;\nworker_processes") {
			t.Errorf("rendered config with User root lacks its user line:\n%s", conf[:200])
		}
	}

	// nginx itself must accept the file, when it is installed.
	bin := nginxBinary(t)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-p", dir, "-c", path, "-e", filepath.Join(dir, "startup-error.log")).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t rejects the rendered config: %v\n%s", err, out)
	}
}

// nginxBinary finds nginx, failing under make test and skipping otherwise
// when it is not installed.
func nginxBinary(t *testing.T) string {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("SHORTENER_INTEGRATION") == "1" {
			t.Fatalf("nginx not installed: %v", err)
		}
		t.Skip("nginx not installed; install it (apt-get install nginx) or run `make test`")
	}
	return bin
}
