package shard

// ID identifies a shard within one entity type. Shard ids are strings, as in Akka, so that
// an extractor can use meaningful ids (a building id to colocate its devices); the default
// extractors produce decimal numbers.
type ID string

// EntityID identifies an entity within one entity type.
type EntityID string
