package main

import "github.com/spf13/pflag"

// ineffective is a rule for a flag that has no effect in some combination
// of the other flags. A flag ignored there leaves the user believing it
// worked: `run demo --source kafka://… --rate 60000` ran unthrottled at a
// million records a second and said nothing. So a job's Configure refuses
// the flag, when the user set it in that combination, with a message that
// names the combination and what to do instead.
type ineffective struct {
	// flag is the flag's name without dashes.
	flag string
	// when reports whether the combination holds, from the parsed values.
	when bool
	// where is the combination ("with --source kafka://…"), and instead
	// why the flag has no effect there and what to do instead; the message
	// is "--FLAG has no effect WHERE: INSTEAD".
	where, instead string
}

// refuseIneffective returns a usage error for the first rule whose flag
// was set on the command line (or by its environment variable) while its
// combination holds. Flags left at their defaults are never refused: a
// default that does not apply is not the user's mistake. Call it before
// Configure sets any flag itself (fs.Set marks a flag as changed).
func refuseIneffective(fs *pflag.FlagSet, rules ...ineffective) error {
	for _, r := range rules {
		if fs.Lookup(r.flag) == nil {
			panic("refuseIneffective: no flag --" + r.flag) // a programming error
		}
		if r.when && fs.Changed(r.flag) {
			return usagef("--%s has no effect %s: %s", r.flag, r.where, r.instead)
		}
	}
	return nil
}
