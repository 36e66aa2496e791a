package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

const chartDir = "helm/shortener"

// small is the chart's defaults as a small install gives them: the
// secrets the chart needs for its own MariaDB, Redis and sentinels, which
// it never makes up (helm install --set secrets.codeKey=...).
var small = map[string]any{"secrets": map[string]any{
	"codeKey": "0123456789abcdef0123", "apiKey": "sk_test", "dbPassword": "db-pw",
	"redisPassword": "redis-pw", "sentinelPassword": "sentinel-pw",
}}

// production is what a real install sets (ci/production-values.yaml):
// many replicas, existing Redis and MySQL, an Ingress straight to the
// apps, secrets from an existing Secret, the cluster's own ranges.
func production(tb testing.TB) map[string]any {
	tb.Helper()
	b, err := os.ReadFile(chartDir + "/ci/production-values.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(b, &vals); err != nil {
		tb.Fatal(err)
	}
	return vals
}

// valueSets are the installs every chart test renders: the small and
// the production-like ones, and each with Galera: the chart's three
// nodes, or your own cluster's.
func valueSets(tb testing.TB) map[string]map[string]any {
	return map[string]map[string]any{
		"default": small, "production": production(tb),
		"galera": with(small, galeraOn), "production galera": with(production(tb), yourGalera),
	}
}

// with returns values with over merged in, key by key (neither changes).
func with(values, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range values {
		out[k] = v
	}
	for k, v := range over {
		if a, ok := out[k].(map[string]any); ok {
			if b, ok := v.(map[string]any); ok {
				out[k] = with(a, b)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// mustRender renders values and decodes every object strictly.
func mustRender(tb testing.TB, values map[string]any) []runtime.Object {
	tb.Helper()
	manifests, err := render(tb, values)
	if err != nil {
		tb.Fatal(err)
	}
	return objects(tb, manifests)
}

// podSpecs are the pod templates of the rendered workloads, by name.
func podSpecs(objs []runtime.Object) map[string]corev1.PodTemplateSpec {
	pods := map[string]corev1.PodTemplateSpec{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			pods[o.Name] = o.Spec.Template
		case *appsv1.StatefulSet:
			pods[o.Name] = o.Spec.Template
		}
	}
	return pods
}

// envOf is a container's environment by name.
func envOf(c corev1.Container) map[string]corev1.EnvVar {
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	return env
}

// configMap is the data of the rendered ConfigMap called name.
func configMap(objs []runtime.Object, name string) map[string]string {
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == name {
			return cm.Data
		}
	}
	return nil
}

// render renders the chart with values over its defaults, checking them
// against values.schema.json, and returns the manifests by template.
func render(tb testing.TB, values map[string]any) (map[string]string, error) {
	tb.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		tb.Fatal(err)
	}
	vals, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: "sho", Namespace: "web", IsInstall: true}, nil)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}

// objects decodes every rendered object strictly: an unknown or duplicated
// field, or a wrong type, is an error.
func objects(tb testing.TB, manifests map[string]string) []runtime.Object {
	tb.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1.AddToScheme, corev1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			tb.Fatal(err)
		}
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []runtime.Object
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range manifests {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		for i, doc := range strings.Split(manifests[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			obj, _, err := dec.Decode([]byte(doc), nil, nil)
			if err != nil {
				tb.Errorf("%s, document %d: %v\n%s", name, i, err, doc)
				continue
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestChartLint runs Helm's linter (which also checks values.schema.json)
// with the default and the production-like values.
func TestChartLint(t *testing.T) {
	for name, vals := range valueSets(t) {
		l := lint.RunAll(chartDir, vals, "web")
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s values: helm lint: %s", name, m)
			}
		}
	}
}

// TestChartRenders renders the chart with the default and the
// production-like values, decodes every object strictly, and checks what
// matters for the app: probes on real routes, a grace period that fits the
// drain, auto node IDs for more than one replica, no secret in plain text.
func TestChartRenders(t *testing.T) {
	routes := openAPIRoutes(t)
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			manifests, err := render(t, vals)
			if err != nil {
				t.Fatal(err)
			}
			objs := objects(t, manifests)
			kinds := map[string]int{}
			var app *appsv1.Deployment
			var hpa *autoscalingv2.HorizontalPodAutoscaler
			for _, o := range objs {
				kinds[fmt.Sprintf("%T", o)]++
				switch o := o.(type) {
				case *appsv1.Deployment:
					if o.Name == "sho-shortener-app" {
						app = o
					}
					checkPodSpec(t, o.Name, o.Spec.Template.Spec, routes)
				case *appsv1.StatefulSet:
					checkPodSpec(t, o.Name, o.Spec.Template.Spec, routes)
				case *autoscalingv2.HorizontalPodAutoscaler:
					hpa = o
				case *corev1.ConfigMap:
					for k, v := range o.Data {
						if secretLike.MatchString(v) {
							t.Errorf("ConfigMap %s key %s looks like it holds a secret", o.Name, k)
						}
					}
				}
			}
			t.Logf("objects: %v", kinds)
			if app == nil {
				t.Fatal("no app Deployment")
			}
			checkApp(t, app, hpa)
			for _, want := range []string{"*v1.PodDisruptionBudget", "*v1.Service"} {
				if kinds[want] == 0 {
					t.Errorf("no %s", want)
				}
			}
			if kinds["*v2.HorizontalPodAutoscaler"] == 0 {
				t.Error("no HorizontalPodAutoscaler")
			}
		})
	}
}

