package deploy

import (
	"fmt"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// galeraOn is the chart's own Galera cluster, over the small install.
var galeraOn = map[string]any{"mysql": map[string]any{"galera": map[string]any{"enabled": true}}}

// yourGalera is your own cluster's nodes, over the production install
// (which has its own MySQL).
var yourGalera = map[string]any{"mysql": map[string]any{"nodes": []any{"db-0.galera.db:3306", "db-1.galera.db:3306", "10.52.7.9:3307"}}}

// yourNodes is your own MySQL given as nodes, over the small install
// (whose secrets it blanks: your MySQL's DSN comes from your Secret).
func yourNodes(nodes ...any) map[string]any {
	return map[string]any{
		"secrets": map[string]any{"existingSecret": "mine", "codeKey": "", "apiKey": "", "dbPassword": "", "redisPassword": "", "sentinelPassword": ""},
		"mysql":   map[string]any{"deploy": false, "nodes": nodes},
	}
}

// TestChartGalera renders the chart's Galera cluster and checks what it
// rests on: every node and every app is given the same list of nodes,
// pod 0 first (it bootstraps a new cluster, and the apps write through
// the first healthy node); each name in it is a pod's name under the
// headless Service that governs the StatefulSet and publishes pods
// before they are ready (nodes find each other before any is Synced);
// pods start in parallel (the node that stopped last must start to
// bootstrap again, whatever its ordinal); readiness is the entrypoint's
// Synced check; the PodDisruptionBudget keeps a majority; the one
// MariaDB is gone.
func TestChartGalera(t *testing.T) {
	entrypoint, err := os.ReadFile("mariadb/entrypoint.sh")
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile("mariadb/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, replicas := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", replicas), func(t *testing.T) {
			vals := with(small, map[string]any{"mysql": map[string]any{"galera": map[string]any{"enabled": true, "replicas": replicas}}})
			objs := mustRender(t, vals)
			var sts *appsv1.StatefulSet
			var svc *corev1.Service
			var pdbs []*policyv1.PodDisruptionBudget
			for _, o := range objs {
				switch o := o.(type) {
				case *appsv1.StatefulSet:
					if o.Name == "sho-shortener-galera" {
						sts = o
					}
					if o.Name == "sho-shortener-mysql" {
						t.Error("the one MariaDB's StatefulSet is rendered beside Galera")
					}
				case *corev1.Service:
					if o.Name == "sho-shortener-galera" {
						svc = o
					}
					if o.Name == "sho-shortener-mysql" {
						t.Error("the one MariaDB's Service is rendered beside Galera")
					}
				case *policyv1.PodDisruptionBudget:
					pdbs = append(pdbs, o)
				}
			}
			if sts == nil || svc == nil {
				t.Fatalf("no Galera StatefulSet (%v) or Service (%v)", sts != nil, svc != nil)
			}
			pod := sts.Spec.Template
			if sts.Spec.Replicas == nil || int(*sts.Spec.Replicas) != replicas {
				t.Errorf("replicas %v, want %d", sts.Spec.Replicas, replicas)
			}
			if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
				t.Errorf("podManagementPolicy %q, want Parallel: in order, pod 0 would wait for a peer that waits for pod 0 to be ready", sts.Spec.PodManagementPolicy)
			}
			if !selects(sts.Spec.Selector, pod.Labels) {
				t.Errorf("the StatefulSet's selector %v does not select its pods %v", sts.Spec.Selector, pod.Labels)
			}
			// The governing Service: headless, selecting the pods,
			// publishing them unready.
			if sts.Spec.ServiceName != svc.Name || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
				t.Errorf("serviceName %q; Service %s clusterIP %q publishNotReadyAddresses %v: want the StatefulSet governed by a headless Service that publishes unready pods",
					sts.Spec.ServiceName, svc.Name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
			}
			if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, pod.Labels) {
				t.Errorf("the headless Service's selector %v does not select the pods %v", svc.Spec.Selector, pod.Labels)
			}

			c := pod.Spec.Containers[0]
			env := envOf(c)
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			for name, want := range map[string]int32{"mysql": 3306, "galera": 4567, "ist": 4568, "sst": 4444} {
				if ports[name] != want {
					t.Errorf("container port %s = %d, want %d", name, ports[name], want)
				}
			}
			for _, p := range svc.Spec.Ports {
				if ports[p.TargetPort.StrVal] != p.Port {
					t.Errorf("Service port %s: %d to %q, not the container's port of that name", p.Name, p.Port, p.TargetPort.StrVal)
				}
			}

			// The list: pod i's own name, under the governing Service, at i.
			nodes := strings.Split(env["MARIADB_GALERA_NODES"].Value, ",")
			if len(nodes) != replicas {
				t.Fatalf("MARIADB_GALERA_NODES %q: %d nodes, want %d", env["MARIADB_GALERA_NODES"].Value, len(nodes), replicas)
			}
			self := env["MARIADB_GALERA_SELF"].Value
			for i, n := range nodes {
				podName := fmt.Sprintf("%s-%d", sts.Name, i)
				want := fmt.Sprintf("%s.%s.web.svc:3306", podName, svc.Name)
				if n != want {
					t.Errorf("node %d: %q, want %q (pod %d's name under the headless Service)", i, n, want, i)
				}
				if got := strings.ReplaceAll(self, "$(POD_NAME)", podName) + ":3306"; got != n {
					t.Errorf("pod %d calls itself %q, the list %q", i, got, n)
				}
			}
			// $(VAR) is expanded from variables defined before it.
			defined := map[string]bool{}
			for _, e := range c.Env {
				for _, ref := range []string{"POD_NAME", "POD_IP"} {
					if strings.Contains(e.Value, "$("+ref+")") && !defined[ref] {
						t.Errorf("%s uses $(%s) before it is defined", e.Name, ref)
					}
				}
				defined[e.Name] = true
			}
			for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_IP": "status.podIP"} {
				if r := env[name].ValueFrom; r == nil || r.FieldRef == nil || r.FieldRef.FieldPath != path {
					t.Errorf("%s is not the pod's %s", name, path)
				}
			}
			if env["MARIADB_GALERA_ADDRESS"].Value != "$(POD_IP)" || env["MARIADB_GALERA_REQUIRED"].Value != "1" {
				t.Errorf("MARIADB_GALERA_ADDRESS %q, MARIADB_GALERA_REQUIRED %q: want the pod's address, and no start alone",
					env["MARIADB_GALERA_ADDRESS"].Value, env["MARIADB_GALERA_REQUIRED"].Value)
			}
			// What the chart sets, the image reads.
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "MARIADB_") && !strings.Contains(string(entrypoint), e.Name) {
					t.Errorf("%s: mariadb/entrypoint.sh does not read it", e.Name)
				}
			}

			// The apps: the same nodes, in the same order.
			app := envOf(podSpecs(objs)["sho-shortener-app"].Spec.Containers[0])
			if got := app["SHORTENER_MYSQL_NODES"].Value; got != env["MARIADB_GALERA_NODES"].Value {
				t.Errorf("the apps' SHORTENER_MYSQL_NODES %q, the nodes' list %q: want one list", got, env["MARIADB_GALERA_NODES"].Value)
			}

			// Ready when Synced; alive through a whole copy at start.
			want := []string{"/usr/local/bin/shortener-mariadb", "ready"}
			if p := c.ReadinessProbe; p == nil || p.Exec == nil || strings.Join(p.Exec.Command, " ") != strings.Join(want, " ") {
				t.Errorf("readiness probe %+v, want %v", c.ReadinessProbe, want)
			}
			if !strings.Contains(string(dockerfile), "COPY mariadb/entrypoint.sh "+want[0]) {
				t.Errorf("the MariaDB image has no %s", want[0])
			}
			if p := c.StartupProbe; p == nil || p.PeriodSeconds*p.FailureThreshold < 3600 {
				t.Errorf("startup probe %+v: want an hour (mysql.galera.startupSeconds) for a node's first copy", p)
			}

			// Voluntary disruptions keep a majority, and may take one.
			var budget *policyv1.PodDisruptionBudget
			for _, b := range pdbs {
				if selects(b.Spec.Selector, pod.Labels) {
					if budget != nil {
						t.Errorf("PodDisruptionBudgets %s and %s both select the Galera pods", budget.Name, b.Name)
					}
					budget = b
				}
			}
			if budget == nil || budget.Spec.MinAvailable == nil {
				t.Fatalf("no PodDisruptionBudget with minAvailable selects the Galera pods: %v", budget)
			}
			if n := budget.Spec.MinAvailable.IntValue(); n != replicas/2+1 {
				t.Errorf("minAvailable %d of %d nodes, want %d: a majority, and no more, so that a drain may take one", n, replicas, replicas/2+1)
			}
			for name, p := range podSpecs(objs) {
				if name != sts.Name && selects(budget.Spec.Selector, p.Labels) {
					t.Errorf("the Galera PodDisruptionBudget also selects %s", name)
				}
			}

			// The chart's Secret: the DSN names the nodes' Service (the
			// apps dial the nodes themselves).
			if dsn := chartSecret(t, objs)["mysql-dsn"]; !strings.Contains(dsn, "@tcp("+svc.Name+":3306)/") {
				t.Errorf("mysql-dsn %q, want the address %s:3306", dsn, svc.Name)
			}
		})
	}
}

