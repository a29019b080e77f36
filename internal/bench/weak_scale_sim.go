package bench

// simulateScale is weak.SuccessAtScale's simulation of the scale
// section's parameters, once internal/weak has it; nil, nil before.
func simulateScale(o weakOptions) (global, perTask *float64) { return nil, nil }
