package inspect

import "sort"

// totals sums the operators' reports and the channel state.
func totals(ops []Operator, chans []ChannelState, shared []SharedFile) Totals {
	t := Totals{Operators: len(ops), KeyedStates: []OperatorKeyedState{}, OperatorStates: []OperatorListState{}}
	t.SharedFiles = len(shared)
	for _, f := range shared {
		t.SharedBytes += f.Size
	}
	for _, cs := range chans {
		t.ChannelStateFiles++
		t.ChannelStateBytes += cs.Size
		for _, in := range cs.Inputs {
			t.InFlightRecords += in.Records
		}
	}
	for _, op := range ops {
		keyedStates := map[string]*OperatorKeyedState{}
		lists := map[string]*OperatorListState{}
		for _, s := range op.Subtasks {
			t.Subtasks++
			if inc := s.Incremental; inc != nil {
				t.Stores++
				t.Timers += inc.Timers
				t.EventTimers += inc.EventTimers
				t.FullBytes += inc.FullSize
				t.UploadedBytes += inc.UploadedSize
				for _, p := range inc.Private {
					t.PrivateFiles++
					t.PrivateBytes += p.Size
				}
				if inc.TimersFile != "" {
					t.PrivateFiles++
					t.PrivateBytes += inc.TimersSize
				}
			}
			if k := s.Keyed; k != nil {
				t.KeyedFiles++
				t.KeyedBytes += k.Size
				t.KeyGroups += k.Blocks
				t.Timers += k.Timers
				t.EventTimers += k.EventTimers
				for _, st := range k.States {
					sum := keyedStates[st.Name]
					if sum == nil {
						sum = &OperatorKeyedState{Operator: op.UID, KeyedState: KeyedState{Name: st.Name, Kind: st.Kind, TTL: st.TTL}}
						keyedStates[st.Name] = sum
					}
					sum.Entries += st.Entries
					sum.Bytes += st.Bytes
					sum.KeyGroups += st.KeyGroups
				}
			}
			for _, ls := range s.OperatorState {
				// A split and a union list may share a name; the
				// metadata key tells them apart and sorts like
				// listStates does.
				key := ls.Name + "\x00"
				if ls.Union {
					key = ls.Name + "\x01"
				}
				sum := lists[key]
				if sum == nil {
					sum = &OperatorListState{Operator: op.UID, Name: ls.Name, Union: ls.Union}
					lists[key] = sum
				}
				sum.Elements += ls.Elements
				sum.Bytes += ls.Bytes
			}
		}
		t.KeyedStates = append(t.KeyedStates, sortedValues(keyedStates)...)
		t.OperatorStates = append(t.OperatorStates, sortedValues(lists)...)
	}
	return t
}

// sortedValues returns m's values in key order.
func sortedValues[V any](m map[string]*V) []V {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]V, 0, len(m))
	for _, n := range names {
		out = append(out, *m[n])
	}
	return out
}
