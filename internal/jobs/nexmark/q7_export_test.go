package nexmark

import "github.com/weirstream/weir/connectors/nexmark"

// Q7Events is q7's reference over the given events (for q7_test.go).
func Q7Events(events []nexmark.Event) []string {
	out := &RefOut{Collect: true}
	q7Loop(eventList(events), int64(len(events)), out)
	return out.Lines
}

type eventList []nexmark.Event

func (l eventList) At(i int64, e *nexmark.Event) { *e = l[i] }
