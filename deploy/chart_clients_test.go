package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestChartClientAddresses: the apps believe X-Real-IP only from whoever
// the chart puts in front of them (its nginx pods, or the Ingress
// controller with nginx off), never from every private range; nginx
// takes the client's address from the Ingress controller's header, for
// the controller's addresses only, and nginx accepts the config.
func TestChartClientAddresses(t *testing.T) {
	tests := []struct {
		name    string
		vals    map[string]any
		trusted string   // the apps' SHORTENER_TRUSTED_PROXIES
		realIP  []string // nginx's set_real_ip_from; nil: no nginx
	}{
		{"default", small, "10.244.0.0/16", []string{"10.244.0.0/16"}},
		{"production", production(t), "10.52.0.0/16", nil},
		{"controller addresses", with(small, map[string]any{
			"cluster": map[string]any{"podCIDRs": []any{"10.42.0.0/16", "fd00:42::/56"}},
			"ingress": map[string]any{"controller": map[string]any{"cidrs": []any{"192.168.7.0/24", "10.42.3.0/24"}, "realIPHeader": "X-Real-IP"}},
		}), "10.42.0.0/16,fd00:42::/56", []string{"192.168.7.0/24", "10.42.3.0/24"}},
		{"given", with(small, map[string]any{"app": map[string]any{"trustedProxies": []any{"10.244.9.0/24"}}}),
			"10.244.9.0/24", []string{"10.244.0.0/16"}},
	}
	private := regexp.MustCompile(`(^|,)(10\.0\.0\.0/8|172\.16\.0\.0/12|192\.168\.0\.0/16|fc00::/7|0\.0\.0\.0/0|::/0)(,|$)`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := mustRender(t, tt.vals)
			app := podSpecs(objs)["sho-shortener-app"].Spec.Containers[0]
			got := envOf(app)["SHORTENER_TRUSTED_PROXIES"].Value
			if got != tt.trusted {
				t.Errorf("SHORTENER_TRUSTED_PROXIES=%q, want %q", got, tt.trusted)
			}
			if private.MatchString(got) {
				t.Errorf("SHORTENER_TRUSTED_PROXIES=%q trusts a whole private range or everyone", got)
			}
			conf := configMap(objs, "sho-shortener-nginx")["nginx.conf"]
			if tt.realIP == nil {
				if conf != "" {
					t.Error("nginx is off, but its config is rendered")
				}
				return
			}
			var from []string
			for _, m := range regexp.MustCompile(`(?m)^\s*set_real_ip_from (\S+);`).FindAllStringSubmatch(conf, -1) {
				from = append(from, m[1])
			}
			if !slices.Equal(from, tt.realIP) {
				t.Errorf("set_real_ip_from %v, want %v", from, tt.realIP)
			}
			header := "X-Forwarded-For"
			if tt.name == "controller addresses" {
				header = "X-Real-IP"
			}
			for _, want := range []string{"real_ip_header " + header + ";", "real_ip_recursive on;", "proxy_set_header X-Real-IP $remote_addr;"} {
				if !strings.Contains(conf, want) {
					t.Errorf("nginx.conf lacks %q", want)
				}
			}
			if strings.Contains(conf, "@") && regexp.MustCompile(`@[A-Z_]+@`).MatchString(conf) {
				t.Errorf("nginx.conf keeps a placeholder: %s", regexp.MustCompile(`@[A-Z_]+@`).FindString(conf))
			}
			nginxAccepts(t, conf)
		})
	}
}

// nginxAccepts runs nginx -t on a config the chart rendered, with its
// paths moved into a temporary directory and its upstream (a Service
// name, which nginx would resolve) on loopback.
func nginxAccepts(t *testing.T, conf string) {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	if _, err := os.Stat(bin); err != nil {
		requireTool(t, "nginx", "nginx-light")
		return
	}
	dir := t.TempDir()
	conf = strings.NewReplacer("/var/log/nginx", dir, "/tmp/", dir+"/", "sho-shortener-app:", "127.0.0.1:").Replace(conf)
	if err := os.MkdirAll(filepath.Join(dir, "nginx"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log")).CombinedOutput()
	if err != nil {
		t.Errorf("nginx -t rejects the chart's config: %v\n%s", err, out)
	}
}
