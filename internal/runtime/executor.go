package runtime

// Prepare validates the configuration and fills its defaults, as Execute
// does first. Layers that hand a job to a cluster instead of running it
// here (the application-mode roles) call it so that every role sees the
// same filled configuration. It is idempotent.
func (c *JobConfig) Prepare() error { return c.fill() }
