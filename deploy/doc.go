// Package deploy holds what runs the shortener outside the local stack:
// container images and a compose file for one host, a Helm chart for
// Kubernetes, a Grafana dashboard and Prometheus alert rules; its tests
// check all of it offline and, with a Docker daemon, end to end. The
// configs it ships are rendered by package render.
//
// It is a module of its own, so that Helm's and Kubernetes' libraries,
// which its tests use, stay out of the app's module.
package deploy
