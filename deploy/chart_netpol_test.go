package deploy

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// pod is a pod as NetworkPolicy sees it: where it runs, its labels, and
// (as a destination) its named ports.
type pod struct {
	namespace string
	nsLabels  map[string]string
	labels    map[string]string
	ports     map[string]int32
}

func namespace(name string, extra ...string) (string, map[string]string) {
	l := map[string]string{"kubernetes.io/metadata.name": name}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return name, l
}

func podIn(ns string, nsLabels map[string]string, labels ...string) pod {
	p := pod{namespace: ns, nsLabels: nsLabels, labels: map[string]string{}}
	for i := 0; i+1 < len(labels); i += 2 {
		p.labels[labels[i]] = labels[i+1]
	}
	return p
}

// TestChartNetworkPolicies evaluates the rendered NetworkPolicies as
// Kubernetes does (a pod selected by a policy takes only what some
// selecting policy's rule admits) for every path into the release's pods:
// the paths the chart needs are open, every other one is shut, in both
// installs, with nginx off, and with a Service reached from outside.
func TestChartNetworkPolicies(t *testing.T) {
	const ns = "web"
	relNS, relNSLabels := namespace(ns)
	type path struct {
		from, to string
		port     string // the destination's named port
		open     bool
	}
	tests := []struct {
		name     string
		vals     map[string]any
		sources  map[string]pod // beside the release's own pods
		paths    []path
		policies bool
	}{
		{
			name: "default", vals: small, policies: true,
			sources: sources("ingress-nginx", []string{"app.kubernetes.io/name", "ingress-nginx"}, []string{}),
			paths: []path{
				{"controller", "nginx", "http", true},
				{"controller-in-other-namespace", "nginx", "http", false},
				{"other-pod-of-controller-namespace", "nginx", "http", false},
				{"monitoring", "nginx", "http", false},
				{"stranger", "nginx", "http", false},
				{"elsewhere", "nginx", "http", false},
				{"nginx", "app", "http", true},
				{"monitoring", "app", "http", true},
				{"monitoring-lookalike", "app", "http", false},
				{"controller", "app", "http", false},
				{"stranger", "app", "http", false},
				{"redis", "app", "http", false},
				{"mysql", "app", "http", false},
				{"app", "redis", "redis", true},
				{"app", "redis", "sentinel", true},
				{"redis", "redis", "redis", true},
				{"redis", "redis", "sentinel", true},
				{"nginx", "redis", "redis", false},
				{"nginx", "redis", "sentinel", false},
				{"controller", "redis", "redis", false},
				{"monitoring", "redis", "redis", false},
				{"mysql", "redis", "redis", false},
				{"stranger", "redis", "sentinel", false},
				{"app", "mysql", "mysql", true},
				{"nginx", "mysql", "mysql", false},
				{"redis", "mysql", "mysql", false},
				{"monitoring", "mysql", "mysql", false},
				{"stranger", "mysql", "mysql", false},
				{"app", "nginx", "http", false},
			},
		},
		{
			// nginx off: the Ingress controller reaches the apps itself.
			name: "production", vals: production(t), policies: true,
			sources: sources("ingress", []string{"app.kubernetes.io/name", "ingress-nginx", "app.kubernetes.io/component", "controller"},
				[]string{"purpose", "monitoring"}),
			paths: []path{
				{"controller", "app", "http", true},
				{"monitoring", "app", "http", true},
				{"monitoring-lookalike", "app", "http", false},
				{"controller-in-other-namespace", "app", "http", false},
				{"other-pod-of-controller-namespace", "app", "http", false},
				{"stranger", "app", "http", false},
				{"elsewhere", "app", "http", false},
			},
		},
		{
			name: "nginx off, chart's Redis and MariaDB", vals: with(small, map[string]any{"nginx": map[string]any{"enabled": false}}), policies: true,
			sources: sources("ingress-nginx", []string{"app.kubernetes.io/name", "ingress-nginx"}, []string{}),
			paths: []path{
				{"controller", "app", "http", true},
				{"stranger", "app", "http", false},
				{"controller", "redis", "redis", false},
				{"controller", "mysql", "mysql", false},
				{"app", "redis", "sentinel", true},
				{"app", "mysql", "mysql", true},
			},
		},
		{
			// The chart's Galera nodes: the apps reach their MySQL port,
			// only the nodes reach each other's Galera ports.
			name: "Galera", vals: with(small, galeraOn), policies: true,
			sources: sources("ingress-nginx", []string{"app.kubernetes.io/name", "ingress-nginx"}, []string{}),
			paths: []path{
				{"app", "galera", "mysql", true},
				{"galera", "galera", "galera", true},
				{"galera", "galera", "ist", true},
				{"galera", "galera", "sst", true},
				{"app", "galera", "galera", false},
				{"app", "galera", "ist", false},
				{"app", "galera", "sst", false},
				{"galera", "galera", "mysql", false},
				{"nginx", "galera", "mysql", false},
				{"redis", "galera", "mysql", false},
				{"redis", "galera", "galera", false},
				{"monitoring", "galera", "mysql", false},
				{"controller", "galera", "sst", false},
				{"stranger", "galera", "mysql", false},
				{"stranger", "galera", "galera", false},
				{"stranger", "galera", "sst", false},
				{"elsewhere", "galera", "ist", false},
				{"galera", "app", "http", false},
				{"galera", "redis", "redis", false},
			},
		},
		{
			// podLabels' default key set to null: any pod of the namespace.
			name: "any pod of the controller's namespace", policies: true,
			vals:    with(small, map[string]any{"ingress": map[string]any{"controller": map[string]any{"podLabels": map[string]any{"app.kubernetes.io/name": nil}}}}),
			sources: sources("ingress-nginx", []string{"app.kubernetes.io/name", "ingress-nginx"}, []string{}),
			paths: []path{
				{"other-pod-of-controller-namespace", "nginx", "http", true},
				{"controller-in-other-namespace", "nginx", "http", false},
			},
		},
		{
			name: "LoadBalancer Service", vals: with(small, map[string]any{"service": map[string]any{"type": "LoadBalancer"}}), policies: true,
			sources: sources("ingress-nginx", []string{"app.kubernetes.io/name", "ingress-nginx"}, []string{}),
			paths: []path{
				{"elsewhere", "nginx", "http", true},
				{"elsewhere", "app", "http", false},
				{"elsewhere", "redis", "redis", false},
			},
		},
		{
			name: "disabled", vals: with(small, map[string]any{"networkPolicy": map[string]any{"enabled": false}}),
			sources: sources("ingress-nginx", []string{"app.kubernetes.io/name", "ingress-nginx"}, []string{}),
			paths: []path{
				{"stranger", "redis", "redis", true},
				{"elsewhere", "mysql", "mysql", true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := mustRender(t, tt.vals)
			var policies []*networkingv1.NetworkPolicy
			for _, o := range objs {
				if p, ok := o.(*networkingv1.NetworkPolicy); ok {
					p.Namespace = ns
					policies = append(policies, p)
				}
			}
			if (len(policies) > 0) != tt.policies {
				t.Fatalf("%d NetworkPolicies, want some: %v", len(policies), tt.policies)
			}
			pods := releasePods(objs, relNS, relNSLabels)
			// Every pod of the release is isolated: none is left open by
			// a component the policies forgot.
			if tt.policies {
				for name, p := range pods {
					if !isolated(policies, p) {
						t.Errorf("the %s pods are selected by no policy: open to everyone", name)
					}
				}
			}
			for name, p := range tt.sources {
				pods[name] = p
			}
			for _, pt := range tt.paths {
				from, ok1 := pods[pt.from]
				to, ok2 := pods[pt.to]
				if !ok1 || !ok2 {
					t.Errorf("%s -> %s: no such pod (rendered: %v)", pt.from, pt.to, keys(pods))
					continue
				}
				port, ok := to.ports[pt.port]
				if !ok {
					t.Errorf("%s has no port %s", pt.to, pt.port)
					continue
				}
				if got := allowed(policies, from, to, port); got != pt.open {
					t.Errorf("%s -> %s:%s (%d): open %v, want %v", pt.from, pt.to, pt.port, port, got, pt.open)
				}
			}
		})
	}
}

// sources are the pods outside the release that try to reach it: the
// Ingress controller (in its namespace, with its labels), a look-alike in
// another namespace and another pod in its namespace, the monitoring
// namespace (labelled as the values say; empty: by its name) and a
// namespace that only looks like it, a stranger in the release's
// namespace and one elsewhere.
func sources(controllerNS string, controllerLabels, monitoringLabels []string) map[string]pod {
	cNS, cNSLabels := namespace(controllerNS)
	mName := "monitoring"
	if len(monitoringLabels) > 0 {
		mName = "prometheus"
	}
	mNS, mNSLabels := namespace(mName, monitoringLabels...)
	fakeNS, fakeNSLabels := namespace("not-monitoring", "purpose", "monitoring-ish")
	otherNS, otherNSLabels := namespace("other")
	webNS, webNSLabels := namespace("web")
	return map[string]pod{
		"controller":                        podIn(cNS, cNSLabels, controllerLabels...),
		"controller-in-other-namespace":     podIn(otherNS, otherNSLabels, controllerLabels...),
		"other-pod-of-controller-namespace": podIn(cNS, cNSLabels, "app", "default-backend"),
		"monitoring":                        podIn(mNS, mNSLabels, "app", "prometheus"),
		"monitoring-lookalike":              podIn(fakeNS, fakeNSLabels, "app", "prometheus"),
		"stranger":                          podIn(webNS, webNSLabels, "app", "stranger"),
		"elsewhere":                         podIn(otherNS, otherNSLabels, "app", "stranger"),
	}
}

// releasePods are the release's pods by component, with their ports.
func releasePods(objs []runtime.Object, ns string, nsLabels map[string]string) map[string]pod {
	pods := map[string]pod{}
	for _, tmpl := range podSpecs(objs) {
		p := pod{namespace: ns, nsLabels: nsLabels, labels: tmpl.Labels, ports: map[string]int32{}}
		for _, c := range tmpl.Spec.Containers {
			for _, port := range c.Ports {
				p.ports[port.Name] = port.ContainerPort
			}
		}
		pods[tmpl.Labels["app.kubernetes.io/component"]] = p
	}
	return pods
}

// isolated says whether a policy with Ingress selects p.
func isolated(policies []*networkingv1.NetworkPolicy, p pod) bool {
	for _, np := range policies {
		if np.Namespace == p.namespace && selects(&np.Spec.PodSelector, p.labels) && hasIngress(np) {
			return true
		}
	}
	return false
}

func hasIngress(np *networkingv1.NetworkPolicy) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return true
	}
	for _, t := range np.Spec.PolicyTypes {
		if t == networkingv1.PolicyTypeIngress {
			return true
		}
	}
	return false
}

