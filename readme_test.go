package folio

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goBlocks returns the ```go blocks of a Markdown text, with the line each
// starts on.
func goBlocks(text string) (blocks []string, lines []int, err error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	var cur *strings.Builder
	start := 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur, start = &strings.Builder{}, n
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks, lines = append(blocks, cur.String()), append(lines, start)
			cur = nil
		case cur != nil:
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	if cur != nil {
		return nil, nil, fmt.Errorf("the go block at line %d is not closed", start)
	}
	return blocks, lines, sc.Err()
}

// TestREADMECompiles builds every ```go block of README.md as a program of
// its own, in a module of its own that requires this checkout (a replace
// directive), the way a reader who copies it would. A snippet that stops
// compiling fails the test with the compiler's message and the README line.
func TestREADMECompiles(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, lines, err := goBlocks(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no go block")
	}
	checkout, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goSum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	// The snippets' module requires what this module requires, so the
	// build needs nothing beyond the module cache this checkout built from.
	var require bytes.Buffer
	inBlock := false
	for _, l := range strings.Split(string(goMod), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "require (":
			inBlock = true
		case inBlock && l == ")":
			inBlock = false
		case inBlock && l != "":
			fmt.Fprintf(&require, "require %s\n", l)
		case strings.HasPrefix(l, "require "):
			fmt.Fprintln(&require, l)
		}
	}
	mod := t.TempDir()
	modFile := fmt.Sprintf("module readme.example\n\ngo 1.26\n\nrequire github.com/foliolog/folio v0.0.0\n%s\nreplace github.com/foliolog/folio => %s\n", require.String(), checkout)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(modFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), goSum, 0o644); err != nil {
		t.Fatal(err)
	}
	type snippet struct {
		pkg  string
		line int
	}
	var pkgs []snippet
	for i, b := range blocks {
		if !strings.HasPrefix(b, "package main\n") {
			t.Errorf("README.md:%d: the go block is not a complete program (package main)", lines[i])
			continue
		}
		dir := filepath.Join(mod, fmt.Sprintf("snippet%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, snippet{"./" + filepath.Base(dir), lines[i]})
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range pkgs {
		cmd := exec.Command(goTool, "vet", sn.pkg) // vet type-checks fully and writes no binary
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README.md:%d: the go block does not build: %v\n%s", sn.line, err, out)
		}
	}
}
