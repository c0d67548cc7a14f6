// Package wire encodes shardmesh's protocol messages as protobuf frames and decodes frames
// from peers back into the state machines' message types. Decoding validates everything a
// machine relies on (identifiers present, enums in range, sizes bounded) and reports what is
// wrong, so bad remote input is rejected at the edge, counted, and never reaches a machine.
//
// The .proto files live in pb/ next to the generated code; scripts/genproto regenerates it.
package wire
