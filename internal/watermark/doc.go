// Package watermark combines the watermarks of a task's input channels
// into the task's input watermark: the pure part of event time that every
// operator with more than one input channel needs (issue 12; the valve of
// Flink's StatusWatermarkValve, written as a state machine).
//
// A Valve takes events per input channel and returns what changed at its
// output:
//
//	v := watermark.NewValve(3)
//	v.Step(watermark.Advance{Ch: 0, TS: 10}) // nothing: 1 and 2 have none
//	v.Step(watermark.Advance{Ch: 1, TS: 7})
//	v.Step(watermark.Advance{Ch: 2, TS: 12}) // Emit{7}: the minimum
//	v.Step(watermark.Idle{Ch: 1})            // Emit{10}: 1 no longer holds it back
//	v.Step(watermark.Active{Ch: 1})          // nothing: 1 is behind, so not aligned
//	v.Step(watermark.Advance{Ch: 1, TS: 11}) // 1 caught up; still 10 (channel 0)
//
// The rules:
//
//   - A channel's watermark never decreases: a lower one is ignored, and
//     so is any watermark of an idle channel.
//   - The output is the minimum over the active, aligned channels, and it
//     never decreases; it is emitted only when it advances.
//   - An idle channel does not hold the output back. When it becomes
//     active again below the output it is not aligned: it is left out of
//     the minimum until its watermark reaches the output, so a returning
//     input never moves event time backwards.
//   - When every channel is idle the valve is idle (MarkIdle); the output
//     first advances to the largest watermark of any channel, as all data
//     up to it has arrived. The first channel to become active again makes
//     it active (MarkActive).
//   - An ended channel (EndOfInput) holds no watermark back: it counts as
//     active at the maximum watermark. When every channel ended, or every
//     other channel is idle, the output is MaxWatermark, which fires every
//     event-time timer: as in Flink, records that an idle channel sends
//     after it are late.
//
// Owns: these rules. Must not touch: channels, records, timers or clocks;
// the task loop feeds it the watermark and idleness events it polls and
// performs its actions (forwarding after firing timers). Pure, like the
// other cores (checked by internal/archtest).
package watermark
