package config

// Option describes one configuration key: what it means, its default, how
// its values are parsed and what else they must satisfy.
type Option struct {
	// Key is the canonical key, in Flink's spelling where Flink has the
	// option.
	Key string
	// Default is the value in effect when the key is not set, written as a
	// user would write it. An empty default of a KindString option means
	// "not set" (Flink's "(none)").
	Default string
	// Description says what the option does, for help output.
	Description string
	// Kind decides how values are parsed and which getter reads them.
	Kind Kind
	// Enum lists the canonical values of a KindEnum option.
	Enum []string
	// ValueAliases maps other accepted spellings (lower case) of a KindEnum
	// value to its canonical spelling, e.g. Flink's "hashmap" to "heap".
	ValueAliases map[string]string
	// FallbackKeys are other spellings of Key that are accepted and stored
	// under Key: the names older or newer Flink releases use for the same
	// option, so a Flink configuration file loads unchanged.
	FallbackKeys []string
	// Validate, if set, checks a value after it has been parsed into its
	// canonical form; its error says what the value must be.
	Validate func(canonical string) error
}
