package check

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseBuild runs scripts/release for this machine's architecture — the same script
// the Dockerfile's build stage runs — and checks what it promises: static binaries stamped
// with the version, packed with LICENSE, the man pages and the completion scripts, with
// SHA256SUMS that match. A cold static build takes minutes on two cores, so -short skips it.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("a cold static build takes minutes: run without -short")
	}
	const version = "v9.9.9-check"
	out := t.TempDir()
	platform := "linux/" + runtime.GOARCH
	cmd := exec.Command(filepath.Join(root, "scripts/release"), "-v", version, "-o", out, platform)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, b)
	}
	name := "shardmesh_" + version + "_linux_" + runtime.GOARCH
	archive := filepath.Join(out, name+".tar.gz")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]) + "  " + name + ".tar.gz\n"; string(sums) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant\n%s", sums, want)
	}
	files := archiveFiles(t, data)
	for _, f := range []string{"sharddaemon", "shardctl", "LICENSE", "README.md", "docs/operations.md",
		"deploy/kubernetes/shardmesh.yaml", "deploy/systemd/shardmesh.service", "deploy/compose/compose.yaml",
		"man/man1/shardctl.1", "man/man1/shardctl-shard-move.1", "man/man1/sharddaemon.1", "man/man1/sharddaemon-config-check.1",
		"completions/shardctl.bash", "completions/shardctl.zsh", "completions/shardctl.fish",
		"completions/sharddaemon.bash", "completions/sharddaemon.zsh", "completions/sharddaemon.fish"} {
		if _, ok := files[name+"/"+f]; !ok {
			t.Errorf("the archive has no %s", f)
		}
	}
	// The pages are the release's: stamped with its version, as the binaries are.
	for f, b := range files {
		if strings.HasPrefix(f, name+"/man/man1/") && strings.HasSuffix(f, ".1") && !bytes.Contains(b, []byte(`"shardmesh `+strings.ReplaceAll(version, "-", `\-`)+`"`)) {
			t.Errorf("%s does not name the version %s:\n%.300s", f, version, b)
		}
	}
	for f := range files {
		if strings.Contains(f, "deploy/check") {
			t.Errorf("the archive holds the repository's checks: %s", f)
		}
	}
	for _, bin := range []string{"sharddaemon", "shardctl"} {
		path := filepath.Join(out, name, bin)
		checkStatic(t, path)
		info, err := exec.Command("go", "version", "-m", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(info), "CGO_ENABLED=0") || !strings.Contains(string(info), "-trimpath=true") {
			t.Errorf("%s was not built static with -trimpath:\n%s", bin, info)
		}
		// -trimpath keeps -ldflags out of the build information, so the stamp is looked
		// for in the binary: the version string is in no source file, only in the -X (both
		// binaries use internal/version, through their version command).
		if !bytes.Contains(files[name+"/"+bin], []byte(version)) {
			t.Errorf("%s does not hold the version string %s: not stamped", bin, version)
		}
		checkVersionOutput(t, path, version)
	}
}

// checkStatic fails unless path is an ELF executable with no interpreter and no shared
// libraries: it runs on any Linux of its architecture, in an image without libc.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a dynamic loader: not static", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v: not static", path, libs)
	}
}

// checkVersionOutput runs the binary's version command and --version, and wants the stamp
// in their output.
func checkVersionOutput(t *testing.T, path, version string) {
	t.Helper()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(path, args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s %s: %v: %s", filepath.Base(path), args[0], err, out)
			continue
		}
		if !strings.Contains(string(out), version) {
			t.Errorf("%s %s: %q, want the stamp %s", filepath.Base(path), args[0], out, version)
		}
	}
}

func archiveFiles(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d in the archive, want 0:0", h.Name, h.Uid, h.Gid)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
}
