package p2p

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/libp2p/go-libp2p/core/pnet"
)

// clusterKeyHeader is the first line of the standard libp2p swarm.key format.
const clusterKeyHeader = "/key/swarm/psk/1.0.0/"

// clusterKeySize is the size of a libp2p pre-shared key in bytes.
const clusterKeySize = 32

// NewClusterKey returns the content of a fresh cluster key file: a random 32-byte
// libp2p pre-shared key in the standard swarm.key text format
// ("/key/swarm/psk/1.0.0/\n/base16/\n<64 hex digits>\n").
func NewClusterKey() []byte {
	key := make([]byte, clusterKeySize)
	_, _ = rand.Read(key) // never fails: crypto/rand aborts the program instead
	out := []byte(clusterKeyHeader + "\n/base16/\n")
	out = hex.AppendEncode(out, key)
	return append(out, '\n')
}

// WriteClusterKey writes a fresh cluster key (NewClusterKey) to a new file at path with
// mode 0600. It refuses to overwrite an existing file (the error wraps fs.ErrExist):
// replacing the key of a running cluster locks every member out.
func WriteClusterKey(path string) error {
	if err := createKeyFile(path, NewClusterKey()); err != nil {
		return fmt.Errorf("write cluster key %s: %w", path, err)
	}
	return nil
}

// LoadClusterKey reads the cluster key file at path. It accepts the swarm.key format with
// the /base16/ encoding (what WriteClusterKey writes) and also /base64/ and /bin/, as
// written by other libp2p tools. It refuses a file that group or others can access
// (ErrInsecureKeyFile), except a file owned by root that its group may read (a Kubernetes
// Secret mounted for a non-root container: root, group fsGroup, 0440), and names the file
// and the problem for any bad content.
func LoadClusterKey(path string) (pnet.PSK, error) {
	data, err := readKeyFile(path, "cluster key", true)
	if err != nil {
		return nil, err
	}
	key, err := parseClusterKey(data)
	if err != nil {
		return nil, keyFileError{fmt.Errorf("cluster key file %s: %w (expected %q, then /base16/, then 64 hex digits; create one with: shardctl keygen --out FILE)",
			path, err, clusterKeyHeader)}
	}
	return key, nil
}

func parseClusterKey(data []byte) (pnet.PSK, error) {
	header, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(bytes.TrimRight(header, "\r")) != clusterKeyHeader {
		return nil, fmt.Errorf("first line is not %q", clusterKeyHeader)
	}
	encoding, body, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, fmt.Errorf("no encoding line after the header")
	}
	var key []byte
	switch enc := string(bytes.TrimRight(encoding, "\r")); enc {
	case "/base16/":
		text := bytes.TrimSpace(body)
		if len(text) != hex.EncodedLen(clusterKeySize) {
			return nil, fmt.Errorf("key is %d hex digits, want %d", len(text), hex.EncodedLen(clusterKeySize))
		}
		key = make([]byte, clusterKeySize)
		if _, err := hex.Decode(key, text); err != nil {
			return nil, fmt.Errorf("key is not hexadecimal: %w", err)
		}
	case "/base64/":
		decoded, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(body)))
		if err != nil {
			return nil, fmt.Errorf("key is not base64: %w", err)
		}
		key = decoded
	case "/bin/":
		key = body
	default:
		return nil, fmt.Errorf("unknown encoding %q", enc)
	}
	if len(key) != clusterKeySize {
		return nil, fmt.Errorf("key is %d bytes, want %d", len(key), clusterKeySize)
	}
	return pnet.PSK(key), nil
}
