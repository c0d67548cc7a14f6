// Package shardmesh is cluster sharding for Go: stateful entities addressed by id, spread
// over a mesh of members that find each other over libp2p, moved when members come and go,
// with at most one live instance of each entity.
//
// Start a member, register entity types on it, and talk to entities through references:
//
//	sys, err := shardmesh.Start(ctx, cfg)         // cfg: config.Default() with a DataDir, or loaded
//	counters, err := shardmesh.Init(sys, shardmesh.Entity[Cmd, int]{
//		Key:          shardmesh.NewEntityTypeKey[Cmd, int]("counter"),
//		New:          func(*shardmesh.Context) shardmesh.Behavior[Cmd, int] { return &Counter{} },
//		MessageCodec: shardmesh.JSONCodec[Cmd]{},
//		ReplyCodec:   shardmesh.JSONCodec[int]{},
//	})
//	n, err := counters.EntityRefFor("user-42").Ask(ctx, Cmd{Op: "inc"})
//
// An entity handles one message at a time; an idle entity costs no goroutine. Messages cross
// to other members in the entity type's codecs, so the same code runs whether an entity lives
// here or elsewhere. Names, semantics and configuration keys follow Akka/Pekko Cluster
// Sharding (see the README).
package shardmesh
