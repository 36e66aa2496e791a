package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestChartRedisAuth: every Redis node and sentinel the chart deploys
// gets its passwords from the Secret through its environment (the image's
// entrypoint writes requirepass, masterauth and sentinel auth-pass into
// its own copy of the config), never through the ConfigMap; probes
// authenticate; the apps get both passwords, required with the chart's
// Redis and optional with yours.
func TestChartRedisAuth(t *testing.T) {
	// The entrypoint is what turns the environment into configuration.
	ep, err := os.ReadFile("redis/entrypoint.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`conf requirepass "$redis_pw"`, `conf masterauth "$redis_pw"`,
		`conf requirepass "$sentinel_pw"`, `conf "sentinel auth-pass $name" "$redis_pw"`,
		"SHORTENER_REDIS_PASSWORD:?", "SHORTENER_SENTINEL_PASSWORD:?", "= PONG ]"} {
		if !strings.Contains(string(ep), want) {
			t.Errorf("redis/entrypoint.sh lacks %q", want)
		}
	}
	inConfig := regexp.MustCompile(`(?m)^\s*(requirepass|masterauth|sentinel auth-pass)\s`)
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			objs := mustRender(t, vals)
			for _, o := range objs {
				if cm, ok := o.(*corev1.ConfigMap); ok {
					for k, v := range cm.Data {
						if inConfig.MatchString(v) {
							t.Errorf("ConfigMap %s key %s sets a Redis password", cm.Name, k)
						}
					}
				}
			}
			pods := podSpecs(objs)
			chartRedis := vals["redis"] == nil // the defaults deploy it
			app := envOf(pods["sho-shortener-app"].Spec.Containers[0])
			for env, key := range map[string]string{"SHORTENER_REDIS_PASSWORD": "redis-password", "SHORTENER_SENTINEL_PASSWORD": "sentinel-password"} {
				ref := app[env].ValueFrom
				if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Key != key {
					t.Errorf("app: %s is not the Secret's %s", env, key)
					continue
				}
				if optional := ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional; optional == chartRedis {
					t.Errorf("app: %s optional=%v; want it required with the chart's Redis only", env, optional)
				}
			}
			redis, ok := pods["sho-shortener-redis"]
			if ok != chartRedis {
				t.Fatalf("Redis StatefulSet rendered: %v, want %v", ok, chartRedis)
			}
			if !ok {
				return
			}
			for _, c := range redis.Spec.Containers {
				env := envOf(c)
				for name, key := range map[string]string{"SHORTENER_REDIS_PASSWORD": "redis-password", "SHORTENER_SENTINEL_PASSWORD": "sentinel-password"} {
					ref := env[name].ValueFrom
					if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Key != key || (ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional) {
						t.Errorf("%s: %s is not the Secret's %s, required", c.Name, name, key)
					}
				}
				if _, ok := env["REDISCLI_AUTH"]; ok {
					t.Errorf("%s: REDISCLI_AUTH in the pod spec; the entrypoint sets it for what needs it", c.Name)
				}
				for kind, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
					want := []string{"/usr/local/bin/shortener-redis", "ping", c.Name}
					if p == nil || p.Exec == nil || strings.Join(p.Exec.Command, " ") != strings.Join(want, " ") {
						t.Errorf("%s: %s probe %+v, want the entrypoint's authenticated %v", c.Name, kind, p, want)
					}
				}
			}
		})
	}
}
