package folio

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// integrationModules are the nested modules that carry the third-party
// integrations (docs/ARCHITECTURE.md), each with the module paths that only
// it may bring in.
var integrationModules = []struct {
	dir       string
	forbidden []string // module path prefixes
}{
	{"watermill", []string{"github.com/ThreeDotsLabs/"}},
	{"metrics/prometheus", []string{"github.com/prometheus/"}},
	{"console/browser", []string{"github.com/chromedp/"}},
	{"examples/watermillkafka", []string{"github.com/ThreeDotsLabs/watermill-kafka", "github.com/IBM/sarama", "github.com/Shopify/sarama"}},
}

// TestIntegrationsAddNoDependency: issue 16's "nothing here may add a
// dependency to an application that imports only the root package". Each
// integration is a module of its own, and the root module's graph (what
// go.mod requires, directly, indirectly, and what those modules require)
// holds none of their dependencies, nor do the packages an application
// imports (the root package and the console, which an application mounts).
func TestIntegrationsAddNoDependency(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the module graph: %v", err)
	}
	var forbidden []string
	for _, m := range integrationModules {
		if _, err := os.Stat(filepath.Join(m.dir, "go.mod")); err != nil {
			t.Errorf("%s is not a module of its own: %v", m.dir, err)
		}
		forbidden = append(forbidden, m.forbidden...)
	}
	check := func(what string, paths []string) {
		t.Helper()
		for _, p := range paths {
			for _, f := range forbidden {
				if strings.HasPrefix(p, f) {
					t.Errorf("%s holds %s: an application importing only the root package would get it", what, p)
				}
			}
		}
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(goBin, args...).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
			}
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	// go mod graph: "from@v to@v" per line.
	var graph []string
	for _, f := range strings.Fields(run("mod", "graph")) {
		path, _, _ := strings.Cut(f, "@")
		graph = append(graph, path)
	}
	if len(graph) == 0 {
		t.Fatal("go mod graph listed nothing")
	}
	check("the root module's graph", graph)
	deps := strings.Fields(run("list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".", "./console"))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed no module")
	}
	check("the root package's and the console's build", deps)
}
