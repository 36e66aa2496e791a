package deploy

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestChartSecurityContexts: every pod runs as a fixed non-root user, the
// one its image is built with, under the runtime's seccomp profile; every
// container has a read-only root filesystem, no way to gain privileges,
// no capabilities, and a writable emptyDir for /tmp; nginx listens on an
// unprivileged port behind the Service's.
func TestChartSecurityContexts(t *testing.T) {
	// The numeric USER of each image (deploy/*/Dockerfile), by image value.
	users := map[string]int64{}
	for image, dockerfile := range map[string]string{"app": "Dockerfile", "nginx": "nginx/Dockerfile",
		"redis": "redis/Dockerfile", "mariadb": "mariadb/Dockerfile"} {
		users[image] = imageUser(t, dockerfile)
	}
	imageOf := func(c corev1.Container) string {
		for _, name := range []string{"nginx", "redis", "mariadb"} {
			if strings.HasPrefix(c.Image, "shortener/"+name+":") {
				return name
			}
		}
		return "app"
	}
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			objs := mustRender(t, vals)
			pods := podSpecs(objs)
			if len(pods) == 0 {
				t.Fatal("no workloads")
			}
			for wl, pod := range pods {
				spec := pod.Spec
				psc := spec.SecurityContext
				if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
					psc.RunAsGroup == nil || *psc.RunAsGroup == 0 || psc.FSGroup == nil || *psc.FSGroup != *psc.RunAsGroup {
					t.Errorf("%s: pod securityContext %+v, want runAsNonRoot and a numeric non-root runAsUser, runAsGroup and fsGroup", wl, psc)
					continue
				}
				if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: pod seccompProfile %+v, want RuntimeDefault", wl, psc.SeccompProfile)
				}
				emptyDirs := map[string]bool{}
				for _, v := range spec.Volumes {
					if v.EmptyDir != nil {
						emptyDirs[v.Name] = true
					}
				}
				if len(spec.InitContainers) > 0 {
					t.Errorf("%s: init containers, which this test does not check", wl)
				}
				for _, c := range spec.Containers {
					if want := users[imageOf(c)]; *psc.RunAsUser != want || *psc.RunAsGroup != want {
						t.Errorf("%s/%s: runs as %d:%d, but image %s is built for %d (its Dockerfile's USER)",
							wl, c.Name, *psc.RunAsUser, *psc.RunAsGroup, c.Image, want)
					}
					sc := c.SecurityContext
					switch {
					case sc == nil:
						t.Errorf("%s/%s: no securityContext", wl, c.Name)
						continue
					case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
						t.Errorf("%s/%s: runAsNonRoot not set", wl, c.Name)
					case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
						t.Errorf("%s/%s: root filesystem is writable", wl, c.Name)
					case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
						t.Errorf("%s/%s: allowPrivilegeEscalation is not false", wl, c.Name)
					case sc.Privileged != nil && *sc.Privileged:
						t.Errorf("%s/%s: privileged", wl, c.Name)
					case sc.Capabilities == nil || len(sc.Capabilities.Add) > 0 || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL":
						t.Errorf("%s/%s: capabilities %+v, want drop [ALL] and none added", wl, c.Name, sc.Capabilities)
					case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
						t.Errorf("%s/%s: seccompProfile %+v, want RuntimeDefault", wl, c.Name, sc.SeccompProfile)
					case sc.RunAsUser != nil && *sc.RunAsUser != *psc.RunAsUser:
						t.Errorf("%s/%s: runAsUser %d overrides the pod's", wl, c.Name, *sc.RunAsUser)
					}
					// With a read-only root, every writer needs a volume: all
					// of them write temporary files.
					tmp := false
					for _, m := range c.VolumeMounts {
						if m.MountPath == "/tmp" && emptyDirs[m.Name] && !m.ReadOnly {
							tmp = true
						}
					}
					if !tmp {
						t.Errorf("%s/%s: no writable emptyDir on /tmp", wl, c.Name)
					}
					for _, p := range c.Ports {
						if p.ContainerPort < 1024 {
							t.Errorf("%s/%s: port %d is privileged; the container has no capabilities", wl, c.Name, p.ContainerPort)
						}
					}
				}
			}
			// nginx's config listens where its container port says, and
			// the Service still answers on its own port.
			if conf := configMap(objs, "sho-shortener-nginx")["nginx.conf"]; conf != "" {
				m := regexp.MustCompile(`listen 0\.0\.0\.0:(\d+)`).FindStringSubmatch(conf)
				nginx := pods["sho-shortener-nginx"].Spec.Containers[0]
				if m == nil || len(nginx.Ports) == 0 || m[1] != strconv.Itoa(int(nginx.Ports[0].ContainerPort)) {
					t.Errorf("nginx listens on %v, its container port is %+v", m, nginx.Ports)
				}
			}
			for _, o := range objs {
				if s, ok := o.(*corev1.Service); ok && s.Name == "sho-shortener" && s.Spec.Ports[0].Port != 80 {
					t.Errorf("the front Service is on port %d, want 80", s.Spec.Ports[0].Port)
				}
			}
		})
	}
}

// imageUser is the numeric user a Dockerfile's last USER line names: an
// image whose user is a name would run as whatever UID its package got.
func imageUser(tb testing.TB, dockerfile string) int64 {
	tb.Helper()
	f, err := os.Open(dockerfile)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	user := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "USER "); ok {
			user = strings.TrimSpace(rest)
		}
	}
	uid, gid, _ := strings.Cut(user, ":")
	n, err := strconv.ParseInt(uid, 10, 64)
	if err != nil || n == 0 || (gid != "" && gid != uid) {
		tb.Fatalf("%s: USER %q, want a numeric non-root uid:gid (the same number)", dockerfile, user)
	}
	return n
}
