package deploy

import (
	"encoding/base64"
	"maps"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
)

// TestChartSecretsAreStable: the chart makes up no secret. Without
// values or an existing Secret it refuses to render, naming what it
// lacks; with values it renders the same Secret every time; at an upgrade
// it keeps what its Secret holds (lookup); with an existing Secret it
// makes none and every reference names that one.
func TestChartSecretsAreStable(t *testing.T) {
	// Nothing given: helm template and helm install fail, saying how.
	_, err := render(t, nil)
	if err == nil || !strings.Contains(err.Error(), "secrets.codeKey is required") || !strings.Contains(err.Error(), "existingSecret") {
		t.Errorf("defaults without secrets: got %v, want a required error naming secrets.codeKey and existingSecret", err)
	}
	noRedisPW := with(small, map[string]any{"secrets": map[string]any{"redisPassword": ""}})
	if _, err := render(t, noRedisPW); err == nil || !strings.Contains(err.Error(), "secrets.redisPassword is required") {
		t.Errorf("the chart's Redis without its password: got %v, want a required error naming secrets.redisPassword", err)
	}

	// Values given: two renders, one Secret.
	first, second := chartSecret(t, mustRender(t, small)), chartSecret(t, mustRender(t, small))
	if first == nil || !maps.Equal(first, second) {
		t.Fatalf("two renders of the same values: Secrets %v and %v, want one and the same", first, second)
	}
	for key, want := range map[string]string{"code-key": "0123456789abcdef0123", "db-password": "db-pw", "api-key": "sk_test",
		"redis-password": "redis-pw", "sentinel-password": "sentinel-pw", "mysql-dsn": "shortener:db-pw@tcp(sho-shortener-mysql:3306)/shortener"} {
		if first[key] != want {
			t.Errorf("Secret key %s = %q, want %q", key, first[key], want)
		}
	}

	// An upgrade with no values: what the cluster's Secret holds is kept.
	held := map[string]string{"code-key": "kept-code-key-0123456789", "db-password": "kept-db", "api-key": "sk_kept",
		"redis-password": "kept-redis", "sentinel-password": "kept-sentinel"}
	got := chartSecret(t, renderAgainst(t, nil, secretObject("sho-shortener-secrets", held)))
	for k, v := range held {
		if got[k] != v {
			t.Errorf("upgrade: Secret key %s = %q, want the cluster's %q", k, got[k], v)
		}
	}
	// A value given at the upgrade wins over the cluster's.
	got = chartSecret(t, renderAgainst(t, map[string]any{"secrets": map[string]any{"apiKey": "sk_new"}},
		secretObject("sho-shortener-secrets", held)))
	if got["api-key"] != "sk_new" || got["code-key"] != held["code-key"] {
		t.Errorf("upgrade with a new API key: %v, want sk_new and the kept code key", got)
	}

	// An existing Secret: the chart makes none and reads only it.
	objs := mustRender(t, production(t))
	if s := chartSecret(t, objs); s != nil {
		t.Errorf("with secrets.existingSecret the chart made a Secret %v", s)
	}
	for name, pod := range podSpecs(objs) {
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name != "shortener-prod" {
					t.Errorf("%s/%s: %s reads Secret %s, want shortener-prod", name, c.Name, e.Name, r.SecretKeyRef.Name)
				}
			}
		}
	}
	// ... and at install it must hold the keys the release reads.
	existing := with(small, map[string]any{"secrets": map[string]any{"existingSecret": "mine",
		"codeKey": "", "apiKey": "", "dbPassword": "", "redisPassword": "", "sentinelPassword": ""}})
	_, err = renderAgainstErr(t, existing, secretObject("mine", map[string]string{"mysql-dsn": "x", "code-key": "y", "db-password": "z"}))
	if err == nil || !strings.Contains(err.Error(), "Secret mine (secrets.existingSecret) has no key redis-password") {
		t.Errorf("existing Secret without redis-password: got %v, want an error naming the key", err)
	}
}

// chartSecret is the string data of the chart's own Secret, nil if none.
func chartSecret(tb testing.TB, objs []runtime.Object) map[string]string {
	tb.Helper()
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			return s.StringData
		}
	}
	return nil
}

// secretObject is a Secret as the cluster would return it to lookup.
func secretObject(name string, data map[string]string) *unstructured.Unstructured {
	enc := map[string]any{}
	for k, v := range data {
		enc[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": "web"},
		"data":     enc,
	}}
}

// renderAgainst renders values as helm upgrade would with the cluster
// holding objs (lookup answers from them), and decodes the objects.
func renderAgainst(tb testing.TB, values map[string]any, objs ...runtime.Object) []runtime.Object {
	tb.Helper()
	manifests, err := renderAgainstErr(tb, values, objs...)
	if err != nil {
		tb.Fatal(err)
	}
	return objects(tb, manifests)
}

func renderAgainstErr(tb testing.TB, values map[string]any, objs ...runtime.Object) (map[string]string, error) {
	tb.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		tb.Fatal(err)
	}
	vals, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: "sho", Namespace: "web", IsUpgrade: true}, nil)
	if err != nil {
		return nil, err
	}
	client := fake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)
	return engine.RenderWithClientProvider(ch, vals, secretsProvider{client})
}

// secretsProvider gives lookup a fake cluster that holds Secrets.
type secretsProvider struct{ client dynamic.Interface }

func (p secretsProvider) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	return p.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(kind) + "s"}), true, nil
}
