package p2p

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// LoadOrCreateIdentity returns the Ed25519 private key kept in the file at path, creating
// the file (mode 0600, parent directories 0700) with a fresh key if it does not exist.
// The file holds the key in libp2p's protobuf encoding (crypto.MarshalPrivateKey), which
// other libp2p tools read too.
//
// It refuses a file that group or others can access, with an error wrapping
// ErrInsecureKeyFile that says how to fix it, and a file holding a key of another type.
func LoadOrCreateIdentity(path string) (crypto.PrivKey, error) {
	key, err := LoadIdentity(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key, err = CreateIdentity(path)
	if errors.Is(err, fs.ErrExist) {
		return LoadIdentity(path) // another process created it first: use theirs
	}
	return key, err
}

// CreateIdentity writes a fresh Ed25519 key to a new file at path (mode 0600) and returns
// it; it never overwrites: an existing file is an error wrapping fs.ErrExist.
func CreateIdentity(path string) (crypto.PrivKey, error) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate identity: %w", err)
	}
	data, err := crypto.MarshalPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode identity: %w", err)
	}
	if err := createKeyFile(path, data); err != nil {
		return nil, fmt.Errorf("create identity file %s: %w", path, err)
	}
	return key, nil
}

// LoadIdentity reads the Ed25519 key kept in the file at path, refusing a file that group or
// others can access.
func LoadIdentity(path string) (crypto.PrivKey, error) {
	data, err := readKeyFile(path, "identity", false)
	if err != nil {
		return nil, err
	}
	key, err := crypto.UnmarshalPrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("identity file %s does not hold a libp2p private key: %w", path, err)
	}
	if key.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("identity file %s holds a %s key; shardmesh identities are Ed25519", path, key.Type())
	}
	return key, nil
}