// allowed says whether from may open a TCP connection to port of to.
func allowed(policies []*networkingv1.NetworkPolicy, from, to pod, port int32) bool {
	if !isolated(policies, to) {
		return true
	}
	for _, np := range policies {
		if np.Namespace != to.namespace || !selects(&np.Spec.PodSelector, to.labels) || !hasIngress(np) {
			continue
		}
		for _, rule := range np.Spec.Ingress {
			if admitsPort(rule.Ports, to, port) && admitsPeer(rule.From, np.Namespace, from) {
				return true
			}
		}
	}
	return false
}

func admitsPort(ports []networkingv1.NetworkPolicyPort, to pod, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		want := p.Port.IntVal
		if p.Port.StrVal != "" {
			named, ok := to.ports[p.Port.StrVal]
			if !ok {
				continue
			}
			want = named
		}
		if want == port {
			return true
		}
	}
	return false
}

func admitsPeer(peers []networkingv1.NetworkPolicyPeer, policyNS string, from pod) bool {
	if len(peers) == 0 {
		return true
	}
	for _, peer := range peers {
		if peer.IPBlock != nil {
			continue // the chart uses none; an address is not a pod's here
		}
		nsOK := from.namespace == policyNS
		if peer.NamespaceSelector != nil {
			nsOK = selects(peer.NamespaceSelector, from.nsLabels)
		}
		podOK := peer.PodSelector == nil || selects(peer.PodSelector, from.labels)
		if nsOK && podOK {
			return true
		}
	}
	return false
}

func selects(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		panic(fmt.Sprintf("selector %v: %v", sel, err))
	}
	return s.Matches(labels.Set(l))
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