// secretLike matches text that carries a password or key in the clear.
var secretLike = regexp.MustCompile(`(?i)(password|passwd|secret|api[_-]?key|code[_-]?key)\s*[:=]\s*\S+|requirepass\s+\S+`)

// checkPodSpec checks every container: HTTP probes on routes the app
// serves, and secrets only through secretKeyRef.
func checkPodSpec(t *testing.T, name string, spec corev1.PodSpec, routes map[string]bool) {
	t.Helper()
	for _, c := range spec.Containers {
		for kind, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
			if p == nil || p.HTTPGet == nil {
				continue
			}
			if !routes[p.HTTPGet.Path] {
				t.Errorf("%s/%s: %s probe on %s, which the app does not serve (handler/openapi.json)", name, c.Name, kind, p.HTTPGet.Path)
			}
		}
		for _, e := range c.Env {
			if secretName.MatchString(e.Name) && !strings.HasSuffix(e.Name, "_FILE") && e.Value != "" {
				t.Errorf("%s/%s: %s is set in plain text; it must come from a Secret", name, c.Name, e.Name)
			}
		}
	}
}

var secretName = regexp.MustCompile(`DSN|KEY|PASSWORD|SECRET|TOKEN`)

// checkApp checks the app Deployment's drain, probes and node IDs.
func checkApp(t *testing.T, d *appsv1.Deployment, hpa *autoscalingv2.HorizontalPodAutoscaler) {
	t.Helper()
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v, want GET /readyz", c.ReadinessProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v, want GET /healthz", c.LivenessProbe)
	}
	// preStop, then the drain and the shutdown must end before SIGKILL.
	drain, err1 := time.ParseDuration(env["SHORTENER_DRAIN_TIMEOUT"].Value)
	shutdown, err2 := time.ParseDuration(env["SHORTENER_SHUTDOWN_TIMEOUT"].Value)
	clicks, err3 := time.ParseDuration(env["SHORTENER_CLICKS_DRAIN_TIMEOUT"].Value)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("drain %v, shutdown %v, clicks drain %v", err1, err2, err3)
	}
	var preStop time.Duration
	if h := c.Lifecycle; h == nil || h.PreStop == nil || h.PreStop.Sleep == nil {
		t.Error("no preStop sleep: the pod would get SIGTERM while the Services still send it requests")
	} else {
		preStop = time.Duration(h.PreStop.Sleep.Seconds) * time.Second
	}
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	if need := preStop + drain + shutdown + clicks; grace < need {
		t.Errorf("terminationGracePeriodSeconds %s < preStop %s + drain %s + shutdown %s + clicks drain %s", grace, preStop, drain, shutdown, clicks)
	}
	// A fixed node ID is the same in every pod: more than one pod needs auto.
	most := int32(1)
	if d.Spec.Replicas != nil {
		most = *d.Spec.Replicas
	}
	if hpa != nil {
		most = max(most, hpa.Spec.MaxReplicas)
	}
	if most > 1 && env["SHORTENER_NODE_ID"].Value != "auto" {
		t.Errorf("up to %d replicas with SHORTENER_NODE_ID=%q: want auto", most, env["SHORTENER_NODE_ID"].Value)
	}
	for _, k := range []string{"SHORTENER_MYSQL_DSN", "SHORTENER_CODE_KEY"} {
		if e := env[k]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s does not come from a Secret", k)
		}
	}
	if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
		t.Error("no pod anti-affinity: replicas could share a node")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Error("no CPU or memory request")
	}
}

