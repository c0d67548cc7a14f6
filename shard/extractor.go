package shard

import (
	"fmt"
	"math"
	"strconv"
)

// Extractor maps an entity id to the id of the shard it lives in. It must be a pure function
// that gives the same answer on every member for the cluster's lifetime, or an entity could
// run in two shards at once.
type Extractor interface {
	// ShardID returns the shard of entity id.
	ShardID(id EntityID) ID
	// NumberOfShards returns the number of shards the extractor spreads entities over, or 0
	// when it is not bounded by a number (a custom extractor). Members of one cluster must
	// agree on it; it is checked when a member joins.
	NumberOfShards() int
}

// IDChecker is implemented by extractors that know every shard id they can produce, so
// that a shard an operator names (a pin) can be checked before it is stored.
type IDChecker interface {
	// CheckShard returns an error naming the valid ids when id is not one of them.
	CheckShard(id ID) error
}

// CheckShard accepts only the shard ids ShardID can return: 0 to n-1, and the one negative
// id of an entity whose hash code is MinInt32 (see HashCodeExtractor).
func (e *HashCodeExtractor) CheckShard(id ID) error {
	if v, err := strconv.ParseInt(string(id), 10, 32); err == nil && strconv.FormatInt(v, 10) == string(id) &&
		(v >= 0 && v < int64(e.n) || int32(v) == math.MinInt32%e.n) {
		return nil
	}
	return fmt.Errorf("shard %q: not a shard of this type, whose shards are 0 to %d (number-of-shards %d)", id, e.n-1, e.n)
}

// CheckShard accepts only the shard ids ShardID can return: 1 to n.
func (e *ShardcakeExtractor) CheckShard(id ID) error {
	if v, err := strconv.ParseInt(string(id), 10, 32); err == nil && strconv.FormatInt(v, 10) == string(id) && v >= 1 && v <= int64(e.n) {
		return nil
	}
	return fmt.Errorf("shard %q: not a shard of this type, whose shards are 1 to %d (number-of-shards %d, Shardcake's numbering)", id, e.n, e.n)
}

// ExtractorFunc adapts a function to an unbounded custom Extractor.
type ExtractorFunc func(id EntityID) ID

// ShardID calls f.
func (f ExtractorFunc) ShardID(id EntityID) ID { return f(id) }

// NumberOfShards is 0: a custom function is not bounded by a shard count.
func (ExtractorFunc) NumberOfShards() int { return 0 }

// JavaStringHashCode returns Java's String.hashCode of s: h = 31*h + c over the UTF-16 code
// units of s, with int32 overflow. Invalid UTF-8 bytes count as U+FFFD, as Java's decoder
// would produce.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// javaAbs is Java's Math.abs for int: it leaves math.MinInt32 negative.
func javaAbs(h int32) int32 {
	if h < 0 {
		return -h // -MinInt32 overflows back to MinInt32, as in Java
	}
	return h
}

// HashCodeExtractor is byte-identical to Akka's HashCodeMessageExtractor:
// shard = (Math.abs(entityId.hashCode) % numberOfShards).toString. Because Java's Math.abs
// leaves Integer.MIN_VALUE negative, an entity whose hash code is MIN_VALUE lands in a
// negative shard id, exactly as it does in Akka.
type HashCodeExtractor struct {
	n     int32
	names []ID // precomputed decimal ids 0..n-1: no allocation per message
}

// NewHashCodeExtractor returns Akka's default extractor over numberOfShards shards.
func NewHashCodeExtractor(numberOfShards int) (*HashCodeExtractor, error) {
	if numberOfShards < 1 || numberOfShards > 1<<20 {
		return nil, fmt.Errorf("number-of-shards = %d: must be between 1 and %d", numberOfShards, 1<<20)
	}
	return &HashCodeExtractor{n: int32(numberOfShards), names: decimalIDs(numberOfShards, 0)}, nil
}

// ShardID returns abs(hashCode(id)) % n with Java's semantics.
func (e *HashCodeExtractor) ShardID(id EntityID) ID {
	s := javaAbs(JavaStringHashCode(string(id))) % e.n
	if s < 0 { // only for hash code MinInt32
		return ID(strconv.Itoa(int(s)))
	}
	return e.names[s]
}

// NumberOfShards returns n.
func (e *HashCodeExtractor) NumberOfShards() int { return int(e.n) }

// ShardcakeExtractor follows Shardcake: shard = abs(hashCode % n) + 1, a number from 1 to n.
type ShardcakeExtractor struct {
	n     int32
	names []ID // "1".."n"
}

// NewShardcakeExtractor returns Shardcake's extractor over numberOfShards shards.
func NewShardcakeExtractor(numberOfShards int) (*ShardcakeExtractor, error) {
	if numberOfShards < 1 || numberOfShards > 1<<20 {
		return nil, fmt.Errorf("number-of-shards = %d: must be between 1 and %d", numberOfShards, 1<<20)
	}
	return &ShardcakeExtractor{n: int32(numberOfShards), names: decimalIDs(numberOfShards, 1)}, nil
}

// ShardID returns abs(hashCode(id) % n) + 1.
func (e *ShardcakeExtractor) ShardID(id EntityID) ID {
	return e.names[javaAbs(JavaStringHashCode(string(id))%e.n)]
}

// NumberOfShards returns n.
func (e *ShardcakeExtractor) NumberOfShards() int { return int(e.n) }

func decimalIDs(n, first int) []ID {
	ids := make([]ID, n)
	for i := range ids {
		ids[i] = ID(strconv.Itoa(i + first))
	}
	return ids
}
