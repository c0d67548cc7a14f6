// Package config loads the daemon's configuration: one YAML or TOML file whose keys follow
// Akka/Pekko's reference.conf (cluster.* for akka.cluster, sharding.* for
// akka.cluster.sharding), over the defaults, overridden by SHARDMESH_* environment variables
// and command-line flags.
//
// Every key is declared once in the schema (schema.go) with its type, range and help. The
// schema drives reading the file, the environment variables (SHARDMESH_ and the key in upper
// case with dots and dashes as underscores), the generic --set key=value flag, and error
// messages: an unknown key (with the closest known one suggested) or a bad value stops the
// start with an error naming the key, the value, where it came from, and what is allowed.
//
// urfave/cli's altsrc was considered for this and not used: it ignores unknown and misspelt
// keys silently and reports bad values without the key's path, the two mistakes operators
// make most.
package config