// TestChartMySQLNodes: the apps get SHORTENER_MYSQL_NODES only for a
// cluster: the chart's Galera nodes, or yours as given, in order; with
// one MySQL, none.
func TestChartMySQLNodes(t *testing.T) {
	tests := []struct {
		name string
		vals map[string]any
		want string // "" for no SHORTENER_MYSQL_NODES at all
	}{
		{"the chart's MariaDB", small, ""},
		{"your MySQL", production(t), ""},
		{"your Galera", with(production(t), yourGalera), "db-0.galera.db:3306,db-1.galera.db:3306,10.52.7.9:3307"},
		{"the chart's Galera", with(small, galeraOn),
			"sho-shortener-galera-0.sho-shortener-galera.web.svc:3306,sho-shortener-galera-1.sho-shortener-galera.web.svc:3306," +
				"sho-shortener-galera-2.sho-shortener-galera.web.svc:3306"},
	}
	for _, tt := range tests {
		objs := mustRender(t, tt.vals)
		e, ok := envOf(podSpecs(objs)["sho-shortener-app"].Spec.Containers[0])["SHORTENER_MYSQL_NODES"]
		if ok != (tt.want != "") || e.Value != tt.want {
			t.Errorf("%s: SHORTENER_MYSQL_NODES %q (set: %v), want %q", tt.name, e.Value, ok, tt.want)
		}
		if galera := hasWorkload(objs, "sho-shortener-galera"); galera != strings.Contains(tt.name, "chart's Galera") {
			t.Errorf("%s: the chart's Galera StatefulSet rendered: %v", tt.name, galera)
		}
	}
}

func hasWorkload(objs []runtime.Object, name string) bool {
	_, ok := podSpecs(objs)[name]
	return ok
}
