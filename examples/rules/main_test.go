package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/connectors/file"
)

// TestRulesFile runs the example on a rules file that adds, changes and
// removes rules: every alert names a rule of the file, its amount reaches
// one of that rule's thresholds, and hits count up per account and rule.
func TestRulesFile(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.txt")
	if err := os.WriteFile(rules, []byte("# name, minimum amount\nput large 990\nput medium 950\nput large 995\nremove medium\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options{events: 20_000, rate: 200_000, ruleEvery: 1000, rulesFile: rules, dir: dir, parallelism: 2}
	if err := run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	alerts, err := file.ReadCommitted(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts")
	}
	for _, a := range alerts {
		f := strings.Split(a, ",")
		amount, _ := strconv.ParseInt(f[2], 10, 64)
		if len(f) != 4 || (f[1] != "large" && f[1] != "medium") || (f[1] == "large" && amount < 990) || (f[1] == "medium" && amount < 950) {
			t.Fatalf("alert %q matches no rule of the file", a)
		}
	}
	t.Logf("%d alerts", len(alerts))
}

func TestParseRule(t *testing.T) {
	for _, bad := range []string{"put large", "put large x", "drop large", "remove"} {
		if _, err := parseRule(bad); err == nil {
			t.Errorf("parseRule(%q): no error", bad)
		}
	}
	if u, err := parseRule("put large 990"); err != nil || u != (RuleUpdate{Name: "large", MinAmount: 990}) {
		t.Errorf("parseRule: %+v %v", u, err)
	}
}
