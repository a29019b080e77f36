package nexmark

import (
	"context"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/connectors/nexmark"
)

// Sink ends a query: its rows go to the exactly-once file sink in p.Out,
// one CSV line each, or, with no p.Out, to a sink that drops them
// unformatted (Flink's benchmark uses the blackhole connector).
func Sink[T Row](s weir.Stream[T], p Params) {
	if p.Out == "" {
		weir.SinkTo(s, func() weir.Sink[T] { return discard[T]{} }).Name("discard").UID("sink")
		return
	}
	weir.SinkToTransactional(s, file.ExactlyOnce(p.Out, func(v T, dst []byte) []byte { return v.AppendCSV(dst) })).Name("files").UID("files")
}

type discard[T any] struct{}

func (discard[T]) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (discard[T]) Write(context.Context, []T) error                 { return nil }
func (discard[T]) Flush(context.Context) error                      { return nil }
func (discard[T]) Close(context.Context) error                      { return nil }

// Bids, Auctions and People split the event stream into Flink's three
// views (CREATE VIEW bid AS SELECT … WHERE event_type = 2, …).
func Bids(events weir.Stream[nexmark.Event]) weir.Stream[nexmark.Bid] {
	return weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[nexmark.Bid]) error {
		if e.Kind == nexmark.KindBid {
			out.Collect(e.Bid)
		}
		return nil
	}).Name("bids").UID("bids")
}

// Auctions is the auction view.
func Auctions(events weir.Stream[nexmark.Event]) weir.Stream[nexmark.Auction] {
	return weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[nexmark.Auction]) error {
		if e.Kind == nexmark.KindAuction {
			out.Collect(e.Auction)
		}
		return nil
	}).Name("auctions").UID("auctions")
}

// People is the person view.
func People(events weir.Stream[nexmark.Event]) weir.Stream[nexmark.Person] {
	return weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[nexmark.Person]) error {
		if e.Kind == nexmark.KindPerson {
			out.Collect(e.Person)
		}
		return nil
	}).Name("people").UID("people")
}
