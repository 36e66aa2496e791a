package handler

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPICoversRoutes fails when a served route is missing from
// openapi.json or a documented one is not served, and checks that every
// error code the handler can send is listed.
func TestOpenAPICoversRoutes(t *testing.T) {
	var spec struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Error struct {
							Properties struct {
								Code struct {
									Enum []string `json:"enum"`
								} `json:"code"`
							} `json:"properties"`
						} `json:"error"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &spec); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	documented := map[string]bool{}
	for path, ops := range spec.Paths {
		for method := range ops {
			if method != "parameters" {
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	h := mustNew(Config{AnonymousCreate: true, CreateRate: 1, CreateBurst: 1, Pages: true}, Deps{Metrics: http.NotFoundHandler(), Log: discardLogger()})
	param := regexp.MustCompile(`:([a-z]+)`)
	served := map[string]bool{}
	for _, r := range h.e.Routes() {
		served[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	// Every route Echo serves is in the table, and the table's API
	// routes are what openapi.json documents.
	table := map[string]bool{}
	for _, r := range h.routes() {
		name := r.method + " " + param.ReplaceAllString(r.path, "{$1}")
		if !served[name] {
			t.Errorf("route %s is in the table but not served", name)
		}
		table[name] = true
		if r.kind != kindAPI {
			continue
		}
		if !documented[name] {
			t.Errorf("route %s is served but not in openapi.json", name)
		}
		delete(documented, name)
	}
	for r := range documented {
		t.Errorf("route %s is in openapi.json but not served", r)
	}
	for r := range served {
		if !table[r] {
			t.Errorf("route %s is served but not in the route table", r)
		}
	}
	codes := spec.Components.Schemas.Error.Properties.Error.Properties.Code.Enum
	for c := range statusOf {
		if !slices.Contains(codes, c) {
			t.Errorf("error code %s is not listed in openapi.json", c)
		}
	}
	for _, c := range codes {
		if _, ok := statusOf[c]; !ok {
			t.Errorf("openapi.json lists error code %s, which the handler never sends", c)
		}
	}
}
