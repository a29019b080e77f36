package config

// Lookup returns the effective value of key (set or default) in canonical
// form and its kind, or an error wrapping ErrUnknownKey (with a spelling
// suggestion) for a key weir does not know. Unlike the typed getters it
// never panics, so it serves keys that come from users.
func (c *Config) Lookup(key string) (value string, kind Kind, err error) {
	k, err := c.resolve(key)
	if err != nil {
		return "", 0, err
	}
	if v, ok := c.values[k]; ok {
		return v, c.opts[k].Kind, nil
	}
	return c.defaults[k], c.opts[k].Kind, nil
}
