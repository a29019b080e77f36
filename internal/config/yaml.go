package config

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// LoadYAML reads a YAML configuration file and sets every key in it. Keys
// may be written flat ("execution.checkpointing.interval: 10 s"), nested
// (maps whose keys are joined with dots) or mixed, as Flink's config.yaml
// accepts. The file is applied only if every entry in it is valid, so a bad
// file leaves c unchanged. Errors name the file and, where known, the line.
func (c *Config) LoadYAML(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("load config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("load config %s: line %d: want a map of keys to values at the top level", path, root.Line)
	}
	type entry struct{ key, value string }
	var staged []entry
	firstLine := map[string]int{}
	var walk func(prefix string, m *yaml.Node) error
	walk = func(prefix string, m *yaml.Node) error {
		for i := 0; i+1 < len(m.Content); i += 2 {
			kn, vn := m.Content[i], m.Content[i+1]
			key := kn.Value
			if prefix != "" {
				key = prefix + "." + key
			}
			if vn.Kind == yaml.AliasNode {
				vn = vn.Alias
			}
			switch {
			case vn.Kind == yaml.MappingNode:
				if err := walk(key, vn); err != nil {
					return err
				}
				continue
			case vn.Kind != yaml.ScalarNode:
				return fmt.Errorf("line %d: %s: want a single value, not a list", kn.Line, key)
			case vn.Tag == "!!null":
				return fmt.Errorf("line %d: %s has no value; give one or remove the line", kn.Line, key)
			}
			ck, cv, err := c.check(key, vn.Value)
			if err != nil {
				return fmt.Errorf("line %d: %w", kn.Line, err)
			}
			if l, dup := firstLine[ck]; dup {
				return fmt.Errorf("line %d: %s is set again (first set at line %d); keep one", kn.Line, ck, l)
			}
			firstLine[ck] = kn.Line
			staged = append(staged, entry{ck, cv})
		}
		return nil
	}
	if err := walk("", root); err != nil {
		return fmt.Errorf("load config %s: %w", path, err)
	}
	for _, e := range staged {
		c.values[e.key] = e.value
	}
	return nil
}
