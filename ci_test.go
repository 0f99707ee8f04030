package folio

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeAndCIRunTheSameTests: the test command the README gives a
// newcomer is the one .ci/run runs, flags (-timeout) included.
func TestReadmeAndCIRunTheSameTests(t *testing.T) {
	commands := func(file string) []string {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for line := range strings.Lines(string(b)) {
			cmd, _, _ := strings.Cut(line, "#")
			if cmd = strings.Join(strings.Fields(cmd), " "); strings.HasPrefix(cmd, "go test ") {
				out = append(out, cmd)
			}
		}
		return out
	}
	readme, ci := commands("README.md"), commands(".ci/run")
	if len(ci) != 1 || len(readme) == 0 || readme[0] != ci[0] || !strings.Contains(ci[0], "-timeout") {
		t.Fatalf("README.md's first test command %q, .ci/run's %q: want one and the same, with a -timeout", readme, ci)
	}
}
