// Package nexmark is the Nexmark benchmark's event generator as a weir
// source: people, auctions and bids in the proportions 1:3:46, every
// event a pure function of its number, so any subtask can produce any
// event and the stream replays and rescales exactly.
//
// Owns: the generator, its source and its CSV export. Must not touch:
// the runtime (the source is a weir.Source like any user's).
package nexmark
