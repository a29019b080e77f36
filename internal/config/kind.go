package config

// Kind is the type of an option's value; it decides how values are parsed
// and which typed getter reads them.
type Kind int

const (
	// KindString is free text, read with Config.String.
	KindString Kind = iota
	// KindDuration is a Flink-style duration (see ParseDuration), read with
	// Config.Duration.
	KindDuration
	// KindInt is a decimal integer, read with Config.Int.
	KindInt
	// KindBool is "true" or "false" (any case), read with Config.Bool.
	KindBool
	// KindEnum is one of Option.Enum (any case, or an Option.ValueAliases
	// key), stored in its canonical spelling and read with Config.String.
	KindEnum
	// KindFloat is a decimal number, read with Config.Float.
	KindFloat
)

// String names the kind the way error messages describe the expected form.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindDuration:
		return "duration"
	case KindInt:
		return "integer"
	case KindBool:
		return "boolean"
	case KindEnum:
		return "enum"
	case KindFloat:
		return "number"
	}
	return "unknown kind"
}
