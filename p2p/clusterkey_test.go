package p2p

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/pnet"
)

func TestNewClusterKeyFormat(t *testing.T) {
	a, b := NewClusterKey(), NewClusterKey()
	if bytes.Equal(a, b) {
		t.Fatal("two fresh cluster keys are equal")
	}
	lines := strings.Split(string(a), "\n")
	if len(lines) != 4 || lines[0] != "/key/swarm/psk/1.0.0/" || lines[1] != "/base16/" || len(lines[2]) != 64 || lines[3] != "" {
		t.Fatalf("not the swarm.key format: %q", a)
	}
	// libp2p's own decoder reads it to the same key.
	theirs, err := pnet.DecodeV1PSK(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := parseClusterKey(a)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(theirs, ours) {
		t.Fatal("our parser and libp2p's disagree")
	}
}

func TestWriteAndLoadClusterKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "swarm.key")
	if err := WriteClusterKey(path); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("mode %04o, want 0600", perm)
	}
	content, _ := os.ReadFile(path)
	key, err := LoadClusterKey(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := pnet.DecodeV1PSK(bytes.NewReader(content))
	if !bytes.Equal(key, want) {
		t.Fatal("loaded key differs from the file's")
	}

	err = WriteClusterKey(path)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: got %v, want fs.ErrExist", err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, content) {
		t.Fatal("an existing key was overwritten")
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadClusterKey(path); !errors.Is(err, ErrInsecureKeyFile) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable key: got %v, want ErrInsecureKeyFile with the fix", err)
	}
}

// TestLoadClusterKeyRootOwnedGroupReadable: a key owned by root may be readable by its
// group (a Kubernetes Secret with fsGroup: root, group fsGroup, 0440); owned by anyone
// else, or readable by others, it is refused.
func TestLoadClusterKeyRootOwnedGroupReadable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test chowns the key file")
	}
	path := filepath.Join(t.TempDir(), "cluster.key")
	if err := WriteClusterKey(path); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		uid  int
		mode os.FileMode
		ok   bool
	}{
		{0, 0o440, true}, {0, 0o640, true}, {0, 0o400, true},
		{0, 0o460, false}, {0, 0o444, false}, {0, 0o404, false},
		{65532, 0o440, false}, {65532, 0o600, true},
	} {
		if err := os.Chown(path, tt.uid, 65532); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tt.mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadClusterKey(path)
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInsecureKeyFile)) {
			t.Errorf("owner %d mode %04o: %v, want ok=%v", tt.uid, tt.mode, err, tt.ok)
		}
	}
	// An identity is this member's alone: never group-readable, whoever owns it.
	id := filepath.Join(t.TempDir(), "identity.key")
	if _, err := LoadOrCreateIdentity(id); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(id, 0o440); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateIdentity(id); !errors.Is(err, ErrInsecureKeyFile) {
		t.Errorf("a root-owned identity readable by its group: %v, want ErrInsecureKeyFile", err)
	}
}

func TestLoadClusterKeyOtherEncodings(t *testing.T) {
	raw := bytes.Repeat([]byte{0xab}, 32)
	for name, content := range map[string]string{
		"base64": "/key/swarm/psk/1.0.0/\n/base64/\n" + base64.StdEncoding.EncodeToString(raw) + "\n",
		"bin":    "/key/swarm/psk/1.0.0/\n/bin/\n" + string(raw),
		"crlf":   "/key/swarm/psk/1.0.0/\r\n/base16/\r\n" + strings.Repeat("ab", 32) + "\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "swarm.key")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			key, err := LoadClusterKey(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(key, raw) {
				t.Fatalf("got %x", key)
			}
		})
	}
}

func TestLoadClusterKeyBadFile(t *testing.T) {
	hex64 := strings.Repeat("0f", 32)
	tests := map[string]string{
		"empty":            "",
		"no header":        hex64 + "\n",
		"wrong header":     "/key/swarm/psk/2.0.0/\n/base16/\n" + hex64 + "\n",
		"no encoding line": "/key/swarm/psk/1.0.0/\n",
		"unknown encoding": "/key/swarm/psk/1.0.0/\n/base32/\n" + hex64 + "\n",
		"short key":        "/key/swarm/psk/1.0.0/\n/base16/\n" + hex64[:62] + "\n",
		"long key":         "/key/swarm/psk/1.0.0/\n/base16/\n" + hex64 + "00\n",
		"not hex":          "/key/swarm/psk/1.0.0/\n/base16/\n" + strings.Repeat("zz", 32) + "\n",
		"two keys":         "/key/swarm/psk/1.0.0/\n/base16/\n" + hex64 + "\n" + hex64 + "\n",
		"bad base64":       "/key/swarm/psk/1.0.0/\n/base64/\n!!!\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "swarm.key")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadClusterKey(path)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want an error naming the file", err)
			}
		})
	}
	if _, err := LoadClusterKey(filepath.Join(t.TempDir(), "missing.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: got %v, want fs.ErrNotExist", err)
	}
}
