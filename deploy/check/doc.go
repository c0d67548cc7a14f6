// Package check validates the deployment files in deploy/ and the Dockerfile offline: the
// Kubernetes manifests decoded strictly into the k8s.io/api types, the compose file against
// the Compose specification's schema (compose-go), the Dockerfile parsed and linted by
// BuildKit's own parser and linter, and the systemd unit with systemd-analyze verify. Every
// flag the files give sharddaemon is checked by the daemon itself (sharddaemon config show).
//
// It is a module of its own so that the Kubernetes, Compose and BuildKit packages stay out of
// shardmesh's module graph. scripts/test runs it.
package check
