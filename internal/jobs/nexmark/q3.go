package nexmark

import (
	"context"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q3 is local item suggestion: who sells in category 10 from Oregon, Idaho
// or California, and which auctions. A regular inner join of two
// append-only inputs, so its output is append-only.
//
//	SELECT P.name, P.city, P.state, A.id
//	FROM auction AS A INNER JOIN person AS P on A.seller = P.id
//	WHERE A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
//
// Both filters are applied before the join (as Flink's planner pushes
// them down), which keys both sides by the person id. A qualifying person
// is kept in keyed state forever (later auctions of theirs join it); an
// auction whose seller has not arrived waits, as its id alone, in a list
// until the seller does. As in Flink's regular join nothing expires: an
// auction of a seller who never qualifies waits forever, and the join has
// no time condition that would allow event-time cleanup.
func init() {
	register(&Query{
		Name:      "q3",
		Columns:   []string{"name", "city", "state", "id"},
		Stateful:  true,
		Build:     buildQ3,
		Reference: q3Ref,
	})
}

type q3Row struct {
	Name, City, State string
	ID                int64
}

func (r q3Row) AppendCSV(dst []byte) []byte {
	dst = nexmark.AppendField(dst, r.Name)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, r.City)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, r.State)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.ID, 10)
}

// q3Auction is what the join needs of an auction of category 10.
type q3Auction struct{ ID, Seller int64 }

// q3Person is a qualifying person: what the join outputs of them and the
// key. In state only Name, City and State are kept (the key is the id).
type q3Person struct {
	ID                int64
	Name, City, State string
}

// q3Seller is the state of a qualifying person.
type q3Seller struct{ Name, City, State string }

// q3State tells whether a person's state is one q3 selects.
func q3State(s string) bool { return s == "OR" || s == "ID" || s == "CA" }

func buildQ3(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
	auctions := weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[q3Auction]) error {
		if e.Kind == nexmark.KindAuction && e.Auction.Category == 10 {
			out.Collect(q3Auction{e.Auction.ID, e.Auction.Seller})
		}
		return nil
	}).Name("q3-auctions").UID("q3-auctions")
	people := weir.FlatMap(events, func(e nexmark.Event, out *weir.Collector[q3Person]) error {
		if e.Kind == nexmark.KindPerson && q3State(e.Person.State) {
			out.Collect(q3Person{e.Person.ID, e.Person.Name, e.Person.City, e.Person.State})
		}
		return nil
	}).Name("q3-people").UID("q3-people")
	joined := weir.CoProcess(weir.ConnectKeyed(
		weir.KeyBy(auctions, func(a q3Auction) int64 { return a.Seller }),
		weir.KeyBy(people, func(p q3Person) int64 { return p.ID }),
	), func() weir.KeyedCoProcessFunction[int64, q3Auction, q3Person, q3Row] { return &q3Join{} }).Name("q3-join").UID("q3-join")
	Sink(joined, p)
	return nil
}

// q3Join is the join, keyed by the person id.
type q3Join struct {
	seller  weir.ValueState[q3Seller] // the qualifying person, once arrived
	waiting weir.ListState[int64]     // ids of auctions that came first
}

func (j *q3Join) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if j.seller, err = weir.GetValueState[q3Seller](kc, "seller"); err != nil {
		return err
	}
	j.waiting, err = weir.GetListState[int64](kc, "waiting")
	return err
}

// ProcessElement1 takes an auction of category 10: it joins its seller
// or waits for them.
func (j *q3Join) ProcessElement1(a q3Auction, _ *weir.KeyedContext[int64], out *weir.Collector[q3Row]) error {
	s, ok := j.seller.Value()
	if !ok {
		j.waiting.Add(a.ID)
		return nil
	}
	out.Collect(q3Row{s.Name, s.City, s.State, a.ID})
	return nil
}

// ProcessElement2 takes a qualifying person (each person arrives once):
// it joins the auctions that came first and stays for later ones.
func (j *q3Join) ProcessElement2(p q3Person, _ *weir.KeyedContext[int64], out *weir.Collector[q3Row]) error {
	j.seller.Update(q3Seller{p.Name, p.City, p.State})
	if ids := j.waiting.Get(); ids != nil {
		for _, id := range ids {
			out.Collect(q3Row{p.Name, p.City, p.State, id})
		}
		j.waiting.Clear()
	}
	return nil
}
