// Package nexmark is the Nexmark benchmark's event generator as a weir
// source: people, auctions and bids in the proportions 1:3:46, every
// event a pure function of its number, so any subtask can produce any
// event and the stream replays and rescales exactly.
//
// # Faithful to nexmark/nexmark
//
// The generator follows nexmark-flink's NexmarkGenerator, GeneratorConfig
// and generator/model with Flink's benchmark defaults (DefaultConfig), run
// as one logical generator (numEventGenerators 1, outOfOrderGroupSize 1,
// firstEventId 0), so that the event id is the event number n:
//
//   - Mix: n mod 50 < 1 is a person, < 4 an auction, else a bid.
//   - Ids: person n has id lastBase0PersonId(n) + 1000, auction n
//     lastBase0AuctionId(n) + 1000 (consecutive over the auction events).
//     A cold seller or bidder is one of the 1000 latest people or up to 10
//     beyond the last; a cold bid's auction one of the 101 latest auctions
//     or up to 10 beyond. Hot: an auction's seller is the first person of
//     the latest batch of 100 with probability 3/4, a bid's auction the
//     first of the latest batch of 100 auctions with probability 1/2, its
//     bidder the second person of the batch with probability 3/4.
//   - Category 10 + intn(5); prices round(10^(6u)·100) cents; reserve =
//     initialBid + a second price; expires = dateTime + 1 + intn(max(2h,
//     1)), h the event time until 100 more auctions (1666 events) have
//     been generated (at 10 M events/s h is 0 ms, so expires = dateTime+1,
//     as in Flink's runs).
//   - dateTime of event n: BaseTime + ⌊⌊n·(10⁶/FirstEventRate)⌋/1000⌋ ms,
//     non-decreasing in n.
//   - Channels: with probability 1/2 one of Google, Facebook, Baidu, Apple
//     with its fixed URL; else "channel-i", i = intn(10000), whose URL
//     carries "&channel_id=" + abs(Integer.reverse(i)) for 9 channels in 10
//     (Java's abs: channel 1's id is −2147483648). URLs are
//     https://www.nexmark.com/p/q/r/item.htm?query=1 with 3–4 character
//     parts.
//   - Strings: names First Last from Flink's lists, e-mails
//     "x@y.com" (parts of 3–6 and 3–4 characters), credit cards
//     "dddd dddd dddd dddd", Flink's 10 cities and 6 states, item names of
//     3–19 and descriptions of 3–99 characters (letters and one space in
//     13, trimmed), and extra padding each record to an average of 200
//     (person), 500 (auction) and 100 (bid) bytes in Flink's measure
//     (Event.Size): desired ± 20 % letters, exactly as Flink's nextExtra.
//
// # The randomness
//
// Flink's generator draws from one unseeded SplittableRandom shared by all
// events, so its stream cannot be replayed; Beam's seeds a Random with the
// event id. We follow Beam: event n draws from its own splitmix64 stream
// whose state starts at mix64(uint64(n) XOR 0x016b72616d78656e), mix64
// being splitmix64's finalizer; draw k is mix64(state + k·0x9e3779b97f4a7c15).
// intn(m) is the high word of draw·m; a uniform float is draw>>11 · 2⁻⁵³.
// The draws, in order:
//
//   - Person: first name intn(11), last name intn(9), e-mail intn(16384),
//     credit card intn(65536), city intn(10), state intn(6), extra length
//     intn(2·delta), extra offset intn(2²⁰ − length + 1).
//   - Auction: hot seller intn(4) (> 0: hot; else a cold seller
//     intn(active + 10)), category intn(5), initial bid (a float), length
//     intn(max(2h, 1)), item name length intn(17) and offset, description
//     length intn(97) and offset, reserve (a float), extra length and offset.
//   - Bid: hot auction intn(2) (> 0: hot; else a cold auction
//     intn(in-flight span + 10)), hot bidder intn(4) (> 0: hot; else
//     intn(active + 10)), price (a float), hot channel intn(2) (> 0: then
//     intn(4) hot channels; else intn(10000)), extra length and offset.
//
// (The draws are Flink's, in Flink's order, but for strings: Flink draws
// every character, we draw a length and an offset.)
//
// # Deviations from Flink's generator
//
//   - Content, not shape: strings are cut from immutable pools built once
//     from a fixed seed (a 1 MiB pool of letters for extra, as Flink's own
//     REUSABLE_EXTRA_STRING; a 256 KiB pool of letters and spaces for item
//     names and descriptions; 16384 e-mail addresses; 65536 credit cards,
//     overlapping windows of a string of random four-digit groups; the 99
//     names), so that At allocates nothing. Lengths and character
//     distributions are Flink's; the number of distinct e-mails and cards
//     is bounded (Flink's are practically all distinct), and an item name
//     is a window of the pool rather than independent characters.
//   - Bidders are real person ids: Flink's BidGenerator adds
//     FIRST_PERSON_ID twice, so that its bidders never match a person (a
//     bug); ours add it once, as Beam's does.
//   - Prices use a table and a polynomial for 10^x instead of Math.pow
//     (identical after rounding but for a vanishing share of draws).
//
// Owns: the generator, its source and its CSV export. Must not touch:
// the runtime (the source is a weir.Source like any user's).
package nexmark
