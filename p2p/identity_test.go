package p2p

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

func TestLoadOrCreateIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node", "identity.key")
	created, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if created.Type() != crypto.Ed25519 {
		t.Fatalf("created a %s key, want Ed25519", created.Type())
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("identity file mode %04o, want 0600", perm)
	}
	if dirInfo, err := os.Stat(filepath.Dir(path)); err != nil || dirInfo.Mode().Perm() != 0o700 {
		t.Fatalf("parent directory: %v, mode %04o, want 0700", err, dirInfo.Mode().Perm())
	}
	reloaded, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if !created.Equals(reloaded) {
		t.Fatal("reloading returned a different key")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the key (no temporary files left)", len(entries))
	}
}

func TestLoadOrCreateIdentityConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.key")
	keys := make([]crypto.PrivKey, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			key, err := LoadOrCreateIdentity(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = key
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k == nil || !k.Equals(keys[0]) {
			t.Fatal("concurrent creators ended with different keys")
		}
	}
}

func TestLoadOrCreateIdentityRefusesGroupReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.key")
	if _, err := LoadOrCreateIdentity(path); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreateIdentity(path)
		if !errors.Is(err, ErrInsecureKeyFile) {
			t.Fatalf("mode %04o: got %v, want ErrInsecureKeyFile", mode, err)
		}
		if !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Fatalf("mode %04o: error %q does not say how to fix it", mode, err)
		}
	}
}

func TestLoadOrCreateIdentityBadContent(t *testing.T) {
	ecdsaKey, _, err := crypto.GenerateECDSAKeyPair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecdsaBytes, err := crypto.MarshalPrivateKey(ecdsaKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"garbage":   []byte("not a key"),
		"empty":     {},
		"ecdsa key": ecdsaBytes,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "identity.key")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadOrCreateIdentity(path)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want an error naming %s", err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != string(content) {
				t.Fatal("a bad identity file was overwritten")
			}
		})
	}
}
