package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// root is the repository's root; daemon the sharddaemon built from it.
var root, daemon string

func TestMain(m *testing.M) {
	var err error
	if root, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "shardmesh-deploy-check")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir, "./cmd/sharddaemon")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sharddaemon:", err)
		os.Exit(1)
	}
	daemon = filepath.Join(dir, "sharddaemon")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// readFile reads a file of the repository.
func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// effective has sharddaemon check args, as a deployment file gives them, and returns the
// configuration they make: key → value. Every flag and value must be one the daemon
// accepts, or the test fails with the daemon's own words.
func effective(t *testing.T, what string, args []string) map[string]string {
	t.Helper()
	cmd := exec.Command(daemon, append([]string{"config", "show", "--json"}, args...)...)
	cmd.Env = []string{} // no SHARDMESH_* of the machine running the test
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: sharddaemon refuses its flags %q: %v\n%s", what, args, err, errOut.String())
	}
	var settings []struct{ Key, Value, Origin string }
	if err := json.Unmarshal(out.Bytes(), &settings); err != nil {
		t.Fatalf("%s: config show --json: %v", what, err)
	}
	m := map[string]string{}
	for _, s := range settings {
		m[s.Key] = s.Value
	}
	return m
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
