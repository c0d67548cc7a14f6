package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/shardmesh/shardmesh"

// notInShardctl are the packages shardctl and the dashboard must not link, with everything
// under them: the runtime (node, engine), the store (remember, and datatool, which opens
// stores), and Badger (Dgraph's modules). The root package, which starts the runtime, is
// out too. The offline data commands that need the store run in sharddaemon (data.go).
var notInShardctl = []string{
	module + "/node", module + "/engine", module + "/remember", module + "/datatool", "github.com/dgraph-io",
}

// forbidden reports whether shardctl must not link package path.
func forbidden(path string) bool {
	return path == module || slices.ContainsFunc(notInShardctl, func(f string) bool {
		return path == f || strings.HasPrefix(path, f+"/")
	})
}

// linked runs go list -deps on patterns (relative to this directory) and returns how many
// packages they link and, for every forbidden package linked, the shortest chain of imports
// that links it: first are the chains on which it is the only forbidden package (what to
// mend), then the others.
func linked(t *testing.T, patterns ...string) (count int, chains []string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to list shardctl's dependencies: %v", err)
	}
	roots, err := exec.Command(goTool, append([]string{"list"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", patterns, err)
	}
	out, err := exec.Command(goTool, append([]string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", patterns, err)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
		count++
	}
	// Breadth first from the roots: the shortest chain to each package.
	from := map[string]string{}
	queue := strings.Fields(string(roots))
	for _, r := range queue {
		from[r] = ""
	}
	var under []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if forbidden(p) {
			chain := []string{p}
			first := true
			for q := from[p]; q != ""; q = from[q] {
				chain = append(chain, q)
				first = first && !forbidden(q)
			}
			slices.Reverse(chain)
			if first {
				chains = append(chains, strings.Join(chain, " → "))
			} else {
				under = append(under, strings.Join(chain, " → "))
			}
		}
		for _, imp := range imports[p] {
			if _, seen := from[imp]; !seen {
				from[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return count, append(chains, under...)
}

// TestShardctlLinksNoRuntime: go list -deps of shardctl and of the dashboard names neither
// node, engine, remember, datatool nor Badger; the test names the chain of imports of any
// that comes back.
func TestShardctlLinksNoRuntime(t *testing.T) {
	for _, patterns := range [][]string{{"./..."}, {"../../tui/..."}} {
		count, chains := linked(t, patterns...)
		for i, c := range chains {
			if i == 5 {
				t.Errorf("… and %d more", len(chains)-i)
				break
			}
			t.Errorf("go list -deps %s links %s", patterns[0], c)
		}
		t.Logf("go list -deps %s: %d packages", patterns[0], count)
	}
}

// TestDepsCheckFindsTheStore: the same check run on sharddaemon, which links the store,
// finds Badger: a pass above is not a check that cannot fail.
func TestDepsCheckFindsTheStore(t *testing.T) {
	_, chains := linked(t, "../sharddaemon")
	if !slices.ContainsFunc(chains, func(c string) bool { return strings.Contains(c, "github.com/dgraph-io/badger") }) {
		t.Fatalf("the check did not find Badger in sharddaemon: %q", chains)
	}
}