// TestChartRejectsBadValues: values.schema.json turns away values that
// would deploy something broken or leak a secret.
func TestChartRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		vals map[string]any
	}{
		{"fixed node ID with 3 replicas", map[string]any{"app": map[string]any{"nodeID": 7, "replicas": 3, "autoscaling": map[string]any{"enabled": false}}}},
		{"fixed node ID with autoscaling", map[string]any{"app": map[string]any{"nodeID": 7, "replicas": 1}}},
		{"node ID out of range", map[string]any{"app": map[string]any{"nodeID": 1024}}},
		{"secret in env", map[string]any{"app": map[string]any{"env": map[string]any{"SHORTENER_CODE_KEY": "hunter2hunter2hunter2"}}}},
		{"unknown value", map[string]any{"app": map[string]any{"replica": 3}}},
		{"bad duration", map[string]any{"app": map[string]any{"drainTimeout": "5 seconds"}}},
		{"drain set behind the chart's back", map[string]any{"app": map[string]any{"env": map[string]any{"SHORTENER_DRAIN_TIMEOUT": "60s"}}}},
		{"external MySQL without a Secret", map[string]any{"mysql": map[string]any{"deploy": false}}},
		{"external Redis without sentinels", map[string]any{"redis": map[string]any{"deploy": false}}},
		{"bad pull policy", map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}},
		{"Redis password in env", map[string]any{"app": map[string]any{"env": map[string]any{"SHORTENER_SENTINEL_PASSWORD_FILE": "/x"}}}},
		{"trusted proxies behind the chart's back", map[string]any{"app": map[string]any{"env": map[string]any{"SHORTENER_TRUSTED_PROXIES": "0.0.0.0/0"}}}},
		{"journal bound behind the chart's back", map[string]any{"app": map[string]any{"env": map[string]any{"SHORTENER_CLICKS_MAX_BYTES": "8589934592"}}}},
		{"short code key", map[string]any{"secrets": map[string]any{"codeKey": "short"}}},
		{"secret values and an existing Secret", map[string]any{"secrets": map[string]any{"existingSecret": "mine"}}},
		{"bad pod CIDR", map[string]any{"cluster": map[string]any{"podCIDRs": []any{"10.244.0.0/16; x"}}}},
		{"no pod CIDR", map[string]any{"cluster": map[string]any{"podCIDRs": []any{}}}},
		{"monitoring label without a key", map[string]any{"networkPolicy": map[string]any{"monitoring": map[string]any{"namespaceLabel": map[string]any{"key": ""}}}}},
		{"controller namespace not a name", map[string]any{"ingress": map[string]any{"controller": map[string]any{"namespace": "ingress nginx"}}}},
		{"Galera nodes set behind the chart's back", map[string]any{"app": map[string]any{"env": map[string]any{"SHORTENER_MYSQL_NODES": "a:3306"}}}},
		{"Galera of two nodes", map[string]any{"mysql": map[string]any{"galera": map[string]any{"enabled": true, "replicas": 2}}}},
		{"Galera of four nodes", map[string]any{"mysql": map[string]any{"galera": map[string]any{"enabled": true, "replicas": 4}}}},
		{"Galera of one node", map[string]any{"mysql": map[string]any{"galera": map[string]any{"enabled": true, "replicas": 1}}}},
		{"the chart's Galera and your MySQL", map[string]any{"secrets": map[string]any{"existingSecret": "mine", "codeKey": "", "apiKey": "",
			"dbPassword": "", "redisPassword": "", "sentinelPassword": ""}, "mysql": map[string]any{"deploy": false, "galera": map[string]any{"enabled": true}}}},
		{"your nodes and the chart's MariaDB", map[string]any{"mysql": map[string]any{"nodes": []any{"db-0.db:3306"}}}},
		{"a node without its port", yourNodes("db-0.db")},
		{"a node that is a DSN", yourNodes("tcp(db-0.db:3306)")},
		{"a node twice", yourNodes("db-0.db:3306", "db-0.db:3306")},
		{"nodes in one string", yourNodes("db-0.db:3306,db-1.db:3306")},
		{"a Galera cache size without a unit", map[string]any{"mysql": map[string]any{"galera": map[string]any{"gcacheSize": "128"}}}},
	}
	for _, tt := range tests {
		// Over the small install's secrets: only the schema may refuse.
		if _, err := render(t, with(small, tt.vals)); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("%s: got %v, want a schema error", tt.name, err)
		}
	}
	// Your own nodes, well formed, render.
	if _, err := render(t, with(small, yourNodes("db-0.db:3306", "10.1.2.3:3307"))); err != nil {
		t.Errorf("your own Galera nodes: %v", err)
	}
	// A single replica may have a fixed node ID.
	if _, err := render(t, with(small, map[string]any{"app": map[string]any{"nodeID": 7, "replicas": 1, "autoscaling": map[string]any{"enabled": false}}})); err != nil {
		t.Errorf("one replica with a fixed node ID: %v", err)
	}
}

// TestChartValuesHoldNoSecret: the chart's own values name no secret.
func TestChartValuesHoldNoSecret(t *testing.T) {
	b, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(path+"."+k, x)
			}
		case string:
			if regexp.MustCompile(`(?i)password|dsn|apikey|codekey|token`).MatchString(path) && v != "" {
				t.Errorf("values%s holds %q: secrets belong in a Secret", path, v)
			}
		}
	}
	walk("", vals)
}

// openAPIRoutes reads the app's routes from handler/openapi.json, which a
// test of the handler keeps equal to the routes it serves.
func openAPIRoutes(tb testing.TB) map[string]bool {
	tb.Helper()
	b, err := os.ReadFile("../handler/openapi.json")
	if err != nil {
		tb.Fatal(err)
	}
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&spec); err != nil {
		tb.Fatal(err)
	}
	routes := map[string]bool{}
	for p, ops := range spec.Paths {
		if _, ok := ops["get"]; ok {
			routes[p] = true
		}
	}
	return routes
}
