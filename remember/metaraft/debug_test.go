package metaraft

import (
	"log"
	"os"

	"go.etcd.io/raft/v3"
)

func init() {
	if os.Getenv("METARAFT_DEBUG") != "" {
		logger = &raft.DefaultLogger{Logger: log.New(os.Stderr, "raft ", 0)}
	}
}
